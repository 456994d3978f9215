"""sparkext.analysis.ordering: ordering_satisfy, table-driven, and the derivation per plan node."""

from __future__ import annotations

import pytest

from sparkext import types as T
from sparkext.analysis.ordering import EquivalenceProperties, Ordering, SortKey, properties
from sparkext.context import CallContext, scoped
from sparkext.expressions import (
    Add,
    Alias,
    Cast,
    EqualTo,
    Floor,
    GreaterThan,
    IsNotNull,
    IsNull,
    Month,
    Multiply,
    Subtract,
    TruncTimestamp,
    UnaryMinus,
    Upper,
    Year,
    asc,
    desc,
    lit,
)
from sparkext.expressions import SortOrder as SO
from sparkext.plan import (
    Aggregate,
    Filter,
    GlobalLimit,
    Join,
    LocalLimit,
    Project,
    Relation,
    RepartitionByExpression,
    Sort,
)
from tests.mirror_plans import ANSI, LEGACY, col

# DataFusion's worked example ("Using Ordering for Better Plans in Apache DataFusion")
hostname, currency = col("hostname", 1, T.STRING), col("currency", 2, T.STRING)
amount, price, price_cloned = col("amount", 3), col("price", 4), col("price_cloned", 5)
time, time_cloned, time_bin = (col("time", 6, T.TIMESTAMP), col("time_cloned", 7, T.TIMESTAMP),
                               col("time_bin", 8, T.TIMESTAMP))
# Columns for the further cases
a, b, c = col("a", 11), col("b", 12), col("c", 13)
nn = col("nn", 14, nullable=False)
ts = col("ts", 15, T.TIMESTAMP)
d = col("d", 16, T.DATE)
i = col("i", 17)
lng = col("lng", 18, T.LONG)
s = col("s", 19, T.STRING)
f = col("f", 20, T.DOUBLE)
x = col("x", 21)
ts2 = col("other", 22)


def key(e, descending=False, nulls_first=None):
    return SortKey(e, descending, (not descending) if nulls_first is None else nulls_first)


def props(orderings=(), constants=(), null_constants=(), groups=(), not_null=()):
    p = EquivalenceProperties()
    for cst in constants:
        p.add_constant(cst)
    for cst in null_constants:
        p.add_constant(cst, is_null=True)
    for g in groups:
        for m in g[1:]:
            p.add_equivalence(g[0], m)
    for e in not_null:
        p.add_not_null(e)
    for keys, is_global in orderings:
        p.orderings.append(Ordering(tuple(k if isinstance(k, SortKey) else key(k)
                                          for k in keys), is_global))
    return p


def G(*keys):
    return (keys, True)


def P(*keys):
    return (keys, False)


HOUR = TruncTimestamp(lit("HOUR"), ts, "UTC")
# A zone whose local date and day truncation go back somewhere in its history, as the JVM
# would describe America/Sitka (sparkext.timezones): every test here runs as inside a call
# from a session in that zone.
BACKWARDS = CallContext(time_zone="Test/Backwards",
                        time_zone_reverses=frozenset({"date", "DAYS"}))


@pytest.fixture(autouse=True)
def _in_a_call_from_a_backwards_zone():
    with scoped(BACKWARDS):
        yield


def trunc(unit, zone="Test/Backwards"):
    return TruncTimestamp(lit(unit), ts, zone)

