"""Threads of the Python side: starting them, and running a call on a deep stack.

Deep plans: a DataFrame built by ``withColumn`` in a loop nests its expressions hundreds
of levels deep once Catalyst collapses the projections, and decoding, rules and encoding
all recurse per level. Python's default limit (1000 frames) stops near 250 levels. The
bridge answers a call that recursed too deep again, from the start, through
:func:`run_on_deep_stack`: on a thread of its own with a :data:`DEEP_STACK_BYTES` stack
and the interpreter's recursion limit raised to :data:`DEEP_RECURSION_LIMIT` while it
runs, restored when the last such call ends. The limit is per interpreter, so every other
thread has it too meanwhile: it is kept where a thread with the usual 8 MiB stack still
gets a RecursionError rather than a crash (measured on 3.11: such threads crash between
10 000 and 20 000 frames of recursion through C calls). 10 000 frames are enough for
about 1 000 levels, deeper than Spark itself can plan: its analyzer overflows the JVM
stack first (290 ``withColumn`` steps).

``threading.stack_size`` is process-wide, so every thread sparkext starts goes through
:func:`start_thread`, which never starts one while a deep-stack thread is being started
with its big stack.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import TypeVar

R = TypeVar("R")

#: The stack of the thread that answers a call too deep for the channel's thread (reserved
#: address space; the pages are only touched as deep as the plan goes).
DEEP_STACK_BYTES = 256 * 1024 * 1024
#: The recursion limit while such a call runs (see the module docstring for why not more).
DEEP_RECURSION_LIMIT = 10_000

# Held while a thread starts: the stack size in force then is the one it gets.
_starting = threading.Lock()
# Guards the count of deep calls running and the recursion limit they replaced.
_deep_lock = threading.Lock()
_deep_calls = 0
_saved_limit = 0


class NoThread(RuntimeError):
    """No thread could be started for a deep call (``__cause__`` says why)."""


class ThreadLost(RuntimeError):
    """The deep thread ended without a result or an exception (reporting failed too)."""


def start_thread(thread: threading.Thread) -> None:
    """Starts ``thread`` with the usual stack size."""
    with _starting:
        thread.start()


def run_on_deep_stack(fn: Callable[[], R]) -> R:
    """``fn()``, run on a new thread with a big stack and a raised recursion limit; its
    exception, if any, is raised here."""
    global _deep_calls, _saved_limit
    box: list = []

    def target() -> None:
        try:
            box.append((True, fn()))
        except BaseException as e:  # noqa: BLE001 - raised again in the caller
            box.append((False, e))

    with _deep_lock:
        if _deep_calls == 0:
            _saved_limit = sys.getrecursionlimit()
            sys.setrecursionlimit(max(_saved_limit, DEEP_RECURSION_LIMIT))
        _deep_calls += 1
    try:
        try:
            with _starting:
                previous = threading.stack_size(DEEP_STACK_BYTES)
                try:
                    thread = threading.Thread(target=target, name="sparkext-deep-plan",
                                              daemon=True)
                    thread.start()
                finally:
                    threading.stack_size(previous)
        except Exception as e:
            raise NoThread(str(e)) from e
        thread.join()
    finally:
        with _deep_lock:
            _deep_calls -= 1
            if _deep_calls == 0 and sys.getrecursionlimit() == DEEP_RECURSION_LIMIT:
                sys.setrecursionlimit(_saved_limit)
    if not box:
        raise ThreadLost("the deep-plan thread failed")
    ok, result = box[0]
    if not ok:
        raise result
    return result
