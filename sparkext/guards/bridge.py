"""The Python end of a guard call: the JVM's planner strategy (``Guards.scala``) sends one
planning unit, the guards judge it, the answer carries each guard's decision.

The request is an optimizer request (docs/wire-format.md) at position ``guard``: the
unit's plan, then in the body ``subqueries`` (their plans, in the same tables) and
``joins`` (``[handle, left bytes, right bytes]``: Catalyst's estimates of each join's
inputs). The answer::

    {"guards": [[name, decision, reason, nanos], ...]}

one entry per guard, in order, ``decision`` being ``allow``, ``refuse``, ``warn`` (a guard in
warn mode that would refuse) or ``error`` (the guard raised: the JVM refuses the query, as
guards fail closed). A request that cannot be decoded is answered with the error document
(:mod:`sparkext.errors`), which the JVM refuses the query for too.
"""

from __future__ import annotations

import json
import time
import traceback
from collections.abc import Iterable
from dataclasses import dataclass

from sparkext._tree import mirror_spec
from sparkext.codec import Decoded
from sparkext.collector import fewer_collections
from sparkext.context import scoped
from sparkext.errors import error_document
from sparkext.guards.guard import REFUSE, Guard, Query, Refused
from sparkext.threads import run_on_deep_stack
from sparkext.wire import handshake

ALLOW, REFUSED, WARNED, ERROR = "allow", "refuse", "warn", "error"


class _TooDeep(Exception):
    """A guard (or the decoding it caused) recursed past the thread's limit."""


class GuardBridge:
    """Answers the guard calls of one guard worker: every guard judges every unit."""

    def __init__(self, guards: Iterable[Guard]):
        self.guards = tuple(guards)

    def cancel(self, payload: str) -> str:
        """The JVM never cancels a guard call (it stops the worker instead: a guard may be
        stuck where no flag is read); answered as a call that has ended."""
        return json.dumps({"running": ""})

    def apply(self, payload: str) -> str:
        with fewer_collections():
            try:
                return self._answer(payload, deep=False)
            except _TooDeep:
                try:
                    return run_on_deep_stack(lambda: self._answer(payload, deep=True))
                except BaseException as e:  # noqa: BLE001 - the JVM refuses the query
                    return error_document("executor", None,
                                          f"could not judge a deep plan: {e}", e)

    def _answer(self, payload: str, deep: bool) -> str:
        try:
            decoded = Decoded.from_json(payload)
            body = decoded.body
            query = Query(decoded.plan, [decoded.node(j) for j in body.get("subqueries", ())],
                          {h: (left, right) for h, left, right in body.get("joins", ())},
                          decoded.handle_of)
        except RecursionError as e:
            if not deep:
                raise _TooDeep from e
            return error_document("decode", None, f"could not decode the plan: {e}", e)
        except Exception as e:  # noqa: BLE001 - answered, the JVM refuses the query
            return error_document("decode", None, f"could not decode the plan: {e}", e)
        decisions = []
        with scoped(decoded.context):
            for g in self.guards:
                decision, reason, nanos = self._judge(g, query, deep)
                decisions.append([g.name, decision, reason, nanos])
        return json.dumps({"guards": decisions}, separators=(",", ":"))

    @staticmethod
    def _judge(g: Guard, query: Query, deep: bool) -> tuple[str, str, int]:
        start = time.perf_counter_ns()
        try:
            g(query)
        except Refused as r:
            return (REFUSED if g.mode == REFUSE else WARNED), r.reason, _since(start)
        except RecursionError as e:
            if not deep:
                raise _TooDeep from e
            return ERROR, _raised(e) + " (the plan may be very deep)", _since(start)
        except Exception as e:  # noqa: BLE001 - a guard that raises refuses (fail closed)
            return ERROR, _raised(e), _since(start)
        return ALLOW, "", _since(start)


def _since(start: int) -> int:
    return time.perf_counter_ns() - start


def _raised(e: BaseException) -> str:
    """``ValueError: message (at file.py:12)``: what a guard raised and where."""
    tb = traceback.extract_tb(e.__traceback__)
    where = f" (at {tb[-1].filename}:{tb[-1].lineno})" if tb else ""
    return f"{type(e).__name__}: {e}{where}"


@dataclass(frozen=True)
class GuardRegistration:
    """A guard bridge and the registration document that names it to the JVM."""

    bridge: GuardBridge
    #: ``{"handshake", "channel", "rules": [], "guards", "mirror"}``
    spec: dict


def guard_registration(guards: Iterable[Guard], channel, spark_version: str | None = None
                       ) -> GuardRegistration:
    """Serves ``guards`` on ``channel`` under a key of their own; the document carries the
    channel's secret (the worker leaves it out: the JVM has it)."""
    guards = tuple(guards)
    seen: dict[str, Guard] = {}
    for g in guards:
        if seen.setdefault(g.name, g) is not g:
            raise ValueError(f"two guards are named {g.name!r}: guard names must be unique "
                             "(refusals, metrics and the audit log name them)")
    bridge = GuardBridge(guards)
    spec = {
        "handshake": handshake(),
        "channel": channel.address(channel.add(bridge)),
        "rules": [],
        "guards": [{"name": g.name, "needs": list(g.needs), "mode": g.mode} for g in guards],
        "mirror": mirror_spec(spark_version),
    }
    return GuardRegistration(bridge, spec)
