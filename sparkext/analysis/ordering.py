"""Ordering analysis: which orders a plan's rows are already in (Apache DataFusion's
``EquivalenceProperties``, brought to Spark's logical plans).

For every plan node, :func:`properties` gives its :class:`EquivalenceProperties`:

- **constants**: expressions with one value on every row (``host = 'h1'``, a literal
  column, ``x IS NULL``), and whether that value is exactly one value or only equal under
  comparison (a ``double`` equal to ``0.0`` may be ``-0.0``);
- **equivalence groups**: expressions equal on every row (``a = b``, ``x AS y``);
- **orderings**: lexicographic orders the rows are in, each knowing whether it holds
  **globally** (rows in partition order are sorted) or only **within each partition**.

:meth:`EquivalenceProperties.ordering_satisfy` decides whether a required sort order
already holds: drop constant keys, normalise every key to its group, drop repeated keys,
then match keys one at a time against the leading key of some ordering (a key that is a
monotonic function of a matched expression matches too), treating each matched key as a
constant for the keys after it — within rows that tie on the keys so far, an ordering's
next key takes over (:meth:`EquivalenceProperties.tie`: so does every argument the key
is a strict function of). Once the keys so far cover a unique key of the rows
(:mod:`sparkext.analysis.uniqueness`, attached to each node's properties by :func:`properties`),
every later key is satisfied: no two rows tie on them.

Derivation per node:

| node | orderings | constants and groups |
| --- | --- | --- |
| Relation | Catalyst's ``outputOrdering`` of the leaf (cached relations, checkpoints, ranges, DSv2 scans that report one); global only when the JVM proves it (a range; a cached or checkpointed plan that is one partition or range-partitioned on a prefix of the ordering), else within partitions | its non-nullable columns are not NULL |
| Sort | global sort: its order, globally. Local sort: its order within partitions — globally when its input is range-partitioned on keys that agree with it, or is one partition (a repartition or coalesce to one partition, through deterministic Projects and Filters) | passed on |
| Filter | passed on; none when a conjunct holds a subquery (``IN``/``EXISTS`` become joins after sparkext runs, in Catalyst's RewriteSubquery batch) | ``e = literal`` makes ``e`` constant (not NULL); ``e IS NULL`` makes it constant NULL; ``a = b`` joins their groups; null-intolerant conjuncts make their columns not NULL (conjuncts with subqueries teach nothing) |
| Project | passed on (in terms of the input's expressions); none when a column holds a subquery (a scalar subquery becomes a join) | ``e AS x`` puts ``x`` in ``e``'s group; a literal column is constant; monotonic functions of ordered expressions are ordered (below) |
| SubqueryAlias, Sample, LocalLimit (``keeps_child_order`` on the class) | passed on | passed on |
| GlobalLimit, Offset: a top-K (below) | the sort's order, globally (one partition) | the sort's input's, through the Project |
| GlobalLimit, any other | none (its single-partition exchange reads blocks in any order), as Spark's own | passed on |
| Offset, any other (an ``Opaque``) | none | none |
| Join | none | inner: both sides' and the join condition's equalities; left outer, semi, anti, existence: the left side's; right outer: the right side's; full outer: none |
| Aggregate | none, whatever the input's order: Spark picks HashAggregate (which keeps no order) or SortAggregate at planning, out of sparkext's sight | grouping outputs that were constant stay constant |
| Window | its partition keys (ascending, NULLS FIRST) then its order keys, within partitions (WindowExec sorts its clustered input so); globally when it has no partition keys (its input is gathered into one partition). Also, for each window function that never decreases along that order (``row_number``, ``rank``, ``dense_rank``, ``ntile``, ``percent_rank``, ``cume_dist``; never NULL), and each ``count``, ``max`` (NULLs first) or ``min`` (descending, NULLs first) over a frame from the partition's first row: the partition keys, then that column, then the order keys. The input's order is lost. Only while the Window stays: see :func:`windows_pruned` | passed on |
| Repartition*, Generate, Distinct, Deduplicate (with GlobalLimit and Window: ``keeps_child_equivalences`` on the class) | none | passed on |
| Union of one child | the child's | the child's |
| Union of several children, Expand, Opaque | none (nothing holds across children; Expand interleaves its projections' rows) | none |

Top-K. Spark's planner (``SpecialLimits.planTakeOrdered`` in ``SparkStrategies``, the same
six cases on 3.5 through 4.3, at the root and below it) plans ``Limit(n, Sort(order,
global))``, ``Limit(n, Project(list, Sort(order, global)))``, ``Offset(o, Limit(n, ...))``
and ``Limit(n, Offset(o, LocalLimit(n + o, ...)))`` of those two shapes as one
``TakeOrderedAndProjectExec``: one partition in exactly ``order``, the projection applied
after. It does so only when ``n`` (``n + o`` for a limit over an offset) is an integer
literal below ``spark.sql.execution.topKSortFallbackThreshold`` (the request header's
``topk``: :attr:`sparkext.context.CallContext.top_k_threshold`); any other Limit is a
GlobalLimit whose exchange loses order. The Project must reach the planner as it is: one
holding a Python UDF or a subquery does not (Spark extracts the UDF into a node of its own,
and turns the subquery into a join, after sparkext has run). The sort under the limit is
the top-K itself: ``eliminate_sorts`` never removes it.

Monotonic functions. What an expression does to orderings is declared on its class, by
:meth:`Expression.ordering_fact <sparkext.expressions.Expression.ordering_fact>`
(``sparkext/expressions.py``): an :class:`~sparkext.expressions.OrderingFact` naming the
ordered argument, the direction, whether it is strict (injective) or only
order-preserving, and whether NULLs stay where they were; the method checks the
conditions (types, ANSI mode, the time zone) and answers None where they fail. This module
reads nothing else. The classes that declare one today (pinned by
``tests/test_ordering_facts.py``), only over integral, decimal, date and timestamp values
(floating point NaN and -0.0 order in ways these functions do not preserve), and only
where overflow raises (ANSI mode, for ``+``, ``-``, ``*`` and unary ``-``):

| expression (class) | monotonic in ``x`` |
| --- | --- |
| ``x + c``, ``x - c``, ``c + x``, ``x * c`` (c > 0), ``date_add(x, 0)``, ``date_sub(x, 0)`` (``Add``, ``Subtract``, ``Multiply``, ``DateAdd``, ``DateSub``) | increasing, strictly |
| ``c - x``, ``-x``, ``x * c`` (c < 0) (``Subtract``, ``UnaryMinus``, ``Multiply``) | decreasing, strictly |
| ``cast(x as wider)`` (integral to wider integral or decimal, decimal to wider decimal, date to timestamp_ntz) (``Cast``) | increasing, strictly |
| ``date_trunc(f, x)`` (f a microsecond, a minute or longer), ``trunc(x, 'QUARTER')``, ``to_date(x)`` (cast timestamp to date), ``cast(date as timestamp)``, ``year(x)``, ``floor(x)``, ``ceil(x)`` (decimal) (``TruncTimestamp``, ``TruncDate``, ``Cast``, ``Year``, ``Floor``, ``Ceil``) | increasing, not strictly |

Not declared, though monotonic on ordinary dates: ``date_add(x, c)`` and ``date_sub(x, c)``
for ``c != 0``, ``trunc(x, f)`` to a month, a year or a week, ``date_trunc`` to a second or
a millisecond. Catalyst computes them with int or long arithmetic that wraps around at the
ends of the range (in ANSI mode too): ``date_add`` of the last date is the first one. The
others here are exact, or raise where they leave the range.

``to_date`` and ``date_trunc`` work on local date-time, which goes back where the
session's time zone sets its clock back: they count as monotonic only where the JVM's
zone rules say that never reverses them (:mod:`sparkext.timezones`; truncation below a
minute never depends on the zone).

Composition. A function of a function is followed down to the ordered expression
(``cast(-(a * 2 + 1) as bigint)`` to ``a``), at most eight deep: the direction flips once
per decreasing link (:meth:`OrderingFact.then <sparkext.expressions.OrderingFact.then>`),
and the result is strict only while every link is strict
(:meth:`Expression.strict_arguments <sparkext.expressions.Expression.strict_arguments>`,
DataFusion's ``preserves_lex_ordering``). A strict key keeps the keys after it: rows
sorted by ``(a, b)`` are sorted by ``(3 * a - 7, b)``, since ties on ``3 * a - 7`` are ties
on ``a``. A non-strict key cannot be followed by keys that rely on it:
``date_trunc('hour', ts)`` is ordered where ``ts`` is, but ties in the hour do not make
``ts`` tie, and one non-strict link makes the whole chain non-strict
(``floor(dec + 0.25)``). Without ANSI, ``+``, ``-``, ``*`` and unary ``-`` declare
nothing (they wrap around), so a chain through them is not ordered at all. Null ordering
matters (Spark's ASC is NULLS FIRST, DESC is NULLS LAST; a decreasing function keeps NULLs
where they were: under ``a ASC NULLS FIRST``, ``-a`` is ``DESC NULLS FIRST``) unless the
column is known not to be NULL.

Unique keys (:mod:`sparkext.analysis.uniqueness`, whose docstring has the table per node): after
``groupBy(k)``, ``dropDuplicates(["k"])``, ``distinct()``, over a ``row_number()`` column
and its window's partition keys, and through joins that match each
row with at most one row of a side unique on the join keys, no two rows tie on ``k``. Only
keys of exactly comparable types are used here, where a tie in a sort is the equality the
grouping or the join used.

Why one module of over 700 lines: a quarter of it is this docstring (the legality table
per node and function), and the rest is one analysis, the class and its derivation per
node, which read each other's invariants; the monotonic functions and unique keys that can
stand alone already live apart (the monotonic facts on the expression classes of
:mod:`sparkext.expressions`, the unique keys in :mod:`sparkext.analysis.uniqueness`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import NoReturn

from sparkext import catalyst_names as names
from sparkext._tree import CacheSlot
from sparkext.analysis import uniqueness
from sparkext.analysis.needed import child_needs, needed_entries
from sparkext.context import current
from sparkext.expressions import (
    DESC,
    NULLS_FIRST,
    Alias,
    AttributeReference,
    EqualNullSafe,
    EqualTo,
    Expression,
    IsNotNull,
    IsNull,
    Literal,
    OpaqueExpression,
    OrderingFact,
    SortOrder,
    type_or_none,
)
from sparkext.plan import (
    Aggregate,
    Filter,
    GlobalLimit,
    Join,
    LocalLimit,
    LogicalPlan,
    Opaque,
    Project,
    Relation,
    Repartition,
    RepartitionByExpression,
    Sort,
    Union,
    Window,
)
from sparkext.predicates import contains_subquery, opaque_inside, split_conjuncts

__all__ = ["Constant", "EquivalenceProperties", "Ordering", "SortKey", "properties",
           "top_k_rows", "windows_pruned"]

_INTEGRAL = ("byte", "short", "integer", "long")
#: How many functions deep a key is followed to the ordered expression it is a function of.
_MAX_DEPTH = 8


def _exact_type(t) -> bool:
    """Types whose comparison-equal values are identical (no NaN/-0.0, no collation)."""
    n = t.name
    return n in _INTEGRAL or n.startswith("decimal") or n in (
        "date", "timestamp", "timestamp_ntz", "boolean", "string", "binary")


@dataclass(frozen=True)
class SortKey:
    """One key of an ordering: an expression, its direction and where its NULLs go."""

    expr: Expression
    descending: bool = False
    nulls_first: bool = True

    @classmethod
    def of(cls, so: SortOrder) -> SortKey:
        return cls(so.child, so.direction is DESC, so.null_ordering is NULLS_FIRST)

    def __repr__(self) -> str:
        return (f"{self.expr.sql()} {'DESC' if self.descending else 'ASC'} "
                f"NULLS {'FIRST' if self.nulls_first else 'LAST'}")


@dataclass(frozen=True)
class Ordering:
    keys: tuple[SortKey, ...]
    is_global: bool

    def __repr__(self) -> str:
        scope = "global" if self.is_global else "within partitions"
        return f"[{', '.join(map(repr, self.keys))}] ({scope})"


@dataclass(frozen=True)
class Constant:
    expr: Expression
    #: the value is NULL on every row
    is_null: bool = False
    #: every row holds the very same value (not merely one that compares equal)
    exact: bool = True


@dataclass
class EquivalenceProperties:
    """Constants, equivalence groups and orderings of one node's rows.

    Built by changing a new instance (``add_*``, ``tie``, its ``orderings`` list); its
    attributes are never rebound (:meth:`copy` takes other orderings and unique keys).
    Those :func:`properties` keeps on a node are frozen (:meth:`freeze`) and shared by
    every caller, who derives others from a :meth:`copy`."""

    constants: dict = field(default_factory=dict)   # semantic key -> Constant
    orderings: list = field(default_factory=list)   # [Ordering]
    not_null: set = field(default_factory=set)      # semantic keys
    _parent: dict = field(default_factory=dict)     # union-find over semantic keys
    _exprs: dict = field(default_factory=dict)      # semantic key -> first expression seen
    #: sets of expressions no two rows tie on (:mod:`sparkext.analysis.uniqueness`)
    unique_keys: tuple[tuple[Expression, ...], ...] = ()
    #: set by :meth:`freeze`: nothing changes these properties any more
    frozen: bool = field(default=False, repr=False, compare=False)

    # -- building -----------------------------------------------------------------------

    def copy(self, *, orderings: list[Ordering] | None = None,
             unique_keys: tuple[tuple[Expression, ...], ...] | None = None
             ) -> EquivalenceProperties:
        """A new instance with the same facts, to change (of frozen properties too), with
        ``orderings`` and ``unique_keys`` in place of these ones' when given."""
        # (.copy(): a frozen instance's constants are a read-only view of a dict)
        return EquivalenceProperties(
            self.constants.copy(), list(self.orderings) if orderings is None else orderings,
            set(self.not_null), self._parent.copy(), self._exprs.copy(),
            self.unique_keys if unique_keys is None else unique_keys)

    def freeze(self) -> EquivalenceProperties:
        """Makes these properties read-only, in place (returns them): what the node cache
        shares. ``add_*`` and ``tie`` refuse; ``constants`` becomes a read-only view,
        ``orderings`` a tuple, ``not_null`` a frozenset.

        A flag, read by the methods that change, rather than a frozen class: a
        ``__setattr__`` that refuses made the built-in rules run 2.9% more instructions (on
        fresh star-join plans), a frozen subclass the instance switches to 0.4% (every
        attribute read on these objects slower). So rebinding an attribute is not refused;
        no code does it (tests/test_node_cache.py checks the package's)."""
        if not self.frozen:
            for name, value in (("constants", MappingProxyType(self.constants)),
                                ("orderings", tuple(self.orderings)),
                                ("not_null", frozenset(self.not_null)), ("frozen", True)):
                object.__setattr__(self, name, value)
        return self

    def _find(self, k):
        # Path halving (where a member is two steps or more from its root), except in
        # frozen properties, which are only read.
        parent = self._parent
        p = parent.get(k, k)
        while p != k:
            up = parent.get(p, p)
            if up == p:
                return p
            if not self.frozen:
                parent[k] = up
            k = up
            p = parent.get(k, k)
        return k

    def _remember(self, e: Expression):
        k = e.semantic_key()
        self._exprs.setdefault(k, e)
        return k

    def add_equivalence(self, a: Expression, b: Expression) -> None:
        if self.frozen:
            _refuse()
        ka, kb = self._find(self._remember(a)), self._find(self._remember(b))
        if ka != kb:
            self._parent[kb] = ka
            # A group is constant, or not NULL, when any member is.
            for src, dst in ((ka, kb), (kb, ka)):
                if src in self.constants and dst not in self.constants:
                    self.constants[dst] = self.constants[src]
            if ka in self.not_null or kb in self.not_null:
                self.not_null.update((ka, kb))

    def add_constant(self, e: Expression, is_null: bool = False, exact: bool = True) -> None:
        if self.frozen:
            _refuse()
        k = self._find(self._remember(e))
        self.constants[k] = Constant(e, is_null, exact)
        if not is_null:
            self.not_null.add(k)

    def add_not_null(self, e: Expression) -> None:
        if self.frozen:
            _refuse()
        self.not_null.add(self._find(self._remember(e)))

    def restricted_to(self, ids: frozenset) -> EquivalenceProperties:
        """What these properties say of expressions over ``ids`` alone (a node's output).

        Facts about other expressions (the columns a Project below computed from, which
        it no longer outputs) are kept by the nodes above while nothing else can name
        those columns. A join is where something else can: its other side may produce
        the very same attribute ids (a recursive CTE read twice, ``UnionLoopRef``; a
        self-join Spark did not re-instance), and there an id names two different rows'
        values. So each side's facts are restricted to its own output, which a resolved
        join keeps apart from the other side's, before the join uses them. Each group
        keeps its members over ``ids`` (a constant, or a not-NULL, group stays so through
        any of them); an ordering keeps its keys up to the first with no such member."""
        kept: dict = {}  # group root -> members over ids, first seen first
        for k, e in self._exprs.items():
            if e.references <= ids:
                kept.setdefault(self._find(k), []).append(e)
        if len(self._exprs) == sum(map(len, kept.values())) and all(
                k.expr.references <= ids for o in self.orderings for k in o.keys):
            return self  # (unique keys are over the output already: uniqueness.py)
        out = EquivalenceProperties(unique_keys=tuple(
            k for k in self.unique_keys if all(m.references <= ids for m in k)))
        for root, (first, *others) in kept.items():
            out._remember(first)
            for other in others:
                out.add_equivalence(first, other)
            c = self.constants.get(root)
            if c is not None:
                out.add_constant(first, c.is_null, c.exact)
            if root in self.not_null:
                out.add_not_null(first)
        for o in self.orderings:
            keys = []
            for key in o.keys:
                members = kept.get(self._find(key.expr.semantic_key()), ())
                if key.expr.references <= ids:
                    keys.append(key)
                elif members:
                    keys.append(SortKey(members[0], key.descending, key.nulls_first))
                else:
                    break
            if keys:
                out.orderings.append(Ordering(tuple(keys), o.is_global))
        return out

    # -- questions ----------------------------------------------------------------------

    def group(self, e: Expression) -> list[Expression]:
        """``e`` and every expression known equal to it."""
        root = self._find(e.semantic_key())
        members = [x for k, x in self._exprs.items() if self._find(k) == root]
        return members or [e]

    def same_group(self, a: Expression, b: Expression) -> bool:
        return self._find(a.semantic_key()) == self._find(b.semantic_key())

    def constant(self, e: Expression) -> Constant | None:
        if isinstance(e, Literal):
            return Constant(e, e.value is None, True)
        c = self.constants.get(self._find(e.semantic_key()))
        if c is not None:
            return c
        # A deterministic row-level function of exact constants has one value too (not an
        # aggregate or window function: those see many rows).
        kids = e.children
        if kids and e.deterministic and not isinstance(e, AttributeReference) and not (
                isinstance(e, OpaqueExpression) and e.cls in names.MANY_ROWS):
            consts = [self.constant(k) for k in kids]
            if all(c is not None and c.exact for c in consts):
                return Constant(e, False, True)
        return None

    def is_not_null(self, e: Expression) -> bool:
        if isinstance(e, Literal):
            return e.value is not None
        if self._find(e.semantic_key()) in self.not_null:
            return True
        try:
            return not e.nullable  # what Catalyst said of it, or derived from its inputs
        except TypeError:
            return False

    def sort_properties(self, e: Expression,
                        require_global: bool) -> tuple[bool, bool] | None:
        """(descending, nulls_first) if the rows are ordered by ``e``, else None."""
        return self._sort_properties(e, require_global, None, 0)

    def _sort_properties(self, e: Expression, require_global: bool,
                         via: OrderingFact | None, depth: int) -> tuple[bool, bool] | None:
        """``via``: what the required expression is as a function of ``e`` (None: ``e``
        itself), composed down the chain so that direction flips once per decreasing
        function; NULLs stay where the ordered key put them, whatever the direction."""
        if depth > _MAX_DEPTH:
            return None
        for member in self.group(e):
            for o in self.orderings:
                if require_global and not o.is_global:
                    continue
                lead = next((k for k in o.keys if self.constant(k.expr) is None), None)
                if lead is not None and self.same_group(lead.expr, member):
                    flips = via is not None and not via.increasing
                    return lead.descending != flips, lead.nulls_first
            fact = member.ordering_fact()
            if fact is not None and fact.nulls_stay:
                found = self._sort_properties(fact.argument, require_global,
                                              fact if via is None else fact.then(via),
                                              depth + 1)
                if found is not None:
                    return found
        return None

    def normalize(self, keys: Iterable[SortOrder | SortKey]) -> list[SortKey]:
        """Requirement keys without constants, each as its group's first member, without
        repeats (a key equal to an earlier one only breaks ties that cannot exist)."""
        out: list[SortKey] = []
        seen: set = set()
        for k in keys:
            k = SortKey.of(k) if isinstance(k, SortOrder) else k
            if self.constant(k.expr) is not None:
                continue
            root = self._find(k.expr.semantic_key())
            if root in seen:
                continue
            seen.add(root)
            rep = self._exprs.get(root, k.expr)
            out.append(SortKey(rep, k.descending, k.nulls_first))
        return out

    def tie(self, e: Expression) -> None:
        """From now on only rows that tie on ``e`` are compared (the keys after ``e`` in a
        sort): ``e`` has one value among them, and so has every argument ``e`` (or an
        expression equal to it) is a strict function of, since a strict function is
        injective (``a + 1`` ties only where ``a`` ties; ``date_trunc('hour', ts)`` does
        not make ``ts`` tie). The value is exact where the type compares exactly, so a
        deterministic function of it has one value too. Nothing is learnt about NULLs:
        the tied value may be NULL."""
        if self.frozen:
            _refuse()
        for member in self.group(e):
            for x in (member, *member.strict_arguments()):
                if self.constant(x) is None:
                    self.constants[self._find(self._remember(x))] = Constant(
                        x, False, exactly_comparable(x))

    def one_row_per_tie(self) -> bool:
        """Whether no two rows tie on what is constant so far: some unique key of the rows
        has every member constant (:mod:`sparkext.analysis.uniqueness`). Then no later key can
        change the order: it is never consulted."""
        return any(all(self.constant(m) is not None for m in key) for key in self.unique_keys)

    def ordering_satisfy(self, requirement: Iterable[SortOrder | SortKey],
                         require_global: bool = True) -> bool:
        """Whether the rows already are in ``requirement`` order (SortOrders or SortKeys);
        ``require_global``: across partitions, or only within each."""
        props = self.copy()
        for key in self.normalize(requirement):
            if props.one_row_per_tie():
                return True
            if props.constant(key.expr) is not None:
                continue
            sp = props.sort_properties(key.expr, require_global)
            if sp is None:
                return False
            desc, nulls_first = sp
            if desc != key.descending:
                return False
            if nulls_first != key.nulls_first and not props.is_not_null(key.expr):
                return False
            # Rows that tie on this key have one value of it: the next key is compared
            # only among them (exact or not: the comparator itself sees them as equal).
            props.tie(key.expr)
        return True

    def succinct_orderings(self) -> list[Ordering]:
        """The orderings without constant keys, keys as their group's first member, no
        repeated keys, and no ordering that is a prefix of another of the same reach."""
        norm = []
        for o in self.orderings:
            keys = []
            for k in self.normalize(o.keys):
                keys.append(k)
                fact = k.expr.ordering_fact()
                if fact is not None and not fact.strict:
                    break
            if keys:
                norm.append(Ordering(tuple(keys), o.is_global))

        def implies(p: Ordering, o: Ordering) -> bool:
            return (p.is_global or not o.is_global) and p.keys[:len(o.keys)] == o.keys

        kept: list[Ordering] = []
        for i, o in enumerate(norm):
            # Drop o if another ordering implies it (for equal ones, keep the first).
            if not any(implies(p, o) and (not implies(o, p) or j < i)
                       for j, p in enumerate(norm) if j != i):
                kept.append(o)
        return kept


