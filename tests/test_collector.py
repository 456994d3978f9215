"""Fewer garbage collections while a call runs (sparkext.collector): the young
generation's threshold is raised for the call and comes back after it, a program's own
change made meanwhile is kept, and collection that is off stays off."""

from __future__ import annotations

import gc
import os
import threading

import pytest

from sparkext import Rule
from sparkext.collector import CALL_THRESHOLD, fewer_collections
from sparkext.plan import LogicalPlan
from tests.conftest import rules_enabled


@pytest.fixture
def thresholds():
    saved = gc.get_threshold()
    yield saved
    gc.set_threshold(*saved)


def test_a_call_in_a_real_session_runs_with_the_raised_threshold(spark, thresholds):
    seen: list[tuple[int, ...]] = []

    def looking(plan: LogicalPlan) -> LogicalPlan:
        seen.append(gc.get_threshold())
        return plan

    gc.set_threshold(700, 10, 10)
    with rules_enabled(spark, [Rule("looking", looking)]):
        spark.range(3).filter("id > 0").collect()
    assert seen and all(t == (CALL_THRESHOLD, 10, 10) for t in seen)
    assert gc.get_threshold() == (700, 10, 10)


def test_the_thresholds_come_back_after_the_last_of_nested_and_concurrent_calls(thresholds):
    gc.set_threshold(500, 7, 9)
    inside = threading.Event()
    release = threading.Event()
    during: list[tuple[int, ...]] = []

    def other_call():
        with fewer_collections():
            inside.set()
            release.wait(10)

    t = threading.Thread(target=other_call)
    with fewer_collections():
        t.start()
        assert inside.wait(10)
        with fewer_collections():
            during.append(gc.get_threshold())
        during.append(gc.get_threshold())
    during.append(gc.get_threshold())  # the other call still runs
    release.set()
    t.join(10)
    assert during == [(CALL_THRESHOLD, 7, 9)] * 3
    assert gc.get_threshold() == (500, 7, 9)


def test_a_threshold_the_program_sets_during_a_call_is_kept(thresholds):
    gc.set_threshold(700, 10, 10)
    with fewer_collections():
        gc.set_threshold(2000, 5, 5)
    assert gc.get_threshold() == (2000, 5, 5)


def test_older_generations_the_program_sets_during_a_call_are_kept(thresholds):
    gc.set_threshold(700, 10, 10)
    with fewer_collections():
        young, *_ = gc.get_threshold()
        gc.set_threshold(young, 20, 30)  # read, modify, write
    assert gc.get_threshold() == (700, 20, 30)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_child_forked_during_a_call_has_the_process_thresholds(thresholds):
    gc.set_threshold(700, 10, 10)
    with fewer_collections():
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: report its thresholds, and whether a call there restores
            os.close(read)
            first = gc.get_threshold()
            with fewer_collections():
                during = gc.get_threshold()
            os.write(write, repr((first, during, gc.get_threshold())).encode())
            os._exit(0)
        os.close(write)
        with os.fdopen(read) as f:
            reported = f.read()
        os.waitpid(pid, 0)
    assert reported == repr(((700, 10, 10), (CALL_THRESHOLD, 10, 10), (700, 10, 10)))


@pytest.mark.parametrize("young", [0, 5 * CALL_THRESHOLD])
def test_collection_off_or_already_rare_is_left_alone(thresholds, young):
    gc.set_threshold(young, 10, 10)
    with fewer_collections():
        assert gc.get_threshold() == (young, 10, 10)
    assert gc.get_threshold() == (young, 10, 10)


def test_an_exception_in_the_block_still_restores(thresholds):
    gc.set_threshold(700, 10, 10)
    with pytest.raises(RuntimeError), fewer_collections():
        raise RuntimeError("a rule failed")
    assert gc.get_threshold() == (700, 10, 10)
