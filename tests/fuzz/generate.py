"""The seeded generator: ``generate(seed, tables)`` is one random pipeline (a ``Case``).

What it draws from (issue 16 item 9): reads of ordinary, NULL-heavy, duplicate-heavy,
empty and cached sorted tables, and of multi-file parquet (top-Ks and global aggregates
over it exercise the statistics rules, issue 37); filters (range, equality, IN, BETWEEN, NULL tests, LIKE,
two-column comparisons, AND/OR/NOT); projections and computed columns; every join type
with ON conditions over both sides and WHERE filters over both sides after it; aggregates
with and without keys; windows; DISTINCT; set operations; explode/posexplode (outer or
not); sorts in every direction and NULL placement; LIMIT/OFFSET after a total sort;
subqueries (IN, NOT IN, EXISTS, NOT EXISTS, scalar, under OR) through ``spark.sql``;
a DataFrame joined with itself and a recursive CTE read twice and joined, each ordered
over both sides (where one attribute id names two sides' values, issue 33);
``rand(seed)`` and ``sample(seed)``; ANSI-raising expressions (division by zero, invalid
casts, overflow) after the filter that guards them, and in a column that is computed and
then dropped (Spark prunes it, so it must never run).

What it leaves out, because the rows would not be determined: ``rand``/``sample`` anywhere
but directly over a cached table (their values depend on the partitions and row order of
their input, which a different plan may change); LIMIT/OFFSET after anything but a sort
on every column; ``row_number``/``lag``/``first`` and window frames in ROWS over ties;
unsorted ``collect_set``; floating-point sums of values that are not exact in binary.

Predicates compare with values drawn from the column's own values (item 13), mostly from
their middle quantiles, and joins pair keys with overlapping domains, so that most cases
return tens of rows.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from tests.fuzz.pipeline import (
    Aggregate, And, Atom, Case, Distinct, Explode, Filter, Join, Limit, Not, Or,
    RecursiveJoin, Select, SelfJoin, SetOp, Sort, Source, SqlWhere, WithColumn,
)
from tests.fuzz.tables import COLUMNS, KINDS, Table

SQL_TYPES = {"int": "INT", "long": "BIGINT", "double": "DOUBLE", "string": "STRING",
             "bool": "BOOLEAN", "array": "ARRAY<INT>"}
NUMERIC = ("int", "long", "double")


@dataclass(frozen=True)
class Col:
    name: str
    kind: str
    values: tuple = ()  # sorted non-NULL values it takes (roughly), for predicates
    digits: bool = False  # a string column of mostly digits: CAST(.. AS INT) may raise


def literal(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    if isinstance(v, float):
        return f"CAST({v!r} AS DOUBLE)" if v < 0 else repr(v)
    return str(v)


class Generator:
    def __init__(self, seed: int, tables: dict[str, Table]):
        self.rng = random.Random(seed)
        self.tables = tables
        self.names = 0
        self.joins = 0

    def fresh(self, stem: str) -> str:
        self.names += 1
        return f"{stem}{self.names}"

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def pick(self, weighted: dict):
        keys = list(weighted)
        return self.rng.choices(keys, weights=[weighted[k] for k in keys])[0]

    # -- sources ---------------------------------------------------------------------------

    def table_name(self) -> str:
        return self.pick({"fz_a": 5, "fz_b": 4, "fz_sorted": 2, "fz_files": 2, "fz_nulls": 1,
                          "fz_dups": 1, "fz_empty": 0.25})

    def source(self):
        name = self.table_name()
        prefix = self.fresh("t")
        extra = ()
        if self.chance(0.08):
            extra = ("rand", self.rng.randint(0, 99))
        elif self.chance(0.06):
            extra = ("sample", self.rng.choice((0.5, 0.7, 0.9)), self.rng.randint(0, 99))
        if extra:
            name = "fz_range"  # the input whose partitions and row order are fixed
        table = self.tables[name]
        cols = [Col(f"{prefix}_{c}", KINDS[c], table.values(c) or self.tables["fz_a"].values(c),
                    digits=(c == "n")) for c in COLUMNS]
        if extra[:1] == ("rand",):
            cols.append(Col(f"{prefix}_r", "double", (0.2, 0.4, 0.5, 0.6, 0.8)))
        return Source(name, prefix, COLUMNS, extra), cols

    # -- predicates ------------------------------------------------------------------------

    def value(self, col: Col, middle: bool = True):
        vs = col.values
        if not vs:
            return {"int": 0, "long": 0, "double": 0.0, "string": "c", "bool": True}.get(
                col.kind, 0)
        if middle and len(vs) > 2:
            lo, hi = int(len(vs) * 0.2), max(int(len(vs) * 0.8), int(len(vs) * 0.2) + 1)
            return vs[self.rng.randrange(lo, hi)]
        return self.rng.choice(vs)

    def high(self, values: tuple):
        """A value in the top tenth or so of ``values``: few rows are above it."""
        return values[min(len(values) - 1, int(len(values) * self.rng.uniform(0.85, 0.97)))]

    def atom(self, cols: list[Col]) -> Atom:
        col = self.rng.choice([c for c in cols if c.kind != "array"] or cols)
        c = col.name
        if self.chance(0.05):
            return Atom(f"{c} IS NULL" if self.chance(0.3) else f"{c} IS NOT NULL")
        if col.kind in NUMERIC and not col.values:
            # A column whose values are not known (a sum): a predicate most rows pass.
            return Atom(self.rng.choice((f"{c} IS NOT NULL", f"{c} <> 0", f"{c} > -1000")))
        if col.kind in NUMERIC:
            others = [o for o in cols if o.kind in NUMERIC and o.name != c]
            narrow = len(col.values) <= 12  # eq and IN on a wide column keep a row or two
            form = self.pick({"cmp": 6, "eq": 0.4 if narrow else 0.1, "ne": 1, "between": 1.5,
                              "in": 1.5 if narrow else 0.3,
                              "two": 1.5 if others else 0, "mod": 1 if col.kind != "double" else 0,
                              "coalesce": 0.7})
            v = literal(self.value(col))
            if form == "cmp":
                # The value on the side that keeps more than half of the rows, mostly.
                op = self.rng.choice(('<', '<=', '>', '>='))
                vs = col.values
                if vs and self.chance(0.85):
                    lo, hi = (0.5, 0.9) if op in ("<", "<=") else (0.1, 0.5)
                    v = literal(vs[min(int(len(vs) * self.rng.uniform(lo, hi)), len(vs) - 1)])
                return Atom(f"{c} {op} {v}")
            if form == "eq":
                return Atom(f"{c} = {literal(self.value(col, middle=False))}")
            if form == "ne":
                return Atom(f"{c} <> {v}")
            if form == "between":
                a, b = sorted((self.value(col, False), self.value(col, False)))
                return Atom(f"{c} BETWEEN {literal(a)} AND {literal(b)}")
            if form == "in":
                vs = sorted({self.value(col, False) for _ in range(4)})
                return Atom(f"{c} IN ({', '.join(map(literal, vs))})")
            if form == "two":
                o = self.rng.choice(others)
                return Atom(f"{c} {self.rng.choice(('<', '>=', '='))} {o.name} + "
                            f"{self.rng.choice((0, 3, 10))}")
            if form == "mod":
                return Atom(f"{c} % 2 = {self.rng.choice((0, 1))}")
            return Atom(f"coalesce({c}, 0) >= {v}")
        if col.kind == "string":
            form = self.pick({"eq": 1, "in": 2, "like": 1, "cmp": 1, "len": 0.5,
                              "digits": 1 if col.digits else 0})
            if form == "eq":
                return Atom(f"{c} = {literal(self.value(col, False))}")
            if form == "in":
                vs = sorted({self.value(col, False) for _ in range(3)})
                return Atom(f"{c} IN ({', '.join(map(literal, vs))})")
            if form == "like":
                return Atom(f"{c} LIKE {literal(str(self.value(col, False))[:1] + '%')}")
            if form == "cmp":
                return Atom(f"{c} {self.rng.choice(('<', '>='))} {literal(self.value(col))}")
            if form == "digits":
                return Atom(f"{c} RLIKE '^[0-9]+$'")
            return Atom(f"length({c}) > 1")
        if col.kind == "bool":
            return Atom(self.rng.choice((c, f"NOT {c}", f"{c} <=> false", f"{c} IS NOT NULL")))
        return Atom(self.rng.choice((f"size({c}) >= 1", f"array_contains({c}, 2)")))

    def pred(self, cols: list[Col], depth: int = 0) -> object:
        form = self.pick({"atom": 7, "and": 1.5 if depth < 2 else 0,
                          "or": 1.5 if depth < 2 else 0, "not": 0.3 if depth < 2 else 0})
        if form == "atom":
            return self.atom(cols)
        if form == "not":
            return Not(self.pred(cols, depth + 1))
        op = And if form == "and" else Or
        return op(self.pred(cols, depth + 1), self.pred(cols, depth + 1))

    # -- steps -----------------------------------------------------------------------------

    def filter(self, step, cols):
        return Filter(step, self.pred(cols)), cols

    def computed(self, cols: list[Col]) -> tuple[str, Col]:
        """A computed column: SQL text and what it holds."""
        nums = [c for c in cols if c.kind in ("int", "long")]
        name = self.fresh("c")
        form = self.pick({"plus": 2 if nums else 0, "case": 1.5, "coalesce": 1 if nums else 0,
                          "upper": 1 if any(c.kind == "string" for c in cols) else 0,
                          "size": 1 if any(c.kind == "array" for c in cols) else 0,
                          "double": 1 if any(c.kind == "double" for c in cols) else 0,
                          "safe_div": 1 if nums else 0})
        if form == "plus":
            c = self.rng.choice(nums)
            k = self.rng.choice((1, -3, 10))
            return f"{c.name} + {k}", Col(name, c.kind, tuple(v + k for v in c.values))
        if form == "case":
            c = self.rng.choice(nums) if nums else None
            then = c.name if c else "1"
            return (f"CASE WHEN {self.atom(cols).render()} THEN {then} ELSE 0 END",
                    Col(name, c.kind if c else "int", (0,) + (c.values if c else (1,))))
        if form == "coalesce":
            c = self.rng.choice(nums)
            return f"coalesce({c.name}, -1)", Col(name, c.kind, (-1,) + c.values)
        if form == "upper":
            c = self.rng.choice([c for c in cols if c.kind == "string"])
            return f"upper({c.name})", Col(name, "string", tuple(str(v).upper() for v in c.values))
        if form == "size":
            c = self.rng.choice([c for c in cols if c.kind == "array"])
            return f"size({c.name})", Col(name, "int", (-1, 0, 1, 2, 3))
        if form == "double":
            c = self.rng.choice([c for c in cols if c.kind == "double"])
            return f"{c.name} * 2", Col(name, "double", tuple(v * 2 for v in c.values))
        # Division under a guard inside the expression: never raises.
        c = self.rng.choice(nums)
        return (f"CASE WHEN {c.name} <> 0 THEN 100 DIV {c.name} END",
                Col(name, "long", (-5, 0, 2, 10)))

    def select(self, step, cols):
        keep = [c for c in cols if self.chance(0.6)] or [self.rng.choice(cols)]
        items = [(c.name, c.name) for c in keep]
        out = list(keep)
        for _ in range(self.rng.choice((0, 1, 1, 2))):
            sql, col = self.computed(cols)
            items.append((sql, col.name))
            out.append(col)
        self.rng.shuffle(items)
        order = {n: i for i, (_, n) in enumerate(items)}
        out.sort(key=lambda c: order[c.name])
        return Select(step, tuple(items)), out

    def with_column(self, step, cols):
        sql, col = self.computed(cols)
        return WithColumn(step, sql, col.name), cols + [col]

    def keys(self, cols, most: int, at_least: int = 0) -> list[Col]:
        candidates = [c for c in cols if c.kind in ("int", "string", "bool")
                      and len(c.values) <= 12] or [
            c for c in cols if c.kind in ("int", "string", "bool")]
        if self.chance(0.1):
            candidates += [c for c in cols if c.kind == "double"]
        self.rng.shuffle(candidates)
        return candidates[:self.rng.randint(at_least, most)]

    def aggregate(self, step, cols):
        # Mostly two keys (k and g: about 30 groups); a global aggregate is one row.
        keys = (self.keys(cols, 2, at_least=2 if self.chance(0.75) else 1)
                if self.chance(0.93) else [])
        aggs, out = [], list(keys)
        nums = [c for c in cols if c.kind in ("int", "long")]
        ordered = [c for c in cols if c.kind in ("int", "long", "double", "string")]
        for _ in range(self.rng.randint(1, 3)):
            name = self.fresh("a")
            form = self.pick({"count": 2, "count_col": 1, "sum": 2 if nums else 0,
                              "minmax": 2 if ordered else 0, "avg": 1 if nums else 0,
                              "distinct": 1, "sum_case": 1, "set": 0.5 if nums else 0})
            if form == "count":
                aggs.append(("count(*)", name))
                out.append(Col(name, "long", (1, 2, 3, 5, 8)))
            elif form == "count_col":
                aggs.append((f"count({self.rng.choice(cols).name})", name))
                out.append(Col(name, "long", (0, 1, 2, 3, 5)))
            elif form == "sum":
                c = self.rng.choice(nums)
                aggs.append((f"sum({c.name})", name))
                out.append(Col(name, "long"))
            elif form == "minmax":
                c = self.rng.choice(ordered)
                aggs.append((f"{self.rng.choice(('min', 'max'))}({c.name})", name))
                out.append(Col(name, c.kind, c.values, c.digits))
            elif form == "avg":
                c = self.rng.choice(nums)
                aggs.append((f"avg({c.name})", name))
                out.append(Col(name, "double", (-10.0, 0.0, 5.5, 20.0)))
            elif form == "distinct":
                c = self.rng.choice([c for c in cols if c.kind != "double"] or cols)
                aggs.append((f"count(DISTINCT {c.name})", name))
                out.append(Col(name, "long", (0, 1, 2, 3)))
            elif form == "sum_case":
                aggs.append((f"sum(CASE WHEN {self.atom(cols).render()} THEN 1 ELSE 0 END)",
                             name))
                out.append(Col(name, "long", (0, 1, 2, 4)))
            else:
                c = self.rng.choice(nums)
                aggs.append((f"sort_array(collect_set({c.name}))", name))
                out.append(Col(name, "array", c.values))
        return Aggregate(step, tuple(k.name for k in keys), tuple(aggs)), out

    def sort_keys(self, cols, total: bool):
        chosen = list(cols) if total else self.rng.sample(cols, self.rng.randint(1, min(3, len(cols))))
        if total:
            self.rng.shuffle(chosen)
        return tuple((c.name, self.chance(0.5), self.chance(0.5)) for c in chosen)

    def window(self, step, cols):
        part = self.keys(cols, 1)
        over = f"PARTITION BY {part[0].name}" if part else ""
        nums = [c for c in cols if c.kind in ("int", "long")]
        name = self.fresh("w")
        form = self.pick({"sum": 2 if nums else 0, "count": 1, "rank": 1.5, "dense_rank": 1,
                          "running_max": 1.5 if nums else 0})
        if form in ("rank", "dense_rank", "running_max"):
            (o, asc, nf), = self.sort_keys([c for c in cols if c.kind != "array"] or cols,
                                           False)[:1]
            order = f" ORDER BY {o} {'ASC' if asc else 'DESC'} NULLS {'FIRST' if nf else 'LAST'}"
        if form == "sum":
            c = self.rng.choice(nums)
            sql, col = f"sum({c.name}) OVER ({over})", Col(name, "long")
        elif form == "count":
            sql, col = f"count(*) OVER ({over})", Col(name, "long", (1, 2, 4, 8))
        elif form == "running_max":
            # RANGE frame (the default with ORDER BY): ties are peers, so it is determined.
            c = self.rng.choice(nums)
            sql, col = f"max({c.name}) OVER ({over}{order})", Col(name, c.kind, c.values)
        else:
            sql, col = f"{form}() OVER ({over}{order})", Col(name, "int", (1, 2, 3, 5))
        return WithColumn(step, sql, name), cols + [col]

    def distinct(self, step, cols):
        return Distinct(step), cols

    def sort(self, step, cols):
        return Sort(step, self.sort_keys(cols, total=False)), cols

    def limit(self, step, cols):
        # Only after a sort on every column: otherwise which rows survive is not determined.
        step = Sort(step, self.sort_keys(cols, total=True))
        if self.chance(0.3):
            step = Limit(step, self.rng.choice((0, 2, 5)), offset=True)
            if self.chance(0.5):
                return Limit(step, self.rng.choice((10, 20, 50))), cols
            return step, cols
        return Limit(step, self.rng.choice((10, 25, 60))), cols

    def explode(self, step, cols):
        arrays = [c for c in cols if c.kind == "array"]
        c = self.rng.choice(arrays)
        function = self.rng.choice(("explode", "explode_outer", "posexplode", "posexplode_outer"))
        v = self.fresh("e")
        if function.startswith("pos"):
            names = (f"{v}_pos", f"{v}_val")
            new = [Col(names[0], "int", (0, 1, 2)), Col(names[1], "int", c.values)]
        else:
            names = (f"{v}_val",)
            new = [Col(names[0], "int", c.values)]
        return Explode(step, c.name, function, names), cols + new

    def subquery(self, step, cols):
        ints = [c for c in cols if c.kind == "int"] or [c for c in cols if c.kind in NUMERIC]
        table = self.pick({"fz_a": 3, "fz_b": 3, "fz_nulls": 1, "fz_dups": 1, "fz_empty": 0.15})
        inner = self.tables[table] if self.tables[table].rows else self.tables["fz_a"]
        xs = inner.values("x")
        x = xs[self.rng.randrange(len(xs) // 5, max(len(xs) * 4 // 5, 1))] if xs else 0
        if not ints:
            return self.filter(step, cols)
        c = self.rng.choice(ints)
        # The inner column of the same domain as the outer one (columns are {prefix}_{name}).
        base = c.name.rsplit("_", 1)[-1]
        col = base if base in ("k", "g", "x") else (
            self.rng.choice(("k", "g")) if len(c.values) <= 12 else "x")
        where = f"s.x > {x}"
        # NOT IN and NOT EXISTS: against few inner rows (x in the top tenth or so), or every
        # key finds a match and nothing is left.
        high = self.high(xs) if xs else 0
        form = self.pick({"in": 2, "not_in": 1, "exists": 2, "not_exists": 1, "scalar": 1.5,
                          "or": 1, "select": 1})
        exists = f"EXISTS (SELECT 1 FROM {table} s WHERE s.{col} = {c.name} AND {where})"
        not_exists = exists.replace(where, f"s.x > {high}")
        if form == "in":
            return SqlWhere(step, Atom(f"{c.name} IN (SELECT s.{col} FROM {table} s WHERE {where})")), cols
        if form == "not_in":
            where = f"s.x > {high}"
            # Half the time without NULLs in the list (NOT IN a list with NULL is empty).
            if self.chance(0.5):
                where += f" AND s.{col} IS NOT NULL"
            return SqlWhere(step, Atom(f"{c.name} NOT IN (SELECT s.{col} FROM {table} s "
                                       f"WHERE {where})")), cols
        if form == "exists":
            return SqlWhere(step, Atom(exists)), cols
        if form == "not_exists":
            return SqlWhere(step, Atom("NOT " + not_exists)), cols
        if form == "or":
            return SqlWhere(step, Or(self.atom(cols), Atom(exists))), cols
        if form == "scalar":
            o = self.rng.choice([o for o in cols if o.kind in NUMERIC])
            return SqlWhere(step, Atom(
                f"{o.name} >= (SELECT avg(s.x) FROM {table} s WHERE s.{col} = {c.name})")), cols
        name = self.fresh("q")
        extra = f"(SELECT max(s.x) FROM {table} s WHERE s.{col} = {c.name}) AS {name}"
        return (SqlWhere(step, self.atom(cols) if self.chance(0.5) else Atom("true"), extra),
                cols + [Col(name, "int", xs)])

    def join(self, step, cols):
        self.joins += 1
        right, rcols = self.branch()
        how = self.pick({"inner": 3, "left_outer": 2, "right_outer": 2, "full_outer": 1.5,
                         "left_semi": 1, "left_anti": 1, "cross": 0.5})
        lk = [c for c in cols if c.kind == "int" and c.values]
        rk = [c for c in rcols if c.kind == "int" and c.values]
        conjuncts = []
        pairs = [(l, r) for l in lk for r in rk
                 if l.values and r.values and max(l.values[0], r.values[0])
                 <= min(l.values[-1], r.values[-1]) and len(l.values) <= 12 and len(r.values) <= 12]
        if pairs and (how != "cross" or self.chance(0.3)):
            l, r = self.rng.choice(pairs)
            conjuncts.append(Atom(f"{l.name} {'<=>' if self.chance(0.1) else '='} {r.name}"))
        elif how != "cross":
            ln = [c for c in cols if c.kind in NUMERIC]
            rn = [c for c in rcols if c.kind in NUMERIC]
            if ln and rn:
                conjuncts.append(Atom(f"{self.rng.choice(ln).name} < {self.rng.choice(rn).name}"))
            else:
                conjuncts.append(self.atom(rcols))
        for side in (cols, rcols):
            if self.chance(0.25):
                conjuncts.append(self.atom(side))
        if self.chance(0.15):
            conjuncts.append(Or(self.atom(cols), self.atom(rcols)))
        on = None
        if conjuncts:
            on = conjuncts[0]
            for c in conjuncts[1:]:
                on = And(on, c)
        if how == "cross" and on is not None:
            how = "inner"  # a cross join with a condition is an inner join
        if how == "left_anti":
            # Keys overlap: unless few right rows can match (a right column above a value
            # in its top tenth), every left row finds a match and nothing is left.
            wide = [c for c in rcols if c.kind == "int" and len(c.values) > 12]
            if wide:
                c = self.rng.choice(wide)
                on = And(on, Atom(f"{c.name} > {literal(self.high(c.values))}"))
            else:
                on = And(on, self.atom(rcols))
        step = Join(step, right, how, on)
        out = cols if how in ("left_semi", "left_anti") else cols + rcols
        if how not in ("left_semi", "left_anti") and self.chance(0.6):
            # WHERE over both sides
            p = self.pick({"and": 2, "or": 1})
            op = And if p == "and" else Or
            step = Filter(step, op(self.atom(cols), self.atom(rcols)))
        return step, out

    def both_sides_sort(self, step, left: list[Col], right: list[Col]):
        """A sort whose keys come from both sides of a join of one input with itself: the
        ordering analysis must not take a column of one side for the other's."""
        keys = [c for c in left + right if c.kind != "array"]
        chosen = [self.rng.choice([c for c in left if c.kind != "array"] or left),
                  self.rng.choice([c for c in right if c.kind != "array"] or right)]
        chosen += self.rng.sample(keys, self.rng.randint(0, min(2, len(keys))))
        self.rng.shuffle(chosen)
        unique = list(dict.fromkeys(c.name for c in chosen))
        return Sort(step, tuple((c, self.chance(0.5), self.chance(0.5)) for c in unique))

    def self_join(self, step, cols):
        """The same DataFrame joined with itself (issue 33), then ordered over both
        sides."""
        self.joins += 1
        names = tuple(self.fresh("sj") for _ in cols)
        rcols = [Col(n, c.kind, c.values, c.digits) for n, c in zip(names, cols)]
        # An input joined with itself multiplies its rows: pair a wide column with its own
        # copy (a row meets a few others), or bound both sides hard.
        wide = [(lc, rc) for lc, rc in zip(cols, rcols) if lc.kind == "int" and len(lc.values) > 12]
        how = self.pick({"inner": 3, "left_outer": 1.5, "cross": 0.5})
        on = None
        if how != "cross" and wide:
            lc, rc = self.rng.choice(wide)
            on = Atom(f"{lc.name} {self.rng.choice(('=', '<=>'))} {rc.name}")
            if self.chance(0.4):
                on = And(on, self.atom(rcols))
        else:
            how = "cross"
        step = SelfJoin(step, names, how, on)
        if how == "cross":
            step = Filter(step, And(Atom(f"{self.high_row(cols)}"), Atom(f"{self.high_row(rcols)}")))
        out = cols + rcols
        return self.both_sides_sort(step, cols, rcols), out

    def high_row(self, cols: list[Col]) -> str:
        """A predicate few rows pass (a wide column in the top tenth of its values), or
        ``false`` when there is no wide column."""
        wide = [c for c in cols if c.kind == "int" and len(c.values) > 12]
        if not wide:
            return "false"
        c = self.rng.choice(wide)
        return f"{c.name} > {literal(self.high(c.values))}"

    def recursive_join(self, step, cols):
        """A recursive CTE over the input, read twice and joined, ordered over both reads
        (issue 33: both reads output the same attribute ids)."""
        self.joins += 1
        # The value is a wide column (a row meets few others on it); a cross join reads
        # only the rows of a value in the top tenth.
        values = [c for c in cols if c.kind == "int" and len(c.values) > 12]
        if not values:
            return self.filter(step, cols)
        v = self.rng.choice(values)
        p = self.fresh("rc")
        how, on = self.pick({"INNER": 3, "LEFT": 1.5, "CROSS": 0.5}), ""
        if how != "CROSS":
            on = self.rng.choice(("a.v = b.v", "a.v = b.v AND a.n < b.n", "a.n = b.n + 1 AND a.v = b.v",
                                  "a.v <=> b.v AND a.n = b.n"))
        else:
            step = Filter(step, Atom(f"{v.name} > {literal(self.high(v.values))}"))
        step = RecursiveJoin(step, v.name, self.rng.choice((1, 2)), how, on, p)
        left = [Col(f"{p}_an", "int", (0, 1, 2)), Col(f"{p}_av", "int", v.values)]
        right = [Col(f"{p}_bn", "int", (0, 1, 2)), Col(f"{p}_bv", "int", v.values)]
        return self.both_sides_sort(step, left, right), left + right

    def set_op(self, step, cols):
        op = self.pick({"union": 3, "intersect": 1, "intersectAll": 1, "subtract": 1,
                        "exceptAll": 1})
        if op != "union" or self.chance(0.3):
            # The same input on both sides, one filtered: an intersection or a difference
            # of unrelated tables would mostly be empty.
            return SetOp(step, Filter(step, self.pred(cols)), op), cols
        right, rcols = self.branch(allow_steps=("filter",))
        items = []
        for c in cols:
            same = [r for r in rcols if r.kind == c.kind]
            if same and self.chance(0.9):
                sql = self.rng.choice(same).name
            else:
                sql = "NULL"
            items.append((f"CAST({sql} AS {SQL_TYPES[c.kind]})", self.fresh("u")))
        return SetOp(step, Select(right, tuple(items)), op), cols

    def guarded(self, step, cols):
        """An expression that raises under ANSI on some rows, after a filter that removes
        those rows (or inside the same filter, after the guard)."""
        ints = [c for c in cols if c.kind == "int"]
        digits = [c for c in cols if c.digits]
        if not ints and not digits:
            return self.filter(step, cols)
        form = self.pick({"div": 2 if ints else 0, "cast": 2 if digits else 0,
                          "overflow": 1.5 if ints else 0, "dropped": 1 if ints or digits else 0})
        if form == "dropped":
            # Raises on some row, but nothing reads it: Spark prunes it and never runs it.
            raising = (f"CAST({self.rng.choice(digits).name} AS INT)"
                       if digits and (self.chance(0.5) or not ints)
                       else f"{self.rng.choice(ints).name} * 1000000000")
            name = self.fresh("z")
            step = WithColumn(step, raising, name)
            if self.chance(0.5):
                step = Filter(step, self.pred(cols))
            return Select(step, tuple((c.name, c.name) for c in cols)), cols
        if form == "div":
            c = self.rng.choice(ints)
            guard, raising = f"{c.name} <> 0", f"100 DIV {c.name}"
            col = Col(self.fresh("g"), "long", (-10, -2, 0, 3, 25))
        elif form == "cast":
            c = self.rng.choice(digits)
            guard, raising = f"{c.name} RLIKE '^[0-9]+$'", f"CAST({c.name} AS INT)"
            col = Col(self.fresh("g"), "int", (0, 1, 7, 12, 30))
        else:
            c = self.rng.choice(ints)
            guard, raising = f"{c.name} BETWEEN -2 AND 2", f"{c.name} * 1000000000"
            col = Col(self.fresh("g"), "int", (-10**9, 0, 10**9))
        use = f"{raising} >= {literal(col.values[len(col.values) // 2])}"
        where = self.pick({"same_filter": 1, "next_filter": 1, "column": 1})
        if where == "same_filter":
            return Filter(step, And(Atom(guard), Atom(use))), cols
        step = Filter(step, Atom(guard))
        if self.chance(0.3):
            # Something between the guard and the expression it guards.
            step, cols = self.step(step, cols, allow=("filter", "select", "join", "sort"))
        if c.name not in {x.name for x in cols}:
            return step, cols
        if where == "next_filter":
            return Filter(step, Atom(use)), cols
        return WithColumn(step, raising, col.name), cols + [col]

    STEPS = {"filter": 3.5, "select": 1.5, "with_column": 1, "aggregate": 1.3, "window": 1.3,
             "distinct": 0.4, "sort": 0.8, "limit": 1, "explode": 0.8, "subquery": 1.5,
             "join": 3, "self_join": 0.8, "recursive_join": 0.6, "set_op": 1, "guarded": 1.5}

    def step(self, step, cols, allow=None):
        weights = {k: w for k, w in self.STEPS.items() if allow is None or k in allow}
        if self.joins:
            # An input joined with itself after another join squares that join's rows.
            weights.pop("self_join", None)
            weights.pop("recursive_join", None)
        if not any(c.kind == "array" for c in cols):
            weights.pop("explode", None)
        if self.joins >= 2:
            for k in ("join", "self_join", "recursive_join", "set_op"):
                weights.pop(k, None)
        return getattr(self, self.pick(weights))(step, cols)

    def branch(self, allow_steps=("filter", "select", "aggregate", "distinct", "with_column")):
        step, cols = self.source()
        for _ in range(self.rng.choice((0, 0, 1, 1, 2))):
            step, cols = self.step(step, cols, allow=allow_steps)
        return step, cols

    def pipeline(self):
        step, cols = self.source()
        for _ in range(self.rng.randint(1, 5)):
            step, cols = self.step(step, cols)
        return step


def generate(seed: int, tables: dict[str, Table]) -> Case:
    """The case of ``seed``: the same seed gives the same case."""
    return Case(Generator(seed, tables).pipeline(), seed=seed)


def case_seed(sweep_seed: int, index: int) -> int:
    return sweep_seed * 1_000_003 + index