def _refuse() -> NoReturn:
    raise TypeError("these EquivalenceProperties are kept on a plan node and shared "
                    "(sparkext.analysis.ordering.properties): change a copy() of them instead")


# ---------------------------------------------------------------------------------------------
# Derivation per node


def properties(plan: LogicalPlan) -> EquivalenceProperties:
    """The equivalence properties of ``plan``'s rows (kept on the node, frozen)."""
    return _PROPERTIES.get(plan)


_PROPERTIES: CacheSlot[EquivalenceProperties] = CacheSlot(
    "equivalence_properties", lambda plan: _with_unique_keys(_derive(plan), plan).freeze())


def _with_unique_keys(p: EquivalenceProperties, plan: LogicalPlan) -> EquivalenceProperties:
    """``p`` with ``plan``'s own unique keys (:mod:`sparkext.analysis.uniqueness`), whatever
    ``_derive`` copied from a child: only keys of exactly comparable types, where a tie in
    a sort is the same value the grouping or the join compared."""
    keys = tuple(k for k in uniqueness.unique_keys(plan)
                 if all(exactly_comparable(m) for m in k))
    if keys == p.unique_keys:
        return p
    return p.copy(unique_keys=keys)


def _keys(order) -> tuple[SortKey, ...]:
    return tuple(SortKey.of(o) for o in order)


