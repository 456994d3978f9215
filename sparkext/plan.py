"""The mirror of Catalyst logical plans.

Each node is a frozen dataclass whose fields follow the Catalyst constructor; ``output``,
``references``, ``expressions`` and ``children`` are derived and cached. Leaves (file
scans, ``LocalRelation``, ``Range``, DSv2 scans, cached relations, ...) are all
:class:`Relation`; any other Catalyst node without a mirror class is :class:`Opaque`: its
children can be rewritten, but rules must not move anything through it.

    >>> from sparkext import types as T
    >>> from sparkext.expressions import AttributeReference, GreaterThan, lit
    >>> from sparkext.plan import Filter, Relation
    >>> a = AttributeReference("a", T.INT, True, None, 1)
    >>> plan = Filter(GreaterThan(a, lit(1)), Relation("LocalRelation", (a,), 1, "t"))
    >>> print(plan)
    Filter (a#1 > 1)
    +- LocalRelation t [a#1]
    >>> plan.condition.references <= plan.child.output_ids
    True
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from sparkext import catalyst_names as names
from sparkext._tree import TreeNode, arg, fact, mirror
from sparkext.facts import DataFile, RelationFacts
from sparkext.expressions import (
    Alias,
    AttributeReference,
    Expression,
    OpaqueExpression,
    SortOrder,
    Value,
    to_attribute,
)

# ExistenceJoin is re-exported: a join type, long imported from here.
from sparkext.joins import ExistenceJoin, JoinType, join_type  # noqa: F401
from sparkext.kinds import Item, Kind, Shape

_L = "org.apache.spark.sql.catalyst.plans.logical."
_P = TypeVar("_P", bound="LogicalPlan")

#: The facts the analyses read on the plan classes (the comments on :class:`LogicalPlan`
#: say what each means and which analysis reads it): every concrete class states each,
#: True or False, or ``@mirror`` refuses it.
NODE_FACTS = ("keeps_child_rows", "keeps_child_columns", "commutes_with_filters",
              "keeps_child_order", "keeps_child_equivalences", "keeps_child_unique_keys")


class LogicalPlan(TreeNode):
    """Base of all plan nodes."""

    __slots__ = ()
    _expr_fields: ClassVar[tuple[tuple[str, Shape], ...]] = ()
    _read_expressions: ClassVar[staticmethod[[Any], tuple[Any, ...]]] = staticmethod(
        lambda node: ())
    _args: ClassVar[tuple[tuple[str, Kind], ...]] = ()

    # -- facts the analyses read (NODE_FACTS) ----------------------------------------------
    # Undeclared here: each concrete class states every one, True or False, and @mirror
    # refuses a class that leaves one out (_check_declaration), so a new node is a decision in
    # every analysis, never a silent False. They differ because the analyses ask different
    # questions of the same nodes; each analysis keeps its own algorithm and reads only its
    # fact.

    #: Every output row carries the values of one input row unchanged (rows may be dropped,
    #: repeated or widened with new columns): what holds of the child's rows holds of its
    #: own. Read by :mod:`sparkext.analysis.constraints`. (Not Distinct or Deduplicate: grouping
    #: normalises floating-point keys; they have their own case.)
    keeps_child_rows: ClassVar[bool]
    #: The output is exactly the child's columns, and the node needs only its own
    #: references from below: pruning passes straight through. Read by prune_columns.
    keeps_child_columns: ClassVar[bool]
    #: A filter above gives the same rows below it, whatever the filter reads
    #: ("filter-commutative"). Read by push_down_filters. (Not Filter, Limit, Sample: a
    #: limit or sample picks rows first; Filter is combined instead.)
    commutes_with_filters: ClassVar[bool]
    #: The child's order holds on the output, within and across partitions (and so do its
    #: equivalences and constants). Read by :mod:`sparkext.analysis.ordering`.
    keeps_child_order: ClassVar[bool]
    #: The child's equivalences and constants hold on the output, its order does not (a
    #: shuffle, or a single-partition exchange reading blocks in any order). Read by
    #: :mod:`sparkext.analysis.ordering`.
    keeps_child_equivalences: ClassVar[bool]
    #: Each output row is one input row, no input row comes out twice, and the child's
    #: columns come out unchanged (rows may be dropped, columns added): the child's unique
    #: keys are the node's. Read by :mod:`sparkext.analysis.uniqueness`. (Not
    #: ``keeps_child_rows``, which lets rows repeat. Not Sample: with replacement it repeats
    #: rows, and uniqueness reads the instance. Distinct and Deduplicate group: their own
    #: case.)
    keeps_child_unique_keys: ClassVar[bool]

    @classmethod
    def _check_declaration(cls) -> None:
        missing = [f for f in NODE_FACTS if not hasattr(cls, f)]
        vague = [f"{f} as {getattr(cls, f)!r}" for f in NODE_FACTS
                 if hasattr(cls, f) and not isinstance(getattr(cls, f), bool)]
        if missing or vague:
            wrong = "; ".join([*([f"does not declare {', '.join(missing)}"] if missing else []),
                               *([f"declares {', '.join(vague)}"] if vague else [])])
            raise TypeError(
                f"{cls.__qualname__} {wrong}: every plan class states each of "
                "sparkext.plan.NODE_FACTS, True or False (the comments on LogicalPlan say "
                "what each means and which analysis reads it)")

    @property
    def output(self) -> tuple[AttributeReference, ...]:
        """The columns this node produces, in order."""
        return self.children[0].output

    @fact
    def output_ids(self) -> frozenset:
        """The expression ids of ``output``."""
        if type(self).output is LogicalPlan.output:  # the child's very columns (Filter, Sort, ...)
            return self.children[0].output_ids
        return frozenset(a.expr_id for a in self.output)

    @fact
    def input_ids(self) -> frozenset:
        """The expression ids the children produce."""
        return frozenset().union(*(c.output_ids for c in self.children))

    @fact
    def expressions(self) -> tuple[Expression, ...]:
        """Every top-level expression of this node, in constructor order (as Catalyst)."""
        return self._read_expressions(self)

    @fact
    def references(self) -> frozenset:
        """The expression ids this node's expressions read."""
        return frozenset().union(*(e.references for e in self.expressions))

    @fact
    def deterministic(self) -> bool:
        """Whether every expression of this node is deterministic."""
        return all(e.deterministic for e in self.expressions)

    def map_expressions(self: _P, fn: Callable[[Expression], Expression]) -> _P:
        """This node with ``fn`` applied to each top-level expression; itself if none changed."""
        old = self.expressions
        new = tuple(fn(e) for e in old)
        if all(a is b for a, b in zip(old, new)):
            return self
        it = iter(new)
        return self.copy(**{name: shape.unflatten(getattr(self, name), it)
                            for name, shape in self._expr_fields})

    def transform_expressions_up(self: _P, fn: Callable[[Expression], Expression]) -> _P:
        return self.map_expressions(lambda e: e.transform_up(fn))

    def transform_expressions_down(self: _P, fn: Callable[[Expression], Expression]) -> _P:
        return self.map_expressions(lambda e: e.transform_down(fn))

    # -- text ------------------------------------------------------------------------------

    def simple_string(self) -> str:
        args = ", ".join(_show_arg(getattr(self, n), k) for n, k in self._args
                         if k.item is not Item.PLAN and not _is_default(self, n))
        return f"{type(self).__name__} {args}".rstrip()

    def tree_string(self) -> str:
        """The plan as indented text, like Catalyst's ``treeString``."""
        lines: list[str] = []

        def go(node: LogicalPlan, prefix: str, last: bool, top: bool) -> None:
            branch = "" if top else prefix + ("+- " if last else ":- ")
            lines.append(branch + node.simple_string())
            kids = node.children
            for i, c in enumerate(kids):
                go(c, "" if top else prefix + ("   " if last else ":  "), i == len(kids) - 1, False)

        go(self, "", True, True)
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.simple_string()

    def __str__(self) -> str:
        return self.tree_string()


