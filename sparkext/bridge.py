"""The Python end of the one call per optimizer invocation.

The JVM sends one request document over the channel (:mod:`sparkext.channel`), which
hands it to :meth:`RuleBridge.apply`; the bridge decodes it, runs the rule batches
registered for that position, and answers with the rewritten plan,
``{"unchanged": true}``, or an error the JVM turns into one warning (or, in strict mode,
an exception). Nothing raised here reaches the user's query. Every answer from an
executor carries its rules' figures (``stats``, docs/wire-format.md "Answers"), which
the JVM adds to the session's per-rule metrics and to the query's explain.

A call that recurses too deep for the channel's thread is answered again, from the
start, on a deep stack (:mod:`sparkext.threads` says how and why).

:func:`registration` builds a bridge and what the JVM needs to call it (the handshake, the
channel, the rules, the mirror) from rule batches. It is the one way rules get registered:
``sparkext.enable`` sends the result through py4j, a rule worker started by the JVM
(:mod:`sparkext.worker`) on its stdout; the calls then arrive over a
:class:`~sparkext.channel.Channel` either way, and are answered here.
"""

from __future__ import annotations

import inspect
import json
import sys
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from sparkext import catalyst_names as names
from sparkext._tree import mirror_spec
from sparkext.codec import AnswerEncoder, Decoded
from sparkext.collector import fewer_collections
from sparkext.context import scoped
from sparkext.errors import error_document
from sparkext.optimizer import (
    POSITIONS,
    Batch,
    Cancelled,
    Result,
    Rule,
    RuleError,
    RuleExecutor,
    RuleStats,
)
from sparkext.threads import NoThread, ThreadLost, run_on_deep_stack
from sparkext.wire import UNCHANGED_ANSWER, handshake, unchanged_answer


class _TooDeep(Exception):
    """The call recursed past the recursion limit of the thread it ran on."""


def _recursed(e: BaseException) -> bool:
    return isinstance(e, RecursionError) or isinstance(getattr(e, "cause", None), RecursionError)


class _Call:
    """One call in progress: the rule it runs, and whether the JVM abandoned it."""

    __slots__ = ("rule", "cancelled")

    def __init__(self):
        self.rule = ""
        self.cancelled = threading.Event()