# The JVM's "ordering" pre-check (jvm-shim Prechecks.scala) over-approximates what this
# derivation and uniqueness.py can find, to skip calls for sorts nothing can change: a new
# node kind that makes orderings, constants, equalities or unique keys here must be admitted
# there too (tests/test_prechecks.py compares the two on TPC-H, TPC-DS and the corpus); the
# window functions it reads it is sent (catalyst_names.ORDERING_PRECHECK).
def _derive(plan: LogicalPlan) -> EquivalenceProperties:
    match plan:
        case Relation(output=out, ordering=ordering, ordering_is_global=is_global):
            p = EquivalenceProperties()
            for a in out:
                if not a.nullable:
                    p.add_not_null(a)
            if ordering:
                p.orderings.append(Ordering(_keys(ordering), is_global))
            return p
        case Sort(order=order, is_global=is_global, child=child):
            global_ = (is_global or _range_partitioned_for(child, order)
                       or _one_partition(child))
            return properties(child).copy(orderings=[Ordering(_keys(order), global_)])
        case Filter(condition=cond, child=child):
            p = properties(child).copy()
            for c in split_conjuncts(cond):
                if contains_subquery(c):
                    p.orderings.clear()  # Catalyst turns it into a join after sparkext has run
                else:
                    _learn(p, c)
            return p
        case Project(project_list=exprs, child=child):
            p = properties(child).copy()
            with_subquery = [contains_subquery(e) for e in exprs]
            if any(with_subquery):
                p.orderings.clear()  # a scalar subquery becomes a join after sparkext has run
            for e, subquery in zip(exprs, with_subquery):
                if isinstance(e, Alias) and not subquery:
                    attr = e.to_attribute()
                    if isinstance(e.child, Literal):
                        p.add_constant(attr, e.child.value is None)
                    elif e.child.deterministic:
                        p.add_equivalence(e.child, attr)
            return p
        case GlobalLimit() | Opaque() if (sorted_input := _top_k_input(plan)) is not None:
            return properties(sorted_input)
        case Window(child=child):
            return _window(plan, properties(child))
        case Union(children=(only,)):
            return properties(only)
        case _ if plan.keeps_child_order:
            return properties(plan.children[0])
        case _ if plan.keeps_child_equivalences:
            return properties(plan.children[0]).copy(orderings=[])
        case Join(left=left, right=right, join_type=jt, condition=cond):
            return _join(left, right, jt, cond)
        case Aggregate(aggregate_expressions=aggs, child=child):
            return _aggregate(aggs, properties(child))
        case _:
            return EquivalenceProperties()


