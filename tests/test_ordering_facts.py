"""What each expression class declares it does to orderings (``Expression.ordering_fact``
in sparkext.expressions), and that the ordering analysis reads nothing else.

The table below is exhaustive: a class that starts (or stops) declaring a fact fails
``test_the_classes_with_a_fact_are_the_ones_in_the_table`` until its cases are written
here, direction and strictness both (issue 17 relies on strictness to satisfy the keys
after ``f(a)``)."""

from __future__ import annotations

import decimal

import pytest

from sparkext import expressions as E
from sparkext import types as T
from sparkext._tree import MIRRORED
from sparkext.analysis.ordering import EquivalenceProperties, Ordering, SortKey
from sparkext.context import CallContext, scoped
from sparkext.expressions import (
    Add,
    AttributeReference,
    Cast,
    Ceil,
    DateAdd,
    DateSub,
    Floor,
    Literal,
    Multiply,
    OrderingFact,
    Subtract,
    TruncDate,
    TruncTimestamp,
    UnaryExpression,
    UnaryMinus,
    Year,
    asc,
    desc,
    lit,
)
from tests.mirror_plans import ANSI, LEGACY, col

i, lng, f = col("i", 1, T.INT), col("lng", 2, T.LONG), col("f", 3, T.DOUBLE)
dec = col("dec", 4, T.decimal(10, 2))
d, ts, ntz = col("d", 5, T.DATE), col("ts", 6, T.TIMESTAMP), col("ntz", 7, T.TIMESTAMP_NTZ)
days = col("days", 8, T.INT)
# A decimal as wide as Spark allows: arithmetic on it rounds (precision loss).
wide = col("wide", 9, T.decimal(38, 18))


def dec_lit(text, precision, scale):
    return Literal(decimal.Decimal(text), T.decimal(precision, scale))

INC_STRICT, DEC_STRICT, INC = (True, True), (False, True), (True, False)

