"""The per-call context (sparkext.context): what a request's header says holds for that call
only, on the thread that answers it, and leaks into no other call.

Pure Python (the bridge answers hand-written requests); the header as the JVM writes it is
covered by tests/test_ordering_spark.py and tests/test_roundtrip.py.
"""

from __future__ import annotations

import json
import threading

from sparkext import timezones
from sparkext.bridge import RuleBridge
from sparkext.context import CallContext, current, scoped
from sparkext.optimizer import Batch, Once, Rule, RuleExecutor
from tests.test_mirror import DOC, wire_text


def _bridge(seen: list) -> RuleBridge:
    def look(plan):
        seen.append((current(), timezones.keeps_order("Test/Leak", "date")))
        return plan

    return RuleBridge({"once": RuleExecutor([Batch("b", Once(), (Rule("look", look),))])})


def _call(bridge: RuleBridge, **header) -> str:
    return bridge.apply(wire_text({**json.loads(json.dumps(DOC)), **header}))


def test_a_rule_sees_its_own_call_s_header():
    seen: list = []
    answer = _call(_bridge(seen), id=7, tz="Test/Leak", tz_breaks=[], excluded=["x"],
                   catalyst_excluded=["ColumnPruning"])
    assert json.loads(answer)["unchanged"] is True  # (with the rule's figures: "stats")
    ctx, keeps = seen[0]
    assert ctx == CallContext(call_id=7, position="once", time_zone="Test/Leak",
                              excluded=frozenset({"x"}),
                              catalyst_excluded=frozenset({"ColumnPruning"}))
    assert keeps  # the header says the zone reverses nothing


def test_what_one_call_says_of_its_zone_does_not_outlive_it():
    seen: list = []
    bridge = _bridge(seen)
    _call(bridge, tz="Test/Leak", tz_breaks=[])
    # After the call, and in a call from a session in another zone, the zone is unknown:
    # assumed to reverse everything.
    assert current() is None
    assert not timezones.keeps_order("Test/Leak", "date")
    _call(bridge, tz="Europe/Paris", tz_breaks=["date"])
    assert seen[1][0].time_zone == "Europe/Paris" and seen[1][1] is False
    _call(bridge, tz="Test/Leak", tz_breaks=["date"])
    assert seen[2][1] is False


def test_concurrent_calls_each_see_their_own_context():
    barrier = threading.Barrier(2)
    seen: dict = {}

    def run(zone: str, reverses: frozenset):
        with scoped(CallContext(time_zone=zone, time_zone_reverses=reverses)):
            barrier.wait()  # both contexts are set before either reads
            seen[zone] = timezones.keeps_order(zone, "date")

    threads = [threading.Thread(target=run, args=("Test/A", frozenset())),
               threading.Thread(target=run, args=("Test/B", frozenset({"date"})))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == {"Test/A": True, "Test/B": False}