def _is_default(node: LogicalPlan, name: str) -> bool:
    f = node.__dataclass_fields__[name]
    return f.default is not dataclasses.MISSING and getattr(node, name) == f.default


def _show_arg(v: object, kind: Kind) -> str:
    if isinstance(v, tuple):
        if kind.shape is Shape.SEQS:
            return "[" + ", ".join("[" + ", ".join(map(repr, s)) + "]" for s in v) + "]"
        return "[" + ", ".join(map(repr, v)) + "]"
    return repr(v)


def _named_output(exprs: Iterable[Expression]) -> tuple[AttributeReference, ...]:
    return tuple(to_attribute(e) for e in exprs)


@dataclass(frozen=True, slots=True)
class AliasIdentifier:
    name: str
    qualifier: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return ".".join(self.qualifier + (self.name,))


# ---------------------------------------------------------------------------------------------
# Nodes


@mirror(_L + "Project", pattern="PROJECT")
class Project(LogicalPlan):
    keeps_child_rows = keeps_child_columns = commutes_with_filters = keeps_child_order = False
    keeps_child_equivalences = keeps_child_unique_keys = False

    project_list: tuple[Expression, ...] = arg("es")
    child: LogicalPlan = arg("p")

    @fact
    def output(self) -> tuple[AttributeReference, ...]:
        return _named_output(self.project_list)


