"""A fuzz case is a tree of steps; it prints as the PySpark code that runs it.

The code is the single source of a case: the fuzzer executes exactly what it prints, a
shrunk failure is printed the same way, and a kept regression is that text
(``tests/fuzz/regressions.py``). Predicates are trees (``Atom``/``And``/``Or``/``Not``) so
that shrinking can drop a conjunct or a disjunct; every other expression is SQL text.

Column names are unique in a pipeline (each read of a table renames its columns with its
own prefix, each computed column gets a fresh name), so SQL text never needs qualifiers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union


# -- predicates ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Atom:
    sql: str

    def render(self) -> str:
        return self.sql


@dataclass(frozen=True)
class And:
    left: "Pred"
    right: "Pred"

    def render(self) -> str:
        return f"({self.left.render()} AND {self.right.render()})"


@dataclass(frozen=True)
class Or:
    left: "Pred"
    right: "Pred"

    def render(self) -> str:
        return f"({self.left.render()} OR {self.right.render()})"


@dataclass(frozen=True)
class Not:
    child: "Pred"

    def render(self) -> str:
        return f"(NOT {self.child.render()})"


Pred = Union[Atom, And, Or, Not]


def simpler_predicates(p: Pred):
    """Predicates with one part of ``p`` removed, smallest first."""
    match p:
        case And(l, r) | Or(l, r):
            yield l
            yield r
            for s in simpler_predicates(l):
                yield type(p)(s, r)
            for s in simpler_predicates(r):
                yield type(p)(l, s)
        case Not(c):
            yield c
            for s in simpler_predicates(c):
                yield Not(s)
        case _:
            return


# -- steps ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Source:
    """``spark.table(table)`` with its columns renamed ``{prefix}_{column}``; ``extra``:
    ``("rand", seed)`` adds ``{prefix}_r = rand(seed)``, ``("sample", fraction, seed)``
    samples the table. Either reads the cached table directly, where its partitions (and
    so its values) are the same in every mode."""
    table: str
    prefix: str
    columns: tuple
    extra: tuple = ()

    children = ()

    def code(self, inputs) -> str:
        df = f'spark.table("{self.table}")'
        if self.extra[:1] == ("sample",):
            df += f".sample(fraction={self.extra[1]}, seed={self.extra[2]})"
        names = ", ".join(f'"{self.prefix}_{c}"' for c in self.columns)
        df += f".toDF({names})"
        if self.extra[:1] == ("rand",):
            df += f'.withColumn("{self.prefix}_r", F.rand({self.extra[1]}))'
        return df


@dataclass(frozen=True)
class Filter:
    child: "Step"
    pred: Pred

    @property
    def children(self):
        return (self.child,)

    def code(self, inputs) -> str:
        return f"{inputs[0]}.where({self.pred.render()!r})"


@dataclass(frozen=True)
class Select:
    """Columns and computed columns, ``(sql, name)`` pairs (``sql == name``: a column)."""
    child: "Step"
    items: tuple

    @property
    def children(self):
        return (self.child,)

    def code(self, inputs) -> str:
        cols = ", ".join(f'"{n}"' if s == n else f'F.expr({s!r}).alias("{n}")'
                         for s, n in self.items)
        return f"{inputs[0]}.select({cols})"


@dataclass(frozen=True)
class WithColumn:
    child: "Step"
    sql: str
    name: str

    @property
    def children(self):
        return (self.child,)

    def code(self, inputs) -> str:
        return f'{inputs[0]}.withColumn("{self.name}", F.expr({self.sql!r}))'


@dataclass(frozen=True)
class Aggregate:
    child: "Step"
    keys: tuple
    aggs: tuple  # (sql, name)

    @property
    def children(self):
        return (self.child,)

    def code(self, inputs) -> str:
        keys = ", ".join(f'"{k}"' for k in self.keys)
        aggs = ", ".join(f'F.expr({s!r}).alias("{n}")' for s, n in self.aggs)
        return f"{inputs[0]}.groupBy({keys}).agg({aggs})"


@dataclass(frozen=True)
class Distinct:
    child: "Step"
    subset: tuple = ()  # dropDuplicates on these columns (they determine the rest)

    @property
    def children(self):
        return (self.child,)

    def code(self, inputs) -> str:
        if self.subset:
            return f"{inputs[0]}.dropDuplicates({list(self.subset)!r})"
        return f"{inputs[0]}.distinct()"


@dataclass(frozen=True)
class Sort:
    """``keys``: ``(column, ascending, nulls_first)``."""
    child: "Step"
    keys: tuple

    @property
    def children(self):
        return (self.child,)

    def code(self, inputs) -> str:
        def key(c, asc, nf):
            return (f'F.col("{c}").{"asc" if asc else "desc"}_nulls_'
                    f'{"first" if nf else "last"}()')
        return f"{inputs[0]}.orderBy({', '.join(key(*k) for k in self.keys)})"


@dataclass(frozen=True)
class Limit:
    child: "Step"
    n: int
    offset: bool = False

    @property
    def children(self):
        return (self.child,)

    def code(self, inputs) -> str:
        return f"{inputs[0]}.{'offset' if self.offset else 'limit'}({self.n})"


@dataclass(frozen=True)
class Explode:
    child: "Step"
    column: str
    function: str  # explode, explode_outer, posexplode, posexplode_outer
    names: tuple

    @property
    def children(self):
        return (self.child,)

    def code(self, inputs) -> str:
        names = ", ".join(f'"{n}"' for n in self.names)
        return f'{inputs[0]}.select("*", F.{self.function}("{self.column}").alias({names}))'


@dataclass(frozen=True)
class SqlWhere:
    """``SELECT * [, extra] FROM {d} WHERE pred`` through ``spark.sql``: subqueries."""
    child: "Step"
    pred: Pred
    extra: str = ""  # a column computed by a scalar subquery: "(SELECT ...) AS name"

    @property
    def children(self):
        return (self.child,)

    def code(self, inputs) -> str:
        cols = "*" + (f", {self.extra}" if self.extra else "")
        text = f"SELECT {cols} FROM {{d}} WHERE {self.pred.render()}"
        return f"spark.sql({text!r}, d={inputs[0]})"


@dataclass(frozen=True)
class Join:
    left: "Step"
    right: "Step"
    how: str
    on: Pred | None

    @property
    def children(self):
        return (self.left, self.right)

    def code(self, inputs) -> str:
        if self.on is None:
            return f"{inputs[0]}.crossJoin({inputs[1]})"
        return f"{inputs[0]}.join({inputs[1]}, F.expr({self.on.render()!r}), {self.how!r})"


@dataclass(frozen=True)
class SelfJoin:
    """The very same DataFrame on both sides: ``d.join(d.toDF(*names), on, how)``, the
    right side's columns renamed (``names``, in ``d``'s column order)."""
    child: "Step"
    names: tuple
    how: str
    on: Pred | None

    @property
    def children(self):
        return (self.child,)

    def code(self, inputs) -> str:
        right = f"{inputs[0]}.toDF({', '.join(repr(n) for n in self.names)})"
        if self.on is None:
            return f"{inputs[0]}.crossJoin({right})"
        return f"{inputs[0]}.join({right}, F.expr({self.on.render()!r}), {self.how!r})"


@dataclass(frozen=True)
class RecursiveJoin:
    """A recursive CTE over the input, read twice and joined (Spark 4.1+): ``r(n, v)``
    starts at the input's ``value`` column with ``n = 0`` and adds ``n + 1`` up to
    ``depth``; the output is ``{prefix}_an, {prefix}_av, {prefix}_bn, {prefix}_bv``. Both
    reads of ``r`` output the same attribute ids (issue 33)."""
    child: "Step"
    value: str
    depth: int
    how: str   # INNER, LEFT, CROSS
    on: str    # SQL over a.n, a.v, b.n, b.v ("" for CROSS)
    prefix: str

    @property
    def children(self):
        return (self.child,)

    def code(self, inputs) -> str:
        p = self.prefix
        text = (f"WITH RECURSIVE r(n, v) AS (SELECT 0, {self.value} FROM {{d}} UNION ALL "
                f"SELECT n + 1, v FROM r WHERE n < {self.depth}) "
                f"SELECT a.n AS {p}_an, a.v AS {p}_av, b.n AS {p}_bn, b.v AS {p}_bv "
                f"FROM r a {self.how} JOIN r b" + (f" ON {self.on}" if self.on else ""))
        return f"spark.sql({text!r}, d={inputs[0]})"


@dataclass(frozen=True)
class SetOp:
    left: "Step"
    right: "Step"
    op: str  # union, intersect, intersectAll, subtract, exceptAll

    @property
    def children(self):
        return (self.left, self.right)

    def code(self, inputs) -> str:
        return f"{inputs[0]}.{self.op}({inputs[1]})"


Step = Union[Source, Filter, Select, WithColumn, Aggregate, Distinct, Sort, Limit, Explode,
             SqlWhere, Join, SelfJoin, RecursiveJoin, SetOp]


@dataclass(frozen=True)
class Case:
    """A pipeline and what the oracle may compare: ``order``, the columns whose sequence
    the pipeline determines (all of them when it ends in a total sort), or ``()``.
    ``note``: why a comparison was left out, if one was."""
    root: Step
    order: tuple = ()
    note: str = ""
    seed: int = field(default=-1, compare=False)

    def code(self) -> str:
        return render(self.root)


def render(root: Step) -> str:
    """The PySpark code that builds ``root``, one statement per step, ending in ``result``.
    It runs with ``spark``, ``F`` (pyspark.sql.functions) in scope."""
    lines: list[str] = []

    def emit(step) -> str:
        inputs = [emit(c) for c in step.children]
        name = f"df{len(lines) + 1}"
        lines.append(f"{name} = {step.code(inputs)}")
        return name
    last = emit(root)
    lines.append(f"result = {last}")
    return "\n".join(lines)


def run_code(spark, code: str):
    """The DataFrame a case's code builds."""
    from pyspark.sql import functions as F

    scope = {"spark": spark, "F": F}
    exec(code, scope)
    return scope["result"]


def steps(root: Step):
    """Every step of the tree, root first."""
    yield root
    for c in root.children:
        yield from steps(c)


def size(root: Step) -> int:
    return sum(1 for _ in steps(root))
