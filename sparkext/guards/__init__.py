"""Guards: checks that may refuse a query (docs/guards.md).

A platform team names its guards at launch, as static settings no session can change:
``--conf spark.sparkext.guards=mycompany.guards:GUARDS`` for its own
(:func:`sparkext.guard`), ``spark.sparkext.guards.*`` for the built-in ones below. The
driver JVM judges every planning unit of every session with them, in a Python guard
worker it starts itself (:mod:`sparkext.worker`), whatever a session sets:
``spark.sparkext.enabled``, ``spark.sparkext.excludedRules``,
``spark.sql.optimizer.excludedRules``, ``sparkext.disable``.

Built-in guards, each configured by its settings (and a ``mode``, refuse or warn):

- :func:`require_partition_filters` (``spark.sparkext.guards.partitionFilter.*``)
- :func:`limit_scans` (``spark.sparkext.guards.maxScan.*``)
- :func:`limit_cartesian_joins` (``spark.sparkext.guards.cartesian.*``)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sparkext.guards.guard import (
    MODES,
    REFUSE,
    WARN,
    Guard,
    GuardFunction,
    Query,
    Refused,
    as_guard,
    guard,
    refuse,
)
from sparkext.guards.limit_cartesian_joins import limit_cartesian_joins
from sparkext.guards.limit_scans import limit_scans
from sparkext.guards.require_partition_filters import require_partition_filters

__all__ = ["Guard", "GuardFunction", "MODES", "Query", "REFUSE", "Refused", "WARN",
           "as_guard", "builtin_guards", "guard", "limit_cartesian_joins", "limit_scans",
           "refuse", "require_partition_filters"]


def builtin_guards(settings: Mapping[str, Any]) -> tuple[Guard, ...]:
    """The built-in guards the launch configuration sets up, as the JVM sends their
    settings to the guard worker (converted and checked by Spark: sizes in bytes):
    ``{"partition_filter": {"tables", "allow", "mode"}, "max_scan": {"bytes", "files",
    "partitions", "mode"}, "cartesian": {"bytes", "mode"}}``, each present when set."""
    out: list[Guard] = []
    if (p := settings.get("partition_filter")) is not None:
        out.append(require_partition_filters(p["tables"], p.get("allow", ()), p["mode"]))
    if (s := settings.get("max_scan")) is not None:
        out.append(limit_scans(s.get("bytes"), s.get("files"), s.get("partitions"), s["mode"]))
    if (c := settings.get("cartesian")) is not None:
        out.append(limit_cartesian_joins(c["bytes"], c["mode"]))
    return tuple(out)
