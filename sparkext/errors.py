"""The error document: what the Python side answers when a call fails.

The JVM logs ``rule ... failed: <type>: <message> (at where)`` from it, once per call, or
raises it in strict mode (docs/wire-format.md, "Errors"). The bridge writes it for a
request it cannot decode, a rule that fails and a plan it cannot encode; the channel for
a call it cannot hand to a bridge or an answer it cannot send.
"""

from __future__ import annotations

import json
import traceback

from sparkext.optimizer import RuleError


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