# class name -> [(title, expression, (argument, (increasing, strict)) or None)]
CASES = {
    "Add": [
        ("x + c under ANSI", Add(i, lit(1), ANSI, _type=T.INT), (i, INC_STRICT)),
        ("c + x under ANSI", Add(lit(1), i, ANSI, _type=T.INT), (i, INC_STRICT)),
        ("x + c wraps around without ANSI", Add(i, lit(1), LEGACY, _type=T.INT), None),
        ("x + c in floating point (NaN, -0.0)", Add(f, lit(1.0), ANSI, _type=T.DOUBLE), None),
        ("x + y: no constant", Add(i, days, ANSI, _type=T.INT), None),
        ("decimal x + c keeping every digit",
         Add(dec, dec_lit("0.01", 3, 2), ANSI, _type=T.decimal(11, 2)), (dec, INC_STRICT)),
        ("decimal x + c rounded to fewer digits: two x meet",
         Add(wide, dec_lit("0.01", 3, 2), ANSI, _type=T.decimal(38, 17)), (wide, INC)),
    ],
    "Subtract": [
        ("x - c under ANSI", Subtract(i, lit(1), ANSI, _type=T.INT), (i, INC_STRICT)),
        ("c - x under ANSI", Subtract(lit(10), i, ANSI, _type=T.INT), (i, DEC_STRICT)),
        ("c - x wraps around without ANSI", Subtract(lit(10), i, LEGACY, _type=T.INT), None),
        ("decimal x - c rounded to fewer digits: two x meet",
         Subtract(wide, dec_lit("0.01", 3, 2), ANSI, _type=T.decimal(38, 17)), (wide, INC)),
    ],
    "Multiply": [
        ("x * positive under ANSI", Multiply(i, lit(2), ANSI, _type=T.INT), (i, INC_STRICT)),
        ("positive * x under ANSI", Multiply(lit(2), i, ANSI, _type=T.INT), (i, INC_STRICT)),
        ("x * negative under ANSI", Multiply(i, lit(-2), ANSI, _type=T.INT), (i, DEC_STRICT)),
        ("x * 0 is constant", Multiply(i, lit(0), ANSI, _type=T.INT), None),
        ("x * c wraps around without ANSI", Multiply(i, lit(2), LEGACY, _type=T.INT), None),
        ("decimal x * c keeping every digit",
         Multiply(dec, dec_lit("2", 1, 0), ANSI, _type=T.decimal(12, 2)), (dec, INC_STRICT)),
        ("decimal x * c rounded to fewer digits: two x meet",
         Multiply(wide, dec_lit("1.5", 2, 1), ANSI, _type=T.decimal(38, 18)), (wide, INC)),
    ],
    "UnaryMinus": [
        ("-x failing on overflow", UnaryMinus(i, True), (i, DEC_STRICT)),
        ("-x wrapping -MIN_VALUE", UnaryMinus(i, False), None),
        ("-x in floating point", UnaryMinus(f, True), None),
    ],
    "Floor": [
        ("floor of a decimal", Floor(dec), (dec, INC)),
        ("floor of a double (NaN)", Floor(f), None),
    ],
    "Ceil": [
        ("ceil of a decimal", Ceil(dec), (dec, INC)),
        ("ceil of a double (NaN)", Ceil(f), None),
    ],
    "Cast": [
        ("int to long", Cast(i, T.LONG), (i, INC_STRICT)),
        ("long to int (narrowing)", Cast(lng, T.INT), None),
        ("int to decimal(10,0)", Cast(i, T.decimal(10, 0)), (i, INC_STRICT)),
        ("int to decimal(9,0) (too few digits)", Cast(i, T.decimal(9, 0)), None),
        ("decimal(10,2) to decimal(12,3)", Cast(dec, T.decimal(12, 3)), (dec, INC_STRICT)),
        ("decimal(10,2) to decimal(10,1) (rounds)", Cast(dec, T.decimal(10, 1)), None),
        ("date to timestamp_ntz", Cast(d, T.TIMESTAMP_NTZ), (d, INC_STRICT)),
        ("date to timestamp (a skipped day)", Cast(d, T.TIMESTAMP, "UTC"), (d, INC)),
        ("timestamp_ntz to date", Cast(ntz, T.DATE), (ntz, INC)),
        ("timestamp to date in a fixed zone", Cast(ts, T.DATE, "UTC"), (ts, INC)),
        ("timestamp to date where the call's zone goes back",
         Cast(ts, T.DATE, "Test/Backwards"), None),
        ("timestamp to date in a zone the call does not describe",
         Cast(ts, T.DATE, "America/Sitka"), None),
        ("int to string", Cast(i, T.STRING), None),
    ],
    "Year": [
        ("year of a date", Year(d), (d, INC)),
        ("year of a timestamp (local time)", Year(ts), None),
    ],
    # Catalyst adds the days to the date's int unchecked: the last date plus one is the first.
    "DateAdd": [
        ("date_add(x, c): wraps around past the last date", DateAdd(d, lit(3)), None),
        ("date_add(x, 0): the identity", DateAdd(d, lit(0)), (d, INC_STRICT)),
        ("date_add(x, y): no constant", DateAdd(d, days), None),
    ],
    "DateSub": [
        ("date_sub(x, c): wraps around before the first date", DateSub(d, lit(3)), None),
        ("date_sub(x, 0): the identity", DateSub(d, lit(0)), (d, INC_STRICT)),
        ("date_sub(x, NULL)", DateSub(d, lit(None, T.INT)), None),
    ],
    # To a month, a year or a week Catalyst truncates with int arithmetic that wraps
    # around on the lowest dates; to a quarter it raises there.
    "TruncDate": [
        ("trunc(x, 'QUARTER')", TruncDate(d, lit("quarter")), (d, INC)),
        ("trunc(x, 'MM'): wraps around on the lowest dates", TruncDate(d, lit("MM")), None),
        ("trunc(x, 'YEAR')", TruncDate(d, lit("YEAR")), None),
        ("trunc(x, 'WEEK')", TruncDate(d, lit("WEEK")), None),
        ("trunc(x, unit column)", TruncDate(d, col("u", 9, T.STRING)), None),
    ],
    "TruncTimestamp": [
        ("date_trunc('MICROSECOND', x): the identity",
         TruncTimestamp(lit("MICROSECOND"), ts, "Test/Backwards"), (ts, INC)),
        ("date_trunc('SECOND', x): wraps around within a second of the lowest instant",
         TruncTimestamp(lit("SECOND"), ts, "UTC"), None),
        ("date_trunc('MILLISECOND', x)", TruncTimestamp(lit("MILLISECOND"), ts, "UTC"), None),
        ("date_trunc('HOUR', x) where the zone never goes back by hours",
         TruncTimestamp(lit("HOUR"), ts, "Test/Backwards"), (ts, INC)),
        ("date_trunc('DAY', x) where the zone goes back across days",
         TruncTimestamp(lit("DAY"), ts, "Test/Backwards"), None),
        ("date_trunc('MONTH', x) in a fixed zone", TruncTimestamp(lit("month"), ts, "UTC"),
         (ts, INC)),
        ("date_trunc(unknown unit, x)", TruncTimestamp(lit("FORTNIGHT"), ts, "UTC"), None),
    ],
}

