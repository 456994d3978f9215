"""Fewer garbage collections while a call is answered.

A call builds the mirror of a plan, thousands of small objects, and drops it once it has
answered; nearly all of it is then freed by reference counting. With the collector's
default threshold (a young collection every 700 allocations), decoding a large plan runs
several young collections, each traversing objects that are about to be freed anyway. In
the optimizer, the Python side of a call took about a fifth less time with those
collections deferred (docs/performance.md, "Second round").

While at least one call runs, the young generation's threshold is raised to
:data:`CALL_THRESHOLD` allocations. Collection is not switched off: a rule that loops
making cyclic garbage is still collected every :data:`CALL_THRESHOLD` allocations, so its
memory stays bounded until the JVM's timeout cancels it. The threshold is the process's:
every thread runs with it while a call runs. When the last running call ends, the young
generation's own threshold comes back, unless the program set another one meanwhile (that
one is kept, as are the older generations' thresholds it set). A threshold of 0
(collection off) or one already this high is left alone. A child forked during a call
starts with the process's own thresholds.
"""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

#: The young generation's threshold while calls run (allocations between collections).
CALL_THRESHOLD = 100_000

_lock = threading.Lock()
_running = 0
#: the thresholds to restore when the last call ends (None: nothing was changed)
_saved: tuple[int, ...] | None = None


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Raises the young generation's threshold for the duration of the block (nested and
    concurrent blocks share one change)."""
    global _running, _saved
    with _lock:
        if _running == 0:
            current = gc.get_threshold()
            if 0 < current[0] < CALL_THRESHOLD:
                _saved = current
                gc.set_threshold(CALL_THRESHOLD, *current[1:])
        _running += 1
    try:
        yield
    finally:
        with _lock:
            _running -= 1
            if _running == 0:
                _restore()


def _restore() -> None:
    global _saved
    if _saved is not None:
        current = gc.get_threshold()
        if current[0] == CALL_THRESHOLD:  # (else the program set its own meanwhile)
            gc.set_threshold(_saved[0], *current[1:])
        _saved = None


def _after_fork_in_child() -> None:
    # The calls running in the parent do not run here: nothing will end them.
    global _lock, _running
    _lock = threading.Lock()
    _running = 0
    _restore()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
