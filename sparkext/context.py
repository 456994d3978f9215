"""What one optimizer call knows besides its plan: the request header, as a frozen object.

The JVM's header carries the session's time zone and the truncations its rules can
reverse, the top-K threshold (``spark.sql.execution.topKSortFallbackThreshold``), the
sparkext rules switched off, Catalyst's own excluded rules, the call's id
and its position (docs/wire-format.md). :class:`CallContext` holds them for the length
of the call: the bridge builds it from the header and scopes it with :func:`scoped`
(a ``contextvars`` variable, so concurrent calls on several threads each see their own),
and code on the call path that needs one of them asks :func:`current`. Nothing about a
call is kept in a module global, so nothing leaks from one call into the next.

    >>> from sparkext.context import CallContext, current, scoped
    >>> with scoped(CallContext.from_header({"id": 7, "tz": "Europe/Paris"})):
    ...     current().call_id, current().time_zone
    (7, 'Europe/Paris')
    >>> current() is None
    True

A new per-call setting (ANSI mode, ...) is one field here and one entry of
:data:`HEADER`, which :meth:`CallContext.from_header` reads by and which is the package's
declaration of the header (``sparkext.wire.HEADER_FIELDS``, compared with the jar's).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class CallContext:
    """The settings of one optimizer call."""

    call_id: int | None = None
    #: where the JVM runs the rules: the wire string of a
    #: :class:`sparkext.optimizer.Position` (``"once"``, ``"fixed_point"``)
    position: str | None = None
    #: the session's time zone id (``spark.sql.session.timeZone``)
    time_zone: str | None = None
    #: the truncations the time zone's rules can reverse (sparkext.timezones)
    time_zone_reverses: frozenset[str] = frozenset()
    #: ``spark.sql.execution.topKSortFallbackThreshold``: a literal limit below it over a
    #: global sort is planned as one TakeOrderedAndProjectExec (sparkext.analysis.ordering); None
    #: when the JVM did not say (then no limit keeps order)
    top_k_threshold: int | None = None
    #: sparkext rules switched off (``spark.sparkext.excludedRules``)
    excluded: frozenset[str] = frozenset()
    #: Catalyst rules switched off (``spark.sql.optimizer.excludedRules``), short names
    catalyst_excluded: frozenset[str] = frozenset()
    #: the JVM logs plan changes (``spark.sql.planChangeLog.level``): answer with each
    #: rule's plan too
    trace: bool = False

    @classmethod
    def from_header(cls, header: dict) -> CallContext:
        """The settings a request's header carries (an absent field: the default)."""
        return cls(**{name: read(header[key]) for key, (name, read) in HEADER.items()
                      if key in header})


def _same(value: Any) -> Any:
    return value


#: The call's settings in a request header: header field -> (CallContext field, how its
#: JSON value is read).
HEADER: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "id": ("call_id", _same),
    "pos": ("position", _same),
    "tz": ("time_zone", _same),
    "tz_breaks": ("time_zone_reverses", frozenset),
    "topk": ("top_k_threshold", _same),
    "excluded": ("excluded", frozenset),
    "catalyst_excluded": ("catalyst_excluded", frozenset),
    "trace": ("trace", lambda v: v is True),
}


_current: contextvars.ContextVar[CallContext | None] = contextvars.ContextVar(
    "sparkext_call", default=None)


def current() -> CallContext | None:
    """The context of the call running on this thread, or None outside a call."""
    return _current.get()


@contextlib.contextmanager
def scoped(ctx: CallContext) -> Iterator[CallContext]:
    """Makes ``ctx`` the current context for the block (restored after, even on error)."""
    token = _current.set(ctx)
    try:
        yield ctx
    finally:
        _current.reset(token)