# The call's header, as the JVM would describe a zone whose local date and day go back
# (sparkext.timezones): the time-zone cases above are asked inside such a call.
BACKWARDS = CallContext(time_zone="Test/Backwards", time_zone_reverses=frozenset({"date", "DAYS"}))


EXPRESSION_CLASSES = sorted((c for c in MIRRORED.values() if issubclass(c, E.Expression)),
                            key=lambda c: c.__name__)


def declares(cls) -> bool:
    return cls.ordering_fact is not E.Expression.ordering_fact


def test_the_classes_with_a_fact_are_the_ones_in_the_table():
    assert {c.__name__ for c in EXPRESSION_CLASSES if declares(c)} == set(CASES)


@pytest.mark.parametrize("cls, title, expr, expected", [
    (cls, title, expr, expected)
    for cls, cases in CASES.items() for title, expr, expected in cases],
    ids=lambda v: v if isinstance(v, str) else "")
def test_the_declared_fact(cls, title, expr, expected):
    assert type(expr).__name__ == cls
    with scoped(BACKWARDS):
        fact = expr.ordering_fact()
    if expected is None:
        assert fact is None, title
        return
    argument, (increasing, strict) = expected
    assert fact == OrderingFact(argument, increasing, strict), title
    # Every declared function turns a NULL argument, and only that, into NULL.
    assert fact.nulls_stay


# -- the analysis reads the declaration, and nothing else --------------------------------


class Scaled(UnaryExpression):
    """A function the mirror does not know (no declaration): maybe monotonic, maybe not."""

    __slots__ = ()
    _fixed_type = T.INT


class Shifted(Scaled):
    """The same function, declared increasing and strict on its class, as a new mirrored
    function with ordering semantics would be."""

    __slots__ = ()

    def ordering_fact(self):
        return OrderingFact(self.child, increasing=True, strict=True)


class Reordered(Scaled):
    """Declared increasing, but NULL goes somewhere else than the argument's NULLs."""

    __slots__ = ()

    def ordering_fact(self):
        return OrderingFact(self.child, increasing=True, strict=True, nulls_stay=False)


def sorted_by(*exprs) -> EquivalenceProperties:
    p = EquivalenceProperties()
    p.orderings.append(Ordering(tuple(SortKey(e) for e in exprs), True))
    return p


def test_a_class_without_a_declaration_is_not_monotonic():
    assert Scaled(i).ordering_fact() is None
    assert not sorted_by(i).ordering_satisfy([asc(Scaled(i))])


def test_a_declaration_on_the_class_is_all_the_analysis_needs():
    p = sorted_by(i, lng)
    assert p.ordering_satisfy([asc(Shifted(i))])
    assert not p.ordering_satisfy([desc(Shifted(i))])


def test_a_declared_function_that_moves_nulls_is_not_treated_as_ordered():
    assert not sorted_by(i).ordering_satisfy([asc(Reordered(i))])


def test_a_non_strict_function_ends_the_succinct_ordering():
    # Ties in the hour do not make ts tie: the keys after a non-strict one are dropped.
    hour = TruncTimestamp(lit("HOUR"), ts, "UTC")
    assert [o.keys for o in sorted_by(hour, i).succinct_orderings()] == [(SortKey(hour),)]
    shifted = Shifted(ts)
    assert [o.keys for o in sorted_by(shifted, i).succinct_orderings()] == [
        (SortKey(shifted), SortKey(i))]


# -- strictness through composition (issue 17, item 2) --------------------------------------

b = col("b", 10, T.INT)
nn = AttributeReference("nn", T.INT, False, None, 12)


def plus(x, c, ctx=ANSI, t=T.INT):
    return Add(x, lit(c), ctx, _type=t)


def times(c, x, ctx=ANSI, t=T.INT):
    return Multiply(lit(c), x, ctx, _type=t)


def minus(x, c, ctx=ANSI, t=T.INT):
    return Subtract(x, lit(c), ctx, _type=t)


def test_facts_compose_direction_strictness_and_nulls():
    inner = OrderingFact(i, increasing=False, strict=True)
    assert inner.then(OrderingFact(i, increasing=False, strict=True)) == OrderingFact(
        i, True, True)
    assert inner.then(OrderingFact(i, increasing=True, strict=False)) == OrderingFact(
        i, False, False)
    assert inner.then(OrderingFact(i, True, True, nulls_stay=False)).nulls_stay is False


