"""What a guard is, what it sees, and how it refuses.

A guard is a named check ``query -> None`` over one planning unit of a query
(:class:`Query`): the optimized plan Spark is about to run, after Catalyst's pushdown and
partition pruning, with its subqueries' plans. It lets the query through by returning, and
refuses it with :func:`refuse`, which fails the query with Spark's error of class
``SPARKEXT_QUERY_REFUSED``, naming the guard and the reason::

    from sparkext import guard, refuse
    from sparkext.plan import Join

    @guard()
    def no_cross_joins(query):
        for node in query.walk():
            if isinstance(node, Join) and node.condition is None:
                refuse("a cross join")

A guard in ``warn`` mode (``@guard(mode="warn")``) refuses nothing: what it would refuse is
logged, once per query, and written to the audit log. A guard that raises anything else
refuses the query too, whatever its mode: guards fail closed (docs/guards.md).

A guard is pure and cheap: it runs for every query of every session, inside the planning
of that query, and may run again for the same plan (each subquery Spark plans apart).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import overload

from sparkext.facts import checked_needs
from sparkext.plan import Join, LogicalPlan, Relation

#: What a guard does with a query it would refuse.
REFUSE = "refuse"
WARN = "warn"
MODES = (REFUSE, WARN)


class Refused(Exception):
    """Raised by :func:`refuse`: the guard running refuses the query, for ``reason``."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def refuse(reason: str) -> None:
    """Refuses the query the running guard judges, saying why in one line (it is shown to
    the user, counted in ``refused_queries`` and written to the audit log): e.g.
    ``refuse("sales.events is read without a filter on its partition column day")``."""
    raise Refused(str(reason))


class Query:
    """One planning unit as a guard sees it: ``plan``, the optimized plan Spark plans next
    (a query, a command with its query, a cache build; after partition pruning), and
    ``subqueries``, the optimized plans of its subqueries (nested ones included; dynamic
    partition pruning's are left out: each copies the other side of a join the plan holds).

    Relations carry the facts the guards declare they need
    (:attr:`Relation.facts <sparkext.plan.Relation.facts>`, ``Guard.needs``), computed
    for the plan as it will run: with ``needs=("listing",)``, the files each scan reads
    after partition pruning."""

    __slots__ = ("plan", "subqueries", "_input_sizes", "_handle_of")

    def __init__(self, plan: LogicalPlan, subqueries: Iterable[LogicalPlan] = (),
                 input_sizes: Mapping[int, tuple[int | None, int | None]] | None = None,
                 handle_of: Callable[[object], int | None] | None = None):
        self.plan = plan
        self.subqueries = tuple(subqueries)
        self._input_sizes = input_sizes or {}
        self._handle_of = handle_of

    @property
    def plans(self) -> tuple[LogicalPlan, ...]:
        """The plan, then each subquery's."""
        return (self.plan, *self.subqueries)

    def walk(self) -> Iterator[LogicalPlan]:
        """Every node of every plan (the plan's first), parents before children."""
        for p in self.plans:
            yield from p.walk()

    def relations(self) -> Iterator[Relation]:
        """Every leaf the unit reads, once per place it is read (a self-join reads twice)."""
        return (n for n in self.walk() if isinstance(n, Relation))

    def input_sizes(self, join: Join) -> tuple[int | None, int | None]:
        """Catalyst's estimates, in bytes, of the left and right inputs of ``join`` (one of
        this unit's joins), as Spark's planner reads them to choose a join (None: Catalyst
        could not say). Without statistics collected (``ANALYZE TABLE``), what a side
        reads, scaled by the columns it keeps; filters do not lower it."""
        h = self._handle_of(join) if self._handle_of is not None else None
        return self._input_sizes.get(h, (None, None)) if h is not None else (None, None)


#: What a guard wraps: a check of one planning unit, which refuses by raising.
GuardFunction = Callable[[Query], None]


@dataclass(frozen=True)
class Guard:
    """A named check that may refuse a query (module docstring). ``needs`` says which facts
    about the data it reads (:data:`sparkext.facts.NEEDS`; ``"listing"`` for the files
    scanned), ``mode`` what a refusal does (:data:`MODES`)."""

    name: str
    fn: GuardFunction
    needs: tuple[str, ...] = ()
    mode: str = REFUSE

    def __post_init__(self) -> None:
        if not self.name or "," in self.name:
            raise ValueError(f"guard name {self.name!r} must be non-empty and without commas")
        if self.mode not in MODES:
            raise ValueError(f"guard {self.name!r}: mode must be one of {MODES}, not "
                             f"{self.mode!r}")
        needs = checked_needs(f"guard {self.name!r}", tuple(self.needs))
        object.__setattr__(self, "needs", needs)

    def __call__(self, query: Query) -> None:
        self.fn(query)


@overload
def guard(fn: GuardFunction, *, name: str | None = None, needs: Iterable[str] = (),
          mode: str = REFUSE) -> Guard: ...
@overload
def guard(fn: None = None, *, name: str | None = None, needs: Iterable[str] = (),
          mode: str = REFUSE) -> Callable[[GuardFunction], Guard]: ...
def guard(fn: GuardFunction | None = None, *, name: str | None = None,
          needs: Iterable[str] = (), mode: str = REFUSE
          ) -> Guard | Callable[[GuardFunction], Guard]:
    """Decorator: turns ``query -> None`` into a :class:`Guard` named after the function."""

    def wrap(f: GuardFunction) -> Guard:
        return Guard(name or f.__name__, f, tuple(needs), mode)

    return wrap(fn) if fn is not None else wrap


def as_guard(g: object) -> Guard:
    """A guard, or a function ``query -> None`` made one (named after it)."""
    from sparkext.optimizer import Rule

    if isinstance(g, Guard):
        return g
    if isinstance(g, Rule):
        raise TypeError(f"{g.name!r} is a rule, not a guard: rules rewrite plans "
                        "(spark.sparkext.rules), guards judge them (sparkext.guard)")
    if callable(g):
        return Guard(getattr(g, "__name__", type(g).__name__), g)
    raise TypeError(f"{g!r} is not a guard: pass a sparkext.Guard or a function query -> None")


def describe(relation: Relation) -> str:
    """How a guard's reason names a relation: its table, else its location, else its kind."""
    facts = relation.facts_
    if facts is not None:
        f = relation.facts
        if f.table is not None:
            return str(f.table)
        if f.location:
            return ", ".join(f.location[:3]) + (" ..." if len(f.location) > 3 else "")
    return relation.name or relation.cls