class RuleBridge:
    """Answers the calls of one ``sparkext.enable``.

    :meth:`apply` answers the requests that arrive over the channel, :meth:`cancel` the
    JVM's cancels of calls it abandoned. py4j carries the object itself to the JVM as an
    ``io.sparkext.RuleBridge``: the JVM's proxy keeps it alive.
    """

    def __init__(self, executors: dict[str, RuleExecutor]):
        self.executors = executors
        #: a rule's figures travel under its index in the registration's rule list
        self.rule_index = {r.name: i for i, r in enumerate(all_rules(executors))}
        self._calls: dict[int | None, _Call] = {}
        self._lock = threading.Lock()
        #: called with each call's :class:`~sparkext.optimizer.Result`, its changes traced,
        #: before the answer is sent (``sparkext.explain`` reads the calls of its query so)
        self.observer: Callable[[Result], None] | None = None

    def cancel(self, payload: str) -> str:
        """Answers ``{"cancel": id}``: the call stops at its next rule boundary. The answer,
        ``{"running": name}``, names the rule it is running ("" when it has ended, or
        when it runs none)."""
        try:
            call_id = json.loads(payload)["cancel"]
        except Exception as e:  # noqa: BLE001 - a bad request is answered, never raised
            return error_document("decode", None, f"not a cancel request: {e}", e)
        with self._lock:
            call = self._calls.get(call_id)
        if call is None:
            return json.dumps({"running": ""})
        call.cancelled.set()
        return json.dumps({"running": call.rule})

    def running_calls(self) -> int:
        """Calls in progress, cancelled or not (for tests: a cancelled call ends soon)."""
        with self._lock:
            return len(self._calls)

    def apply(self, payload: str) -> str:
        with fewer_collections():
            try:
                return self._answer(payload, deep=False)
            except _TooDeep:
                return self._answer_deep(payload)

    def _answer_deep(self, payload: str) -> str:
        try:
            return run_on_deep_stack(lambda: self._answer(payload, deep=True))
        except NoThread as e:  # the plan stays as it was
            return error_document("executor", None,
                                  f"could not start a thread for a deep plan: {e}", e.__cause__)
        except ThreadLost as e:  # reporting the failure failed too (MemoryError, ...)
            return error_document("executor", None, str(e))
        except BaseException as e:  # noqa: BLE001 - reported to the JVM
            return error_document("executor", None, f"failed on the deep-plan thread: {e}", e)

    def _answer(self, payload: str, deep: bool) -> str:
        def failed(kind: str, rule: str | None, message: str, e: BaseException) -> str:
            if _recursed(e):
                if not deep:
                    raise _TooDeep from e
                message += f" (even with a recursion limit of {sys.getrecursionlimit()})"
            return error_document(kind, rule, message, e)

        try:
            decoded = Decoded.from_json(payload)
        except Exception as e:  # noqa: BLE001 - a bad request is answered, never raised
            return failed("decode", None, f"could not decode the plan: {e}", e)
        executor = self.executors.get(decoded.position or "")  # (none without a position)
        if executor is None:
            return UNCHANGED_ANSWER
        call_id = decoded.call_id
        call = _Call()
        with self._lock:
            self._calls[call_id] = call

        def on_rule(name: str) -> None:
            call.rule = name

        # The header's settings are current while the rules run and the answer is written
        # (lazily decoded nodes are filled then too).
        result = Result(decoded.plan)
        trace = decoded.context.trace  # the JVM wants each change for its plan change log
        observer = self.observer
        with scoped(decoded.context):
            try:
                executor.execute(decoded.plan, decoded.excluded, on_rule=on_rule,
                                 catalyst_excluded=decoded.catalyst_excluded,
                                 cancelled=call.cancelled.is_set,
                                 trace=trace or observer is not None, result=result)
            except Cancelled:  # the JVM is gone: this answer only closes the call
                return error_document("cancelled", call.rule or None,
                                      f"cancelled by the JVM while rule '{call.rule}' ran"
                                      if call.rule else "cancelled by the JVM")
            except RuleError as e:
                return self._with_stats(failed(
                    "rule", e.rule, str(e.cause) if e.cause is not None else e.message, e),
                    result.stats)
            except Exception as e:  # noqa: BLE001
                return failed("executor", None, str(e), e)
            finally:
                with self._lock:
                    self._calls.pop(call_id, None)
            if observer is not None:
                observer(result)
            stats = self.stats_field(result.stats)
            if result.plan is decoded.plan and not result.unconverged:
                return unchanged_answer(stats)
            try:
                return json.dumps(self._changed_answer(result, decoded, stats, trace),
                                  separators=(",", ":"), allow_nan=False)
            except Exception as e:  # noqa: BLE001 - WireError, or a value JSON cannot hold
                who = ", ".join(result.changed_by) or None
                return self._with_stats(failed(
                    "encode", who, f"returned a plan that cannot be sent to Spark: {e}", e),
                    result.stats)

    def stats_field(self, stats: dict[str, RuleStats]) -> list[int]:
        """``[index, invocations, effective, nanos, ...]``: four integers per rule that ran."""
        out: list[int] = []
        for name, s in stats.items():
            out += (self.rule_index[name], s.invocations, s.effective, s.nanos)
        return out

    def _with_stats(self, error: str, stats: dict[str, RuleStats]) -> str:
        """An error document with the figures of the rules that ran before the failure."""
        doc = json.loads(error)
        doc["stats"] = self.stats_field(stats)
        return json.dumps(doc)

    @staticmethod
    def _changed_answer(result: Result, decoded: Decoded, stats: list[int],
                        trace: bool) -> dict:
        enc = AnswerEncoder(decoded)
        answer: dict = {"plan": enc.node(result.plan), "rules": result.changed_by,
                        "stats": stats}
        because = {name: s.reasons for name, s in result.stats.items() if s.reasons}
        if because:
            answer["because"] = because
        if result.unconverged:
            answer["unconverged"] = result.unconverged
        if result.facts:
            # what the ordering rules relied on, for a test suite to check on the rows
            # (SPARKEXT_CHECK_ORDER_FACTS=1; docs/wire-format.md, "Answers")
            answer["facts"] = [{"rule": rule, "sort": enc.node(f.sort),
                                "kept": None if f.kept is None else list(f.kept)}
                               for rule, f in result.facts]
        if trace:
            # each change's plan, for Catalyst's plan change log (the plan before a step is
            # the previous step's, or the request's)
            answer["trace"] = [{"rule": s.rule, "plan": enc.node(s.after)}
                               for s in result.steps]
        answer["types"] = enc.types  # last: the trace's plans may add types
        return answer

    class Java:
        implements = ["io.sparkext.RuleBridge"]