def _learn(p: EquivalenceProperties, c: Expression) -> None:
    """What one filter conjunct says about every row that passes it."""
    if not c.deterministic:
        return
    match c:
        case EqualTo(left=x, right=Literal(value=v)) | EqualTo(left=Literal(value=v), right=x) \
                if v is not None:
            p.add_constant(x, False, exactly_comparable(x))
        case EqualNullSafe(left=x, right=Literal(value=v)) | \
                EqualNullSafe(left=Literal(value=v), right=x):
            p.add_constant(x, v is None, exactly_comparable(x))
        case IsNull(child=x):
            p.add_constant(x, True, True)
        case EqualTo(left=a, right=b):
            p.add_equivalence(a, b)
            p.add_not_null(a)
            p.add_not_null(b)
        case IsNotNull(child=x):
            p.add_not_null(x)
        case _:
            if c.null_intolerant:
                for x in c.children:
                    if isinstance(x, AttributeReference):
                        p.add_not_null(x)


def exactly_comparable(x: Expression) -> bool:
    """Whether values of ``x`` that compare equal are identical (no NaN/-0.0, no
    collation): then a function of ``x`` has one value among rows that tie on ``x``."""
    t = type_or_none(x)
    return t is not None and _exact_type(t)


def _range_partitioned_for(child: LogicalPlan, order) -> bool:
    """Whether ``child`` is range-partitioned on keys that agree with ``order`` on their
    common prefix: each partition then holds one range, in partition order, and a sort
    within partitions is a global sort."""
    node = _through_in_place(child)
    if not isinstance(node, RepartitionByExpression):
        return False
    keys = [k for k in node.partition_expressions if isinstance(k, SortOrder)]
    if not keys or len(keys) < len(node.partition_expressions):  # (all of them sort orders)
        return False
    p = properties(child)
    return all(a.direction == b.direction and a.null_ordering == b.null_ordering
               and p.same_group(a.child, b.child) for a, b in zip(keys, order))