CASES = [
    # (title, properties, requirement, require_global, satisfied)
    ("DataFusion's worked example",
     props([G(amount, price), G(time_bin), G(time)], [hostname, currency],
           groups=[(price, price_cloned), (time, time_cloned)]),
     [key(hostname, True), key(amount), key(time_bin), key(price_cloned), key(time),
      key(currency), key(price, True)], True, True),
    ("the ordering itself", props([G(a)]), [key(a)], True, True),
    ("a prefix of an ordering", props([G(a, b)]), [key(a)], True, True),
    ("a whole ordering", props([G(a, b)]), [key(a), key(b)], True, True),
    ("a constant key first", props([G(a)], [c]), [key(c), key(a)], True, True),
    ("a constant key in between", props([G(a, b)], [c]), [key(a), key(c), key(b)], True, True),
    ("a constant leading key of the ordering", props([G(a, b)], [a]), [key(b)], True, True),
    ("an equivalent column", props([G(a)], groups=[(a, x)]), [key(x)], True, True),
    ("a repeated key in the other direction", props([G(a)]), [key(a), key(a, True)], True, True),
    ("two orderings that each hold", props([G(a), G(b)]), [key(a), key(b)], True, True),
    ("no keys at all", props(), [], True, True),
    ("only constant keys", props(constants=[c]), [key(c, True)], True, True),
    ("NULLS LAST of a column that is never NULL", props([G(a)], not_null=[a]),
     [key(a, nulls_first=False)], True, True),
    ("NULLS LAST of a non-nullable column", props([G(nn)]), [key(nn, nulls_first=False)],
     True, True),
    ("date_trunc of an ordered timestamp", props([G(ts)]), [key(HOUR)], True, True),
    ("date_trunc then the timestamp itself", props([G(ts)]), [key(HOUR), key(ts)], True, True),
    ("a widening cast", props([G(i)]), [key(Cast(i, T.LONG))], True, True),
    ("plus a literal, ANSI", props([G(i)]), [key(Add(i, lit(1), ANSI, _type=T.INT))], True, True),
    ("a literal minus the column, descending, NULLs still first", props([G(i)]),
     [key(Subtract(lit(10), i, ANSI, _type=T.INT), True, True)], True, True),
    ("negation, descending, NULLs first", props([G(i)]),
     [key(UnaryMinus(i, True, _type=T.INT), True, True)], True, True),
    ("times a negative literal, descending, NULLs first", props([G(i)]),
     [key(Multiply(i, lit(-2), ANSI, _type=T.INT), True, True)], True, True),
    ("a positive literal times the column (literal first)", props([G(i)]),
     [key(Multiply(lit(2), i, ANSI, _type=T.INT))], True, True),
    ("to_date of an ordered timestamp", props([G(ts)]), [key(Cast(ts, T.DATE, "UTC"))],
     True, True),
    ("date_trunc to the hour where only days go back", props([G(ts)]), [key(trunc("HOUR"))],
     True, True),
    ("date_trunc to the microsecond in a zone nobody described", props([G(ts)]),
     [key(trunc("microsecond", "Mars/Olympus"))], True, True),
    ("year of an ordered date", props([G(d)]), [key(Year(d))], True, True),
    ("within partitions, from a partition ordering", props([P(a)]), [key(a)], False, True),
    ("within partitions, from a global ordering", props([G(a)]), [key(a)], False, True),
    ("a column that is constant NULL", props([G(a)], null_constants=[x]), [key(x), key(a)],
     True, True),
    ("keys equal to each other collapse to one", props([G(a)], groups=[(a, b)]),
     [key(b), key(a)], True, True),
    # Not satisfied
    ("another column", props([G(b)]), [key(a)], True, False),
    ("to_date where the local date goes back", props([G(ts)]),
     [key(Cast(ts, T.DATE, "Test/Backwards"))], True, False),
    ("to_date in a zone nobody described", props([G(ts)]),
     [key(Cast(ts, T.DATE, "Mars/Olympus"))], True, False),
    ("date_trunc to the day where days go back", props([G(ts)]), [key(trunc("DD"))],
     True, False),
    ("date_trunc to the month where the local date goes back", props([G(ts)]),
     [key(trunc("month"))], True, False),
    ("date_trunc to a unit Spark does not know", props([G(ts)]),
     [key(trunc("fortnight", "UTC"))], True, False),
    ("date_trunc to the second (wraps around within a second of the lowest instant)",
     props([G(ts)]), [key(trunc("second", "UTC"))], True, False),
    ("a key that is not leading", props([G(a, b)]), [key(b)], True, False),
    ("the opposite direction", props([G(a)]), [key(a, True)], True, False),
    ("NULLS LAST of a nullable column", props([G(a)]), [key(a, nulls_first=False)], True, False),
    ("global, from a partition ordering", props([P(a)]), [key(a)], True, False),
    ("a key after a non-strict monotonic one", props([G(ts, ts2)]), [key(HOUR), key(ts2)],
     True, False),
    ("more keys than the ordering has", props([G(a)]), [key(a), key(b)], True, False),
    ("a function that is not monotonic", props([G(s)]), [key(Upper(s, _type=T.STRING))], True,
     False),
    ("floating point arithmetic", props([G(f)]), [key(Add(f, lit(1.0), ANSI, _type=T.DOUBLE))],
     True, False),
    ("arithmetic that may wrap around (not ANSI)", props([G(i)]),
     [key(Add(i, lit(1), LEGACY, _type=T.INT))], True, False),
    ("a decreasing function puts NULLs at the other end", props([G(i)]),
     [key(Subtract(lit(10), i, ANSI, _type=T.INT), True, False)], True, False),
    ("month is not monotonic", props([G(d)]), [key(Month(d))], True, False),
    ("a narrowing cast", props([G(lng)]), [key(Cast(lng, T.INT))], True, False),
    ("no ordering at all", props(), [key(a)], True, False),
    ("keys in the other order", props([G(a, b)]), [key(b), key(a)], True, False),
    ("one ordering only within partitions, globally", props([G(a), P(b)]),
     [key(a), key(b)], True, False),
    ("a key the ordering does not have", props([G(a, b)]), [key(a), key(c)], True, False),
    ("a timestamp cast to timestamp_ntz (time zone shifts)", props([G(ts)]),
     [key(Cast(ts, T.TIMESTAMP_NTZ))], True, False),
    ("floor of a double", props([G(f)]), [key(Floor(f, _type=T.LONG))], True, False),
    ("times a negative literal, ascending", props([G(i)]),
     [key(Multiply(i, lit(-2), ANSI, _type=T.INT))], True, False),
    ("an equivalent column in the other direction", props([G(key(b, True))], groups=[(a, b)]),
     [key(a)], True, False),
    ("a constant that is not a sort key does not help", props([G(a, b)], [c]),
     [key(b)], True, False),
    ("within partitions is not enough for a global requirement after a constant",
     props([P(a)], [c]), [key(c), key(a)], True, False),
    ("an equivalence does not make an unordered column ordered", props([G(a)], groups=[(b, c)]),
     [key(c)], True, False),
    ("NULLS FIRST of a descending ordering of a nullable column", props([G(key(a, True))]),
     [key(a, True, True)], True, False),
    ("a monotonic function of a column that is not leading", props([G(a, ts)]),
     [key(HOUR)], True, False),
    ("a cast to string is not monotonic", props([G(i)]), [key(Cast(i, T.STRING))], True,
     False),
    ("minus a literal, descending", props([G(i)]),
     [key(Subtract(i, lit(1), ANSI, _type=T.INT), True)], True, False),
    ("a second key that only one partition ordering has, globally", props([G(a), P(a, b)]),
     [key(a), key(b)], True, False),
]


