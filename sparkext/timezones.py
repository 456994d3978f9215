"""What the JVM's time-zone rules allow the ordering analysis to assume.

``to_date(ts)`` and ``date_trunc(unit, ts)`` work on local date-time, and a local clock
can go back (the end of daylight saving, a historical change of offset): for some zones
and units a later instant truncates to an earlier value. Each request names the
session's time zone and the truncations its history can reverse (computed on the JVM,
from the zone rules Spark evaluates with: ``io.sparkext.ZoneFacts``). The request's
header is the call's :class:`~sparkext.context.CallContext`, and this module answers from
the current one. A zone the call has not described (or an analysis outside any call) is
assumed to reverse everything, so an analysis without the JVM stays silent unless the
zone has one fixed offset.

Units: ``"date"`` (the local date: ``cast(ts as date)``, and ``date_trunc`` to week,
month, quarter or year), ``"MINUTES"``, ``"HOURS"``, ``"DAYS"`` (``date_trunc`` to
minute, hour, day).
"""

from __future__ import annotations

import re

from sparkext import context

#: Ids with one offset for all time: no transitions, nothing reversed.
_FIXED = re.compile(r"(?:(?:UTC|GMT|UT)(?:[+-]\d{1,2}(?::?\d{2}(?::?\d{2})?)?)?|Z"
                    r"|[+-]\d{1,2}(?::?\d{2}(?::?\d{2})?)?|Etc/(?:UTC|UCT|GMT|Zulu|Universal"
                    r"|GMT[+-]\d{1,2}))")


def reverses(zone_id: str) -> frozenset[str] | None:
    """The truncations the current call says ``zone_id``'s rules can reverse; None when
    the call does not describe that zone."""
    ctx = context.current()
    if ctx is None or ctx.time_zone != zone_id:
        return None
    return ctx.time_zone_reverses


def keeps_order(zone_id: str | None, unit: str) -> bool:
    """True when truncating to ``unit`` in ``zone_id`` never maps a later instant to an
    earlier value."""
    if zone_id is None:
        return False
    known = reverses(zone_id)
    if known is not None:
        return unit not in known
    return _FIXED.fullmatch(zone_id) is not None