@mirror(_L + "Filter", pattern="FILTER")
class Filter(LogicalPlan):
    keeps_child_columns = keeps_child_unique_keys = True
    keeps_child_rows = commutes_with_filters = keeps_child_order = keeps_child_equivalences = False

    condition: Expression = arg("e")
    child: LogicalPlan = arg("p")


@mirror(_L + "Join", pattern="JOIN")
class Join(LogicalPlan):
    keeps_child_rows = keeps_child_columns = commutes_with_filters = keeps_child_order = False
    keeps_child_equivalences = keeps_child_unique_keys = False

    left: LogicalPlan = arg("p")
    right: LogicalPlan = arg("p")
    #: a :mod:`sparkext.joins` join type; a valid wire name (``"Inner"``) or a
    #: :class:`Value` Spark sent is converted, anything else refused at construction
    join_type: JoinType = arg("jt")
    condition: Expression | None = arg("e?", default=None)
    #: Catalyst's JoinHint, kept as it came; None for a new join means no hint.
    hint: Value | None = arg("x", default=None)

    def __post_init__(self) -> None:
        if not isinstance(self.join_type, JoinType):
            object.__setattr__(self, "join_type", join_type(self.join_type))

    @fact
    def output(self) -> tuple[AttributeReference, ...]:
        return self.join_type.output(self.left.output, self.right.output)


@mirror(_L + "Aggregate", pattern="AGGREGATE")
class Aggregate(LogicalPlan):
    keeps_child_rows = keeps_child_columns = commutes_with_filters = keeps_child_order = False
    keeps_child_equivalences = keeps_child_unique_keys = False

    grouping_expressions: tuple[Expression, ...] = arg("es")
    aggregate_expressions: tuple[Expression, ...] = arg("es")
    child: LogicalPlan = arg("p")
    hint: Value | None = arg("x?", default=None, since="4.0")  # 3.5 has no hint

    @fact
    def output(self) -> tuple[AttributeReference, ...]:
        return _named_output(self.aggregate_expressions)


@mirror(_L + "Sort", pattern="SORT")
class Sort(LogicalPlan):
    """ORDER BY (``is_global``) or SORT BY (within partitions)."""
    keeps_child_rows = keeps_child_columns = commutes_with_filters = keeps_child_unique_keys = True
    keeps_child_order = keeps_child_equivalences = False

    order: tuple[SortOrder, ...] = arg("es")
    is_global: bool = arg("b")
    child: LogicalPlan = arg("p")
    hint: Value | None = arg("x?", default=None, since="4.0")  # 3.5 has no hint