def test_strict_arguments_follow_the_chain_until_a_non_strict_function():
    affine = minus(times(3, i), 7)
    assert affine.strict_arguments() == (times(3, i), i)
    assert Cast(plus(i, 1), T.LONG).strict_arguments() == (plus(i, 1), i)
    assert plus(i, 1, LEGACY).strict_arguments() == ()
    quarter = TruncDate(Cast(ntz, T.DATE), lit("QUARTER"))
    assert quarter.strict_arguments() == ()
    assert Cast(TruncDate(d, lit("QUARTER")), T.TIMESTAMP_NTZ).strict_arguments() == (
        TruncDate(d, lit("QUARTER")),)
    assert DateAdd(DateAdd(d, lit(0)), lit(0)).strict_arguments() == (DateAdd(d, lit(0)), d)
    assert DateAdd(d, lit(1)).strict_arguments() == ()


def nulls(e, descending, nulls_first):
    return E.SortOrder(e, "DESC" if descending else "ASC", "FIRST" if nulls_first else "LAST")


# (title, first required key, satisfied under ANSI, satisfied with ANSI off) over rows
# sorted by (i ASC NULLS FIRST, b ASC NULLS FIRST), then b ASC required after it.
COMPOSED = [
    ("i + 1", lambda ctx: asc(plus(i, 1, ctx)), True, False),
    ("3 * i - 7", lambda ctx: asc(minus(times(3, i, ctx), 7, ctx)), True, False),
    ("cast(i + 1 as bigint)", lambda ctx: asc(Cast(plus(i, 1, ctx), T.LONG)), True, False),
    ("cast(i as bigint) * 2 (a widening cast inside)",
     lambda ctx: asc(times(2, Cast(i, T.LONG), ctx, T.LONG)), True, False),
    ("-(i + 1) DESC NULLS FIRST: direction flips, NULLs stay first",
     lambda ctx: nulls(UnaryMinus(plus(i, 1, ctx), True), True, True), True, False),
    ("-(i + 1) DESC (NULLS LAST): NULLs would move",
     lambda ctx: desc(UnaryMinus(plus(i, 1, ctx), True)), False, False),
    ("-(i + 1) ASC: the wrong direction",
     lambda ctx: asc(UnaryMinus(plus(i, 1, ctx), True)), False, False),
    ("-(-(i)) ASC: two flips", lambda ctx: asc(UnaryMinus(UnaryMinus(i, True), True)), True,
     True),
    ("(i * -2) * -3 ASC: two decreasing factors",
     lambda ctx: asc(times(-3, times(-2, i, ctx), ctx)), True, False),
    ("cast(cast(i as bigint) as int) + 1: a narrowing cast in the chain",
     lambda ctx: asc(plus(Cast(Cast(i, T.LONG), T.INT), 1, ctx)), False, False),
]


@pytest.mark.parametrize("title, build, ansi_ok, legacy_ok", COMPOSED,
                         ids=[c[0] for c in COMPOSED])
def test_a_composed_strict_function_keeps_the_keys_after_it(title, build, ansi_ok,
                                                             legacy_ok):
    p = sorted_by(i, b)
    for ctx, expected in ((ANSI, ansi_ok), (LEGACY, legacy_ok)):
        assert p.ordering_satisfy([build(ctx), asc(b)]) == expected, (title, ctx)


def test_minus_on_a_non_nullable_column_may_put_nulls_anywhere():
    p = sorted_by(nn, b)
    assert p.ordering_satisfy([desc(UnaryMinus(plus(nn, 1), True)), asc(b)])


def test_a_non_strict_function_in_the_chain_loses_the_keys_after_it():
    # Sorted by (d, b): trunc(d, 'QUARTER') and its widening to a timestamp are ordered,
    # but a quarter of days ties on them while b restarts each day.
    p = EquivalenceProperties()
    p.orderings.append(Ordering((SortKey(d), SortKey(b)), True))
    q = TruncDate(d, lit("QUARTER"))
    for e in (q, Cast(q, T.TIMESTAMP_NTZ)):
        assert p.ordering_satisfy([asc(e)])
        assert not p.ordering_satisfy([asc(e), asc(b)])
    assert p.ordering_satisfy([asc(DateAdd(DateSub(d, lit(0)), lit(0))), asc(b)])
    # A shift by days wraps around at the ends of the date range: not ordered at all.
    assert not p.ordering_satisfy([asc(DateAdd(d, lit(1)))])
    assert not p.ordering_satisfy([asc(TruncDate(d, lit("MM")))])
    # A decimal: floor(dec + 0.01) is ordered with dec, not strictly.
    q = sorted_by(dec, b)
    shifted = Add(dec, dec_lit("0.01", 3, 2), ANSI, _type=T.decimal(11, 2))
    assert q.ordering_satisfy([asc(shifted), asc(b)])
    assert q.ordering_satisfy([asc(Floor(shifted))])
    assert not q.ordering_satisfy([asc(Floor(shifted)), asc(b)])