@pytest.mark.parametrize("title,p,req,require_global,expected", CASES,
                         ids=[case[0] for case in CASES])
def test_ordering_satisfy(title, p, req, require_global, expected):
    assert p.ordering_satisfy(req, require_global=require_global) is expected


def test_the_case_table_is_balanced():
    further = CASES[1:]  # all but DataFusion's own example
    not_satisfied = sum(1 for case in further if not case[4])
    assert len(further) >= 40 and 2 * not_satisfied >= len(further)


def test_succinct_orderings_drop_constants_prefixes_and_repeats():
    p = props([G(c, a, b), G(a), P(a, b), G(x, a)], [c], groups=[(a, x)])
    assert [repr(o) for o in p.succinct_orderings()] == [
        "[a#11 ASC NULLS FIRST, b#12 ASC NULLS FIRST] (global)"]


# -- derivation per node ------------------------------------------------------------------


REL = Relation("InMemoryRelation", (ts, s, i), 1, "events", (asc(ts),), True)
REL_LOCAL = Relation("LogicalRDD", (ts, s, i), 2, None, (asc(ts),), False)


def test_a_relation_global_only_when_the_jvm_proved_it():
    assert properties(REL).ordering_satisfy([asc(ts)])
    assert not properties(REL_LOCAL).ordering_satisfy([asc(ts)])
    assert properties(REL_LOCAL).ordering_satisfy([asc(ts)], require_global=False)