@mirror(_L + "GlobalLimit", pattern="LIMIT")
class GlobalLimit(LogicalPlan):
    keeps_child_rows = keeps_child_columns = keeps_child_equivalences = True
    keeps_child_unique_keys = True
    commutes_with_filters = keeps_child_order = False

    limit_expr: Expression = arg("e")
    child: LogicalPlan = arg("p")


@mirror(_L + "LocalLimit", pattern="LIMIT")
class LocalLimit(LogicalPlan):
    keeps_child_rows = keeps_child_columns = keeps_child_order = keeps_child_unique_keys = True
    commutes_with_filters = keeps_child_equivalences = False

    limit_expr: Expression = arg("e")
    child: LogicalPlan = arg("p")


@mirror(_L + "Window", pattern="WINDOW")
class Window(LogicalPlan):
    keeps_child_rows = keeps_child_equivalences = keeps_child_unique_keys = True
    keeps_child_columns = commutes_with_filters = keeps_child_order = False

    window_expressions: tuple[Expression, ...] = arg("es")
    partition_spec: tuple[Expression, ...] = arg("es")
    order_spec: tuple[SortOrder, ...] = arg("es")
    child: LogicalPlan = arg("p")
    hint: Value | None = arg("x?", default=None, since="4.0")  # 3.5 has no hint

    @fact
    def output(self) -> tuple[AttributeReference, ...]:
        return self.child.output + _named_output(self.window_expressions)

    def columns_of(self, functions: Iterable[str], *, running: bool = False
                   ) -> list[tuple[AttributeReference, str]]:
        """(column, function) for the output columns holding a window function of one of
        ``functions`` (Catalyst class names, :mod:`sparkext.catalyst_names`) over exactly
        this Window's partition and order keys (a WindowSpecDefinition's children are
        those keys, then the frame). ``running``: aggregate functions instead, over a frame
        that starts at the partition's first row (``UNBOUNDED PRECEDING``, rows or range):
        whatever its end, the frame of each row holds the frame of the row before it."""
        wanted = [e.semantic_key() for e in (*self.partition_spec, *self.order_spec)]
        out = []
        for ne in self.window_expressions:
            match ne:
                case Alias(child=OpaqueExpression(cls=names.WINDOW_EXPRESSION,
                                                  children_=(OpaqueExpression() as fn,
                                                             OpaqueExpression() as spec))):
                    if [e.semantic_key() for e in spec.children_[:-1]] != wanted:
                        continue
                    if running:
                        match fn, spec.children_[-1]:
                            case (OpaqueExpression(cls=names.AGGREGATE_EXPRESSION,
                                                   children_=(OpaqueExpression() as agg, *_)),
                                  OpaqueExpression(cls=names.SPECIFIED_WINDOW_FRAME,
                                                   children_=(OpaqueExpression(
                                                       cls=names.UNBOUNDED_PRECEDING), _))):
                                if agg.cls in functions:
                                    out.append((ne.to_attribute(), agg.cls))
                    elif fn.cls in functions:
                        out.append((ne.to_attribute(), fn.cls))
        return out


@mirror(_L + "Union", pattern="UNION")
class Union(LogicalPlan):
    keeps_child_rows = keeps_child_columns = commutes_with_filters = keeps_child_order = False
    keeps_child_equivalences = keeps_child_unique_keys = False

    children: tuple[LogicalPlan, ...] = arg("ps")
    by_name: bool = arg("b", default=False)
    allow_missing_col: bool = arg("b", default=False)

    @fact
    def output(self) -> tuple[AttributeReference, ...]:
        outs = [c.output for c in self.children]
        return tuple(attrs[0].with_nullability(any(a.nullable for a in attrs))
                     for attrs in zip(*outs))


