"""The Python end of the one call per optimizer invocation.

The JVM sends one request document over the channel (:mod:`sparkext.channel`), which
hands it to :meth:`RuleBridge.apply`; the bridge decodes it, runs the rule batches
registered for that position, and answers with the rewritten plan,
``{"unchanged": true}``, or an error the JVM turns into one warning (or, in strict mode,
an exception). Nothing raised here reaches the user's query.

Deep plans: a DataFrame built by ``withColumn`` in a loop nests its expressions hundreds
of levels deep once Catalyst collapses the projections, and decoding, rules and encoding
all recurse per level. Python's default limit (1000 frames) stops near 250 levels. A call
that recurses too deep is answered again, from the start, on a thread of its own with a
:data:`DEEP_STACK_BYTES` stack and the interpreter's recursion limit raised to
:data:`DEEP_RECURSION_LIMIT` while it runs, restored when the last such call ends. The
limit is per interpreter, so every other thread has it too meanwhile: it is kept where a
thread with the usual 8 MiB stack still gets a RecursionError rather than a crash
(measured on 3.11: such threads crash between 10 000 and 20 000 frames of recursion
through C calls). 10 000 frames are enough for about 1 000 levels, deeper than Spark
itself can plan: its analyzer overflows the JVM stack first (290 ``withColumn`` steps).
"""

from __future__ import annotations

import json
import sys
import threading
import traceback

from sparkext.codec import Decoded, encode_answer
from sparkext.context import scoped
from sparkext.optimizer import RuleError, RuleExecutor
from sparkext.wire import UNCHANGED_ANSWER


#: The stack of the thread that answers a call too deep for the channel's thread (reserved
#: address space; the pages are only touched as deep as the plan goes).
DEEP_STACK_BYTES = 256 * 1024 * 1024
#: The recursion limit while such a call runs (see the module docstring for why not more).
DEEP_RECURSION_LIMIT = 10_000


class _TooDeep(Exception):
    """The call recursed past the recursion limit of the thread it ran on."""


def _recursed(e: BaseException) -> bool:
    return isinstance(e, RecursionError) or isinstance(getattr(e, "cause", None), RecursionError)


def _where(exc: BaseException) -> str:
    tb = traceback.extract_tb(exc.__traceback__)
    if not tb:
        return ""
    frame = tb[-1]
    return f"{frame.filename}:{frame.lineno}"


def error_document(kind: str, rule: str | None, message: str,
                   exc: BaseException | None = None) -> str:
    """The error document: the JVM logs ``rule ... failed: <type>: <message> (at where)``."""
    if exc is None:
        return json.dumps({"error": {"kind": kind, "rule": rule, "type": "", "message": message,
                                     "where": "", "traceback": ""}})
    cause = exc.cause if isinstance(exc, RuleError) and exc.cause is not None else exc
    raised = cause is not exc or not isinstance(exc, RuleError)
    return json.dumps({"error": {
        "kind": kind,
        "rule": rule,
        "type": type(cause).__name__ if raised else "",
        "message": message,
        "where": _where(cause) if raised else "",
        "traceback": "".join(traceback.format_exception(cause)),
    }})


class RuleBridge:
    """Answers the calls of one ``sparkext.enable``.

    :meth:`apply` answers the requests that arrive over the channel. py4j carries the
    object itself to the JVM as an ``io.sparkext.RuleBridge``: the JVM's proxy keeps it
    alive, and calls :meth:`running` when a call times out.
    """

    def __init__(self, executors: dict[str, RuleExecutor]):
        self.executors = executors
        self._running: dict[int, str] = {}
        self._lock = threading.Lock()

    def apply(self, payload: str) -> str:
        try:
            return self._answer(payload, deep=False)
        except _TooDeep:
            return _deep_stack.run(lambda: self._answer(payload, deep=True))

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
        executor = self.executors.get(decoded.position)
        if executor is None:
            return UNCHANGED_ANSWER
        call_id = decoded.call_id

        def on_rule(name: str) -> None:
            with self._lock:
                self._running[call_id] = name

        # The header's settings are current while the rules run and the answer is written
        # (lazily decoded nodes are filled then too).
        with scoped(decoded.context):
            try:
                result = executor.execute(decoded.plan, decoded.excluded, on_rule=on_rule,
                                          catalyst_excluded=decoded.catalyst_excluded)
            except RuleError as e:
                return failed("rule", e.rule,
                              str(e.cause) if e.cause is not None else e.message, e)
            except Exception as e:  # noqa: BLE001
                return failed("executor", None, str(e), e)
            finally:
                with self._lock:
                    self._running.pop(call_id, None)
            if result.plan is decoded.plan:
                return UNCHANGED_ANSWER
            try:
                answer = encode_answer(result.plan, decoded, result.changed_by)
                return json.dumps(answer, separators=(",", ":"), allow_nan=False)
            except Exception as e:  # noqa: BLE001 - WireError, or a value JSON cannot hold
                who = ", ".join(result.changed_by) or None
                return failed("encode", who,
                              f"returned a plan that cannot be sent to Spark: {e}", e)

    def running(self, call_id: int) -> str:
        with self._lock:
            return self._running.get(call_id, "")

    class Java:
        implements = ["io.sparkext.RuleBridge"]


class _DeepStack:
    """Runs a call on a new thread with a big stack and a raised recursion limit."""

    def __init__(self):
        self._lock = threading.Lock()
        self._calls = 0
        self._saved_limit = 0

    def run(self, answer) -> str:
        box: list = []

        def target() -> None:
            try:
                box.append(answer())
            except BaseException as e:  # noqa: BLE001 - reported to the JVM below
                box.append(error_document("executor", None,
                                          f"failed on the deep-plan thread: {e}", e))

        with self._lock:
            if self._calls == 0:
                self._saved_limit = sys.getrecursionlimit()
                sys.setrecursionlimit(max(self._saved_limit, DEEP_RECURSION_LIMIT))
            self._calls += 1
        try:
            with self._lock:  # stack_size is process-wide: set it only around our start()
                previous = threading.stack_size(DEEP_STACK_BYTES)
                try:
                    thread = threading.Thread(target=target, name="sparkext-deep-plan",
                                              daemon=True)
                    thread.start()
                finally:
                    threading.stack_size(previous)
            thread.join()
        except Exception as e:  # noqa: BLE001 - no thread for it: the plan stays as it was
            return error_document("executor", None,
                                  f"could not start a thread for a deep plan: {e}", e)
        finally:
            with self._lock:
                self._calls -= 1
                if self._calls == 0 and sys.getrecursionlimit() == DEEP_RECURSION_LIMIT:
                    sys.setrecursionlimit(self._saved_limit)
        if not box:  # reporting the failure failed too (MemoryError, a broken __str__)
            return error_document("executor", None, "the deep-plan thread failed")
        return box[0]


_deep_stack = _DeepStack()


def start_thread(thread: threading.Thread) -> None:
    """Starts ``thread`` with the usual stack size: never while a deep-plan thread is being
    started with its big one (``threading.stack_size`` is process-wide)."""
    with _deep_stack._lock:
        thread.start()
