"""What the JVM's time-zone rules allow the ordering analysis to assume.

``to_date(ts)`` and ``date_trunc(unit, ts)`` work on local date-time, and a local clock
can go back (the end of daylight saving, a historical change of offset): for some zones
and units a later instant truncates to an earlier value. Each request names the
session's time zone and the truncations its history can reverse (computed on the JVM,
from the zone rules Spark evaluates with: ``io.sparkext.ZoneFacts``); this module keeps
what it has been told, per zone id. A zone nobody has described is assumed to reverse
everything, so an analysis without the JVM stays silent unless the zone has one fixed
offset.

Units: ``"date"`` (the local date: ``cast(ts as date)``, and ``date_trunc`` to week,
month, quarter or year), ``"MINUTES"``, ``"HOURS"``, ``"DAYS"`` (``date_trunc`` to
minute, hour, day).
"""

from __future__ import annotations

import re

_BREAKS: dict[str, frozenset[str]] = {}

#: Ids with one offset for all time: no transitions, nothing reversed.
_FIXED = re.compile(r"(?:(?:UTC|GMT|UT)(?:[+-]\d{1,2}(?::?\d{2}(?::?\d{2})?)?)?|Z"
                    r"|[+-]\d{1,2}(?::?\d{2}(?::?\d{2})?)?|Etc/(?:UTC|UCT|GMT|Zulu|Universal"
                    r"|GMT[+-]\d{1,2}))")


def learn(zone_id: str, breaks) -> None:
    """Records what the JVM says ``zone_id``'s rules can reverse."""
    _BREAKS[zone_id] = frozenset(breaks)


def keeps_order(zone_id: str | None, unit: str) -> bool:
    """True when truncating to ``unit`` in ``zone_id`` never maps a later instant to an
    earlier value."""
    if zone_id is None:
        return False
    known = _BREAKS.get(zone_id)
    if known is not None:
        return unit not in known
    return _FIXED.fullmatch(zone_id) is not None
