"""The Python end of the one callback per optimizer invocation.

The JVM calls :meth:`RuleBridge.apply` with one request document; the bridge decodes it,
runs the rule batches registered for that position, and answers with the rewritten plan,
``{"unchanged": true}``, or an error the JVM turns into one warning (or, in strict mode,
an exception). Nothing raised here reaches the user's query.
"""

from __future__ import annotations

import json
import threading
import traceback

from sparkext.codec import Decoded, WireError, encode_answer
from sparkext.optimizer import RuleError, RuleExecutor

_UNCHANGED = '{"unchanged":true}'


def _where(exc: BaseException) -> str:
    tb = traceback.extract_tb(exc.__traceback__)
    if not tb:
        return ""
    frame = tb[-1]
    return f"{frame.filename}:{frame.lineno}"


def _error(kind: str, rule: str | None, message: str, exc: BaseException) -> str:
    """The error document: the JVM logs ``rule ... failed: <type>: <message> (at where)``."""
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
    """Implements the JVM interface ``io.sparkext.RuleBridge`` through py4j."""

    def __init__(self, executors: dict[str, RuleExecutor]):
        self.executors = executors
        self._running: dict[int, str] = {}
        self._lock = threading.Lock()

    def apply(self, payload: str) -> str:
        try:
            decoded = Decoded.from_json(payload)
        except Exception as e:  # noqa: BLE001 - a bad request must not escape to py4j
            return _error("decode", None, f"could not decode the plan: {e}", e)
        executor = self.executors.get(decoded.position)
        if executor is None:
            return _UNCHANGED
        call_id = decoded.call_id

        def on_rule(name: str) -> None:
            with self._lock:
                self._running[call_id] = name

        try:
            result = executor.execute(decoded.plan, decoded.excluded, on_rule=on_rule,
                                      catalyst_excluded=decoded.catalyst_excluded)
        except RuleError as e:
            return _error("rule", e.rule, str(e.cause) if e.cause is not None else e.message, e)
        except Exception as e:  # noqa: BLE001
            return _error("executor", None, str(e), e)
        finally:
            with self._lock:
                self._running.pop(call_id, None)
        if result.plan is decoded.plan:
            return _UNCHANGED
        try:
            answer = encode_answer(result.plan, decoded, result.changed_by)
        except (WireError, Exception) as e:  # noqa: BLE001
            who = ", ".join(result.changed_by) or None
            return _error("encode", who, f"returned a plan that cannot be sent to Spark: {e}", e)
        return json.dumps(answer, separators=(",", ":"), allow_nan=False)

    def running(self, call_id: int) -> str:
        with self._lock:
            return self._running.get(call_id, "")

    class Java:
        implements = ["io.sparkext.RuleBridge"]