def _int_literal(e: Expression) -> int | None:
    """The value of an INT literal (Catalyst's ``IntegerLiteral``), else None."""
    if isinstance(e, Literal) and e.data_type.name == "integer" and isinstance(e.value, int):
        return e.value
    return None


def _offset_of(plan: LogicalPlan) -> int | None:
    """The literal row count an Offset skips, or None when ``plan`` is no such Offset
    (Catalyst's Offset is not mirrored: an :class:`Opaque` that knows it is one)."""
    skipped = plan.offset_expr if isinstance(plan, Opaque) else None
    return None if skipped is None else _int_literal(skipped)


def _top_k_input(plan: LogicalPlan) -> LogicalPlan | None:
    """The Sort, or Project over a Sort, whose first rows ``plan`` keeps when Spark's
    planner makes ``plan`` one TakeOrderedAndProjectExec (the module's "Top-K"), else
    None. Its rows are then ``plan``'s, in order, in one partition."""
    ctx = current()
    threshold = None if ctx is None else ctx.top_k_threshold
    if threshold is None:
        return None  # the JVM did not say: no limit keeps order
    match plan:
        case Opaque(children_=(GlobalLimit() as limit,)) if _offset_of(plan) is not None:
            # Offset(o, Limit(n, ...)) (LimitAndOffset): the first n rows, less the first o;
            # the threshold applies to n alone.
            return _top_k_input(limit)
        case GlobalLimit(limit_expr=outer, child=LocalLimit(limit_expr=inner, child=below)):
            n = _int_literal(outer)
            if n is None or n != _int_literal(inner) or n >= threshold:
                return None
            return below if _is_sort_output(below) else None
        case GlobalLimit(limit_expr=outer, child=Opaque(
                children_=(LocalLimit(limit_expr=inner, child=below),)) as offset):
            # Limit(n, Offset(o, LocalLimit(n + o, ...))) (OffsetAndLimit): rows o to o + n.
            n, o, local = _int_literal(outer), _offset_of(offset), _int_literal(inner)
            if n is None or o is None or local != n + o or local >= threshold:
                return None
            return below if _is_sort_output(below) else None
        case _:
            return None