@dataclass(frozen=True)
class Registration:
    """A bridge and the registration document that names it to the JVM."""

    bridge: RuleBridge
    #: every rule, in the order the executors run them
    rules: tuple[Rule, ...]
    #: ``{"handshake", "channel": {"address", "secret", "key"}, "rules", "mirror",
    #: "prechecks"}``
    spec: dict


def registration(batches: Iterable[Batch], channel, spark_version: str | None = None
                 ) -> Registration:
    """Serves ``batches`` on ``channel`` (a :class:`~sparkext.channel.Channel`) under a key
    of their own; the document carries the channel's secret: hand it over privately."""
    batches = tuple(batches)
    _refuse_duplicate_names(batches)
    executors = split_by_position(batches)
    rules = all_rules(executors)
    bridge = RuleBridge(executors)
    spec = {
        "handshake": handshake(),
        "channel": channel.address(channel.add(bridge)),
        "rules": [{"name": r.name, "position": r.position, "patterns": list(r.patterns),
                   "only_when_catalyst_excludes": list(r.only_when_catalyst_excludes),
                   "jvm_precheck": r.jvm_precheck, "needs": list(r.needs)}
                  for r in rules],
        # the constructors of the running Spark's line (None: the newest line)
        "mirror": mirror_spec(spark_version),
        # what the JVM's pre-checks must know of the analyses (Prechecks.scala)
        "prechecks": precheck_vocabulary(),
    }
    return Registration(bridge, rules, spec)


def precheck_vocabulary() -> dict[str, dict[str, list[str]]]:
    """The registration's ``prechecks``: per JVM pre-check, the Catalyst class names it
    interprets, from the declarations the analyses read
    (:data:`sparkext.catalyst_names.ORDERING_PRECHECK`)."""
    return {"ordering": {k: sorted(v) for k, v in names.ORDERING_PRECHECK.items()}}


def all_rules(executors: dict[str, RuleExecutor]) -> tuple[Rule, ...]:
    """Every rule, in the order of the registration's rule list (indices in ``stats``)."""
    return tuple(r for e in executors.values() for r in e.rules)


def split_by_position(batches: Iterable[Batch]) -> dict[str, RuleExecutor]:
    """An executor per position that has rules, under the position (a
    :class:`~sparkext.optimizer.Position`, equal to the wire string a request names)."""
    executors: dict[str, RuleExecutor] = {}
    for pos in POSITIONS:
        kept = [Batch(b.name, b.strategy, tuple(r for r in b.rules if r.position is pos))
                for b in batches]
        kept = [b for b in kept if b.rules]
        if kept:
            executors[pos] = RuleExecutor(kept)
    return executors


def defined_at(rule: Rule) -> str:
    """``module:line`` of a rule's function, for messages that must tell two rules apart."""
    fn = inspect.unwrap(rule.fn)
    code = getattr(fn, "__code__", None)
    where = getattr(fn, "__module__", None) or "?"
    return f"{where}:{code.co_firstlineno}" if code is not None else f"{where}:{fn!r}"


def _refuse_duplicate_names(batches: tuple[Batch, ...]) -> None:
    """Two different rules under one name cannot both run: the executor and the JVM's
    skip (by tree pattern) would each keep a different one, and
    ``spark.sparkext.excludedRules`` could not tell them apart. The same rule in several
    batches is fine."""
    first: dict[str, Rule] = {}
    for batch in batches:
        for rule in batch.rules:
            seen = first.setdefault(rule.name, rule)
            if seen != rule:
                raise ValueError(
                    f"two different rules are named {rule.name!r}: one defined at "
                    f"{defined_at(seen)}, the other at {defined_at(rule)}. Rule names must "
                    "be unique (spark.sparkext.excludedRules uses them): rename one.")