@mirror(_L + "Distinct", pattern="DISTINCT_LIKE")
class Distinct(LogicalPlan):
    keeps_child_equivalences = True
    keeps_child_rows = keeps_child_columns = commutes_with_filters = keeps_child_order = False
    keeps_child_unique_keys = False

    child: LogicalPlan = arg("p")


@mirror(_L + "Deduplicate", pattern="DISTINCT_LIKE")
class Deduplicate(LogicalPlan):
    keeps_child_equivalences = True
    keeps_child_rows = keeps_child_columns = commutes_with_filters = keeps_child_order = False
    keeps_child_unique_keys = False

    keys: tuple[AttributeReference, ...] = arg("es")
    child: LogicalPlan = arg("p")
    spec: Value | None = arg("x?", default=None, since="4.3")


@mirror(_L + "Generate", pattern="GENERATE")
class Generate(LogicalPlan):
    """``explode`` and friends: ``generator_output`` columns appended to the child's."""
    keeps_child_rows = keeps_child_equivalences = True
    keeps_child_columns = commutes_with_filters = keeps_child_order = False
    keeps_child_unique_keys = False

    generator: Expression = arg("e")
    unrequired_child_index: tuple[int, ...] = arg("is")
    outer: bool = arg("b")
    qualifier: str | None = arg("s?")
    generator_output: tuple[AttributeReference, ...] = arg("es")
    child: LogicalPlan = arg("p")

    @property
    def required_child_output(self) -> tuple[AttributeReference, ...]:
        skip = set(self.unrequired_child_index)
        return tuple(a for i, a in enumerate(self.child.output) if i not in skip)

    @property
    def qualified_generator_output(self) -> tuple[AttributeReference, ...]:
        out = self.generator_output
        if self.qualifier is not None:
            out = tuple(a.with_qualifier((self.qualifier,)) for a in out)
        if self.outer:
            out = tuple(a.with_nullability(True) for a in out)
        return out

    @fact
    def output(self) -> tuple[AttributeReference, ...]:
        return self.required_child_output + self.qualified_generator_output

    @property
    def references(self) -> frozenset:
        # Like Catalyst: what the generator reads, not the attributes it defines.
        return self.generator.references


@mirror(_L + "Expand")
class Expand(LogicalPlan):
    """GROUPING SETS / ROLLUP / CUBE: one output row per projection per input row."""
    keeps_child_rows = keeps_child_columns = commutes_with_filters = keeps_child_order = False
    keeps_child_equivalences = keeps_child_unique_keys = False

    projections: tuple[tuple[Expression, ...], ...] = arg("ess")
    output: tuple[AttributeReference, ...] = arg("es")
    child: LogicalPlan = arg("p")

    @property
    def references(self) -> frozenset:
        return frozenset().union(*(e.references for p in self.projections for e in p))


@mirror(_L + "Repartition", pattern="REPARTITION_OPERATION")
class Repartition(LogicalPlan):
    keeps_child_rows = keeps_child_columns = commutes_with_filters = keeps_child_equivalences = True
    keeps_child_unique_keys = True
    keeps_child_order = False

    num_partitions: int = arg("i")
    shuffle: bool = arg("b")
    child: LogicalPlan = arg("p")


@mirror(_L + "RepartitionByExpression", pattern="REPARTITION_OPERATION")
class RepartitionByExpression(LogicalPlan):
    keeps_child_rows = keeps_child_columns = commutes_with_filters = keeps_child_equivalences = True
    keeps_child_unique_keys = True
    keeps_child_order = False

    partition_expressions: tuple[Expression, ...] = arg("es")
    child: LogicalPlan = arg("p")
    opt_num_partitions: int | None = arg("i?", default=None)
    opt_advisory_partition_size: int | None = arg("l?", default=None)


@mirror(_L + "RebalancePartitions", pattern="REBALANCE_PARTITIONS")
class RebalancePartitions(LogicalPlan):
    keeps_child_rows = keeps_child_columns = commutes_with_filters = keeps_child_equivalences = True
    keeps_child_unique_keys = True
    keeps_child_order = False

    partition_expressions: tuple[Expression, ...] = arg("es")
    child: LogicalPlan = arg("p")
    opt_num_partitions: int | None = arg("i?", default=None)
    opt_advisory_partition_size: int | None = arg("l?", default=None)