def top_k_rows(plan: LogicalPlan) -> tuple[int, Sort] | None:
    """For a limit over a global Sort (through one deterministic Project), the number of
    the sort's first rows the plan reads and the Sort: ``Limit(n, Sort)`` reads ``n``,
    ``Offset(o, Limit(n, Sort))`` reads ``n`` (and drops ``o`` of them),
    ``Limit(n, Offset(o, LocalLimit(n + o, Sort)))`` reads ``n + o``. None for anything
    else. Whatever Spark plans for it (a TakeOrderedAndProject or a sort and a limit), the
    plan's rows are among those first rows of the sorted input."""
    match plan:
        case Opaque(children_=(GlobalLimit() as limit,)) if _offset_of(plan) is not None:
            return top_k_rows(limit)
        case GlobalLimit(limit_expr=outer, child=LocalLimit(limit_expr=inner, child=below)):
            n = _int_literal(outer)
            if n is None or n != _int_literal(inner):
                return None
        case GlobalLimit(limit_expr=outer, child=Opaque(
                children_=(LocalLimit(limit_expr=inner, child=below),)) as offset):
            n, o = _int_literal(outer), _offset_of(offset)
            if n is None or o is None or _int_literal(inner) != n + o:
                return None
            n += o
        case _:
            return None
    if isinstance(below, Project) and below.deterministic:
        below = below.child
    if isinstance(below, Sort) and below.is_global:
        return n, below
    return None