def test_a_filter_makes_a_column_constant_and_keeps_the_order():
    plan = Filter(EqualTo(s, lit("h1")), REL)
    assert properties(plan).ordering_satisfy([asc(s), asc(ts)])


def test_is_null_makes_a_column_constant_null():
    plan = Filter(IsNull(i), REL)
    assert properties(plan).ordering_satisfy([desc(i), asc(ts)])


def test_a_projection_names_expressions_and_derives_monotonic_ones():
    hour = Alias(HOUR, "hour", 40)
    plan = Project((hour, ts), REL)
    assert properties(plan).ordering_satisfy([asc(hour.to_attribute()), asc(ts)])
    assert not properties(plan).ordering_satisfy([asc(hour.to_attribute()), asc(i)])


def test_a_literal_column_is_constant():
    k = Alias(lit(1), "k", 41)
    assert properties(Project((k, ts), REL)).ordering_satisfy([asc(k.to_attribute()), asc(ts)])


def test_a_global_limit_keeps_no_order_a_local_limit_does():
    assert not properties(GlobalLimit(lit(5), REL)).ordering_satisfy([asc(ts)], False)
    assert properties(LocalLimit(lit(5), REL)).ordering_satisfy([asc(ts)])


def test_joins_keep_equivalences_and_constants_but_no_order():
    other = Relation("LocalRelation", (x,), 3)
    plan = Join(Filter(EqualTo(s, lit("h1")), REL), other, "Inner", EqualTo(i, x))
    p = properties(plan)
    assert not p.ordering_satisfy([asc(ts)], False)
    assert p.ordering_satisfy([asc(s)]) and p.same_group(i, x)


def test_an_outer_join_keeps_only_the_preserved_sides_constants():
    other = Filter(EqualTo(x, lit(3)), Relation("LocalRelation", (x,), 3))
    plan = Join(REL, other, "LeftOuter", EqualTo(i, x))
    assert properties(plan).constant(x) is None


def test_an_aggregate_keeps_constant_grouping_columns():
    plan = Aggregate((s,), (s,), Filter(EqualTo(s, lit("h1")), REL))
    c = properties(plan).constant(s)
    assert c is not None and c.exact and not c.is_null
    assert properties(Aggregate((s,), (s,), REL)).constant(s) is None  # no filter: many values


def test_a_local_sort_over_a_range_repartition_is_global():
    plan = Sort((asc(i),), False, RepartitionByExpression((asc(i),), REL, 4))
    assert properties(plan).ordering_satisfy([asc(i)], require_global=True)
    plain = Sort((asc(i),), False, RepartitionByExpression((i,), REL, 4))
    assert not properties(plain).ordering_satisfy([asc(i)], require_global=True)


def test_null_intolerant_conjuncts_make_columns_not_null():
    plan = Filter(GreaterThan(i, lit(0)), Sort((asc(i),), True, REL))
    assert properties(plan).ordering_satisfy([SO(i, "ASC", "LAST")])
    plan = Filter(IsNotNull(i), Sort((asc(i),), True, REL))
    assert properties(plan).ordering_satisfy([SO(i, "ASC", "LAST")])

