"""Facts about Catalyst that sparkext's rules and tests rely on."""

from __future__ import annotations

_OPT = "org.apache.spark.sql.catalyst.optimizer."

#: The Catalyst rules that push filters down, infer filters, prune columns and remove
#: sorts. Excluding all of them (``spark.sql.optimizer.excludedRules``) is what it takes to
#: switch Catalyst's own versions of sparkext's built-in rules off: PushPredicateThrough*
#: also sit in late batches, InferFiltersFromConstraints copies one-sided join conjuncts
#: into the inputs, and PushProjectionThroughUnion prunes union children. The physical
#: sort remover is a separate switch: ``spark.sql.execution.removeRedundantSorts``.
#: (V2ScanRelationPushDown cannot be excluded.)
PUSHDOWN_AND_PRUNING_RULES = tuple(_OPT + r for r in (
    "PushDownPredicates",
    "PushPredicateThroughJoin",
    "PushPredicateThroughNonJoin",
    "PushExtraPredicateThroughJoin",
    "InferFiltersFromConstraints",
    "ColumnPruning",
    "PushProjectionThroughUnion",
    "EliminateSorts",
))


def excluded_rules_conf(rules=PUSHDOWN_AND_PRUNING_RULES) -> dict[str, str]:
    """Session confs that switch the given Catalyst rules off."""
    return {"spark.sql.optimizer.excludedRules": ",".join(rules),
            "spark.sql.execution.removeRedundantSorts": "false"}