def _is_sort_output(plan: LogicalPlan) -> bool:
    """A global Sort, or one Project directly over it: the two inputs a top-K takes. The
    Project must still be there, as it is, when Spark plans the limit (_stays_in_place)."""
    if isinstance(plan, Project):
        if not _stays_in_place(plan):
            return False
        plan = plan.child
    return isinstance(plan, Sort) and plan.is_global


#: Python UDF calls: Spark's ExtractPythonUDFs batch, after sparkext, moves them into a
#: BatchEvalPython/ArrowEvalPython node below the Project or Filter that holds them.
_PYTHON_UDFS = frozenset(n for n in names.USER_DEFINED if n.startswith("Python"))


def _stays_in_place(node: Project | Filter) -> bool:
    """Whether Spark plans ``node`` as it is, over its input's partitions, after sparkext:
    deterministic, without a subquery (RewriteSubquery turns IN/EXISTS and scalar subqueries
    into joins, which may shuffle) and without a Python UDF (extracted into a node of its
    own, which SpecialLimits does not look through)."""
    return node.deterministic and not any(
        subquery or cls in _PYTHON_UDFS
        for e in node.expressions for cls, subquery, _ in opaque_inside(e))


def _through_in_place(plan: LogicalPlan) -> LogicalPlan:
    """``plan`` below the Projects and Filters on top of it that keep its partitions."""
    node = plan
    while isinstance(node, (Project, Filter)) and _stays_in_place(node):
        node = node.children[0]
    return node


def _one_partition(plan: LogicalPlan) -> bool:
    """Whether Spark plans ``plan``'s rows as one partition: a repartition or coalesce to
    one partition, through Projects and Filters that keep it (_stays_in_place). (Adaptive execution never
    changes a partition count the user gave.)"""
    match _through_in_place(plan):
        case Repartition(num_partitions=1) | RepartitionByExpression(opt_num_partitions=1):
            return True
        case _:
            return False


