"""``limit_cartesian_joins``: a join with no equality between its two sides (a cartesian
product, or a join on ``<``, ``BETWEEN``, ``OR`` ...) pairs every row of one side with every
row of the other; Spark runs it as a nested loop or a cartesian product. Refused when
Catalyst estimates both sides larger than a threshold (one small side is what a broadcast
nested loop join is made for).

The estimates are Catalyst's own (``stats.sizeInBytes`` of each input, what the planner
chooses the join by): without collected statistics, the bytes a side reads, scaled to the
columns it keeps, with no discount for filters; unknown sizes are Spark's
``spark.sql.defaultSizeInBytes``, larger than any threshold.
"""

from __future__ import annotations

from sparkext.expressions import EqualNullSafe, EqualTo
from sparkext.guards.guard import REFUSE, Guard, Query, refuse
from sparkext.plan import Join
from sparkext.predicates import split_conjuncts


def limit_cartesian_joins(max_bytes: int, mode: str = REFUSE) -> Guard:
    """The guard (named ``limit_cartesian_joins``): refuses a join without an equality
    between its sides when both sides are estimated over ``max_bytes``."""

    def check(query: Query) -> None:
        for node in query.walk():
            if not isinstance(node, Join) or _has_equality(node):
                continue
            left, right = query.input_sizes(node)
            if _over(left, max_bytes) and _over(right, max_bytes):
                kind = "cartesian" if node.condition is None else "non-equi"
                refuse(f"a {kind} {node.join_type.wire} join of two inputs estimated at "
                       f"{_size(left)} and {_size(right)}, both over the limit of "
                       f"{max_bytes:,} bytes")

    return Guard("limit_cartesian_joins", check, (), mode)


def _has_equality(join: Join) -> bool:
    """Whether a conjunct of the condition equates one side's columns with the other's:
    what Spark's planner needs for a hash or sort-merge join."""
    left, right = join.left.output_ids, join.right.output_ids
    for c in split_conjuncts(join.condition):
        if isinstance(c, (EqualTo, EqualNullSafe)):
            a, b = c.left.references, c.right.references
            if a and b and ((a <= left and b <= right) or (a <= right and b <= left)):
                return True
    return False


def _over(size: int | None, limit: int) -> bool:
    return size is None or size > limit


def _size(size: int | None) -> str:
    return "an unknown size" if size is None else f"{size:,} bytes"