@mirror(_L + "SubqueryAlias", pattern="SUBQUERY_ALIAS")
class SubqueryAlias(LogicalPlan):
    keeps_child_rows = keeps_child_columns = commutes_with_filters = keeps_child_order = True
    keeps_child_unique_keys = True
    keeps_child_equivalences = False

    identifier: AliasIdentifier = arg("aid")
    child: LogicalPlan = arg("p")

    @fact
    def output(self) -> tuple[AttributeReference, ...]:
        q = self.identifier.qualifier + (self.identifier.name,)
        return tuple(a.with_qualifier(q) for a in self.child.output)


@mirror(_L + "Sample")
class Sample(LogicalPlan):
    keeps_child_rows = keeps_child_columns = keeps_child_order = True
    commutes_with_filters = keeps_child_equivalences = keeps_child_unique_keys = False

    lower_bound: float = arg("d")
    upper_bound: float = arg("d")
    with_replacement: bool = arg("b")
    # Before 4.2 the seed is a plain long (never None) and there is no sample method.
    seed: int | None = arg("l?", kind_before=("4.2", "l"))
    child: LogicalPlan = arg("p")
    sample_method: Value | None = arg("x", default=None, since="4.2")

    @property
    def deterministic(self) -> bool:
        # Which rows a sample keeps depends on the rows' order and partitioning.
        return False


# ---------------------------------------------------------------------------------------------
# Leaves and everything else


@mirror(_L + "Relation", special=True)
class Relation(LogicalPlan):
    """A leaf: a file scan, table, ``LocalRelation``, ``Range``, DSv2 scan, cached relation.

    Kept on the JVM by ``handle``; a rewritten plan must use the Relation object itself.
    ``ordering`` is what Catalyst's ``outputOrdering`` says of it (sparkext.analysis.ordering
    decides whether that holds across partitions).
    """
    keeps_child_rows = keeps_child_columns = commutes_with_filters = keeps_child_order = False
    keeps_child_equivalences = keeps_child_unique_keys = False

    cls: str = arg("-")
    output: tuple[AttributeReference, ...] = arg("-")
    handle: int = arg("-")
    name: str | None = arg("-", default=None)
    ordering: tuple[SortOrder, ...] = arg("-", default=())
    #: True when ``ordering`` provably holds across partitions, not only within each
    ordering_is_global: bool = arg("-", default=False)
    #: the facts about its data, when a rule of the call declared ``needs`` (decoded on
    #: first read; :attr:`facts`)
    facts_: RelationFacts | Lazy | None = field(default=None, compare=False,
                                               metadata={"kind": "-"})
    #: set by :meth:`reading_only`: the paths of the only files the scan reads
    keep_files: tuple[str, ...] | None = field(default=None, metadata={"kind": "-"})

    def reading_only(self, files: Iterable[DataFile]) -> Relation:
        """This relation reading only ``files`` (some of ``facts.files``), for a rule that
        proved the others hold no row the query can return: Spark then lists and schedules
        nothing else. A parquet (or other file source) relation only, not Delta's,
        Iceberg's or a Hive table's (the JVM rejects the rewrite otherwise)."""
        paths = tuple(f.path for f in files)
        listed = {f.path for f in self.facts.files or ()}
        if not paths or not set(paths) <= listed:
            raise ValueError("reading_only takes some of the relation's own listed files")
        return dataclasses.replace(self, keep_files=paths)

    @property
    def facts(self) -> RelationFacts:
        """What Spark's own objects say about the data under this relation
        (:class:`sparkext.facts.RelationFacts`): table, format, location, partition
        columns, bucketing, properties, statistics and, for ``needs=("files",)``, the
        files the scan reads. Sent only for rules that declare ``needs``."""
        f = self.facts_
        if f is None:
            raise FactsNotSent(
                f"no facts were sent for relation {self.simple_string()}: the rule that "
                "reads them must declare them, Rule(..., needs=('relation',)) or "
                "needs=('files',) (sparkext.facts.NEEDS)")
        return f.get() if isinstance(f, Lazy) else f

    def simple_string(self) -> str:
        label = f" {self.name}" if self.name else ""
        files = "" if self.keep_files is None else f", {len(self.keep_files)} files"
        return f"{self.cls}{label} [{', '.join(map(repr, self.output))}]{files}"