def _window(window: Window, child: EquivalenceProperties) -> EquivalenceProperties:
    """WindowExec asks for its input clustered by the partition keys and sorted, within
    each partition, by them (ascending) then the order keys, and passes that order on.
    Without partition keys its input is gathered into one partition: the order is global.
    (The input's own order does not survive the shuffle; when Spark plans none, the
    input already satisfied the same requirement.)

    A column that never decreases along that order within a partition orders the rows
    too: by the partition keys, then it, then the order keys (rows that tie on it within
    a partition are a run of consecutive rows, still in the order keys' order). Those
    are window functions (``row_number``, ``rank``, ...,
    :data:`~sparkext.catalyst_names.NONDECREASING_WINDOW_FUNCTIONS`: never NULL) and
    ``count`` and ``max`` over a frame that grows from the partition's first row
    (``count`` never NULL; ``max`` NULL, first, until a value comes); ``min`` over one
    never increases (descending, NULLs first)
    (:data:`~sparkext.catalyst_names.RUNNING_MONOTONIC_AGGREGATES`). DataFusion's window
    equivalences do the same."""
    partition_spec, order_spec = window.partition_spec, window.order_spec
    part = tuple(SortKey(e) for e in partition_spec)
    keys = part + _keys(order_spec)
    p = child.copy(orderings=[Ordering(keys, not partition_spec)] if keys else [])
    monotonic = [(c, False, True) for c, _ in
                 window.columns_of(names.NONDECREASING_WINDOW_FUNCTIONS)]
    monotonic += [(c, names.RUNNING_MONOTONIC_AGGREGATES[f], f == names.COUNT)
                  for c, f in window.columns_of(names.RUNNING_MONOTONIC_AGGREGATES,
                                                running=True)]
    for column, descending, never_null in monotonic:
        p.orderings.append(Ordering(part + (SortKey(column, descending, True),)
                                    + _keys(order_spec), not partition_spec))
        if never_null:
            p.add_not_null(column)
    return p


def windows_pruned(plan: LogicalPlan) -> int:
    """How many Windows in ``plan`` produce no column anything above them needs: the
    Windows that Catalyst's ColumnPruning, which runs again after sparkext (in the
    RewriteSubquery batch), replaces by their input, taking their order with them.

    An ordering read from a Window holds only if the Window stays. A rule that removes a
    sort, or drops its keys, must not leave a Window it relied on unneeded (a sort by
    ``k, rn`` over ``rn = row_number() OVER (ORDER BY k)``, its ``rn`` dropped after the
    sort, keeps that Window alive alone). The needed set is what each node reads, plus what
    is needed of its output (a Project, an Aggregate and a Window read only for the entries
    that are needed: :func:`sparkext.analysis.needed.child_needs`, ``through_any_node``, as
    Catalyst narrows below any node); a counted Window's own keys stay needed, so a Window that only it
    needed is not counted. The count is still exact for the use made of it: a change that
    only removes sorts or keys leaves at least one more counted Window whenever it leaves
    one more that pruning removes (the highest of those new ones is counted)."""
    def drop_unneeded(node: LogicalPlan, needed: frozenset) -> int:
        own = int(isinstance(node, Window)
                  and not needed_entries(node.window_expressions, needed))
        return own + sum(drop_unneeded(c, n) for c, n in zip(
            node.children, child_needs(node, needed, through_any_node=True)))
    if not plan.contains_any((Window,)):
        return 0
    return drop_unneeded(plan, plan.output_ids)


def _join(left, right, jt, cond) -> EquivalenceProperties:
    # Which sides' equivalences and constants hold on the output (joins.JoinFacts).
    from_left, from_right, from_condition = jt.facts.equivalences_from
    if not (from_left or from_right) or not left.output_ids.isdisjoint(right.output_ids):
        return EquivalenceProperties()  # (sides sharing an output id: not a resolved join)
    # Each side speaks of its own output only: below it, ids may repeat the other side's
    # (EquivalenceProperties.restricted_to).
    sides = [properties(s).restricted_to(s.output_ids) for s, used in
             ((left, from_left), (right, from_right)) if used]
    p = sides[0].copy(orderings=[])
    if len(sides) == 2:
        _merge(p, sides[1])
    if from_condition:
        for c in split_conjuncts(cond):
            _learn(p, c)
    return p


def _merge(p: EquivalenceProperties, other: EquivalenceProperties) -> None:
    for k, e in other._exprs.items():
        p._exprs.setdefault(k, e)
    for k in other._exprs:
        root = other._find(k)
        if root != k:
            p.add_equivalence(other._exprs[root], other._exprs[k])
    for c in other.constants.values():
        p.add_constant(c.expr, c.is_null, c.exact)
    for k in other.not_null:
        p.not_null.add(p._find(k))


def _aggregate(aggs, child: EquivalenceProperties) -> EquivalenceProperties:
    p = EquivalenceProperties()
    for e in aggs:
        target = e.child if isinstance(e, Alias) else e
        c = child.constant(target)
        if c is not None:
            attr = e.to_attribute() if isinstance(e, Alias) else e
            p.add_constant(attr, c.is_null, c.exact)
    return p