@mirror(_L + "LocalRelation", special=True)
class LocalRows(LogicalPlan):
    """Rows a rule computed, held in the plan (built on the JVM as Catalyst's
    ``LocalRelation``): ``output`` the columns (to stand in for a node, its very
    attributes), ``rows`` tuples of values as a :class:`Literal` holds them (dates in days,
    timestamps in microseconds, ...), one per column. Spark's own LocalRelations arrive as
    :class:`Relation` leaves (``facts.format`` LOCAL); this one is for rules to build."""
    keeps_child_rows = keeps_child_columns = commutes_with_filters = keeps_child_order = False
    keeps_child_equivalences = keeps_child_unique_keys = False

    output_: tuple[AttributeReference, ...] = arg("-")
    rows: tuple[tuple[Any, ...], ...] = arg("-")

    @fact
    def output(self) -> tuple[AttributeReference, ...]:
        return self.output_

    def simple_string(self) -> str:
        return f"LocalRows [{', '.join(map(repr, self.output))}], {len(self.rows)} rows"


class FactsNotSent(LookupError):
    """A rule read :attr:`Relation.facts` without declaring ``needs``."""


class Lazy:
    """A value decoded on first use (the expressions of opaque nodes, which rules rarely
    read). Equal only to itself."""

    __slots__ = ("_thunk", "_value")

    def __init__(self, thunk: Callable[[], Any]) -> None:
        self._thunk: Callable[[], Any] | None = thunk
        self._value: Any = None

    def get(self) -> Any:
        if self._thunk is not None:
            self._value = self._thunk()
            self._thunk = None
        return self._value

    @property
    def is_decoded(self) -> bool:
        return self._thunk is None


@mirror(_L + "Opaque", special=True)
class Opaque(LogicalPlan):
    """A Catalyst node sparkext does not mirror (Intersect, Except, Offset, CTEs, object
    operators, ...). A barrier for rules: they may rewrite its children (and, position by
    position, its expressions), but never move anything through it."""
    keeps_child_rows = keeps_child_columns = commutes_with_filters = keeps_child_order = False
    keeps_child_equivalences = keeps_child_unique_keys = False

    cls: str = arg("-")
    output: tuple[AttributeReference, ...] = arg("-")
    children_: tuple[LogicalPlan, ...] = arg("ps")
    handle: int = arg("-")
    exprs: tuple[Expression, ...] | Lazy = field(default=(), compare=False, metadata={"kind": "-"})

    @property
    def expressions(self) -> tuple[Expression, ...]:
        e = self.exprs
        return e.get() if isinstance(e, Lazy) else e

    @property
    def offset_expr(self) -> Expression | None:
        """For Catalyst's ``Offset`` (:data:`~sparkext.catalyst_names.OFFSET`), the count of
        rows it skips, its one expression; None for any other class."""
        if self.cls == names.OFFSET and len(self.expressions) == 1:
            return self.expressions[0]
        return None

    @fact
    def references(self) -> frozenset:
        return frozenset().union(*(e.references for e in self.expressions))

    def map_expressions(self, fn: Callable[[Expression], Expression]) -> Opaque:
        old = self.expressions
        new = tuple(fn(e) for e in old)
        if all(a is b for a, b in zip(old, new)):
            return self
        return self.copy(exprs=new)

    def simple_string(self) -> str:
        return f"{self.cls} [{', '.join(map(repr, self.output))}]"
