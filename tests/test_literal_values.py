"""Literals come back from Python exactly as Spark sent them, for every type the wire carries.

A literal a rule leaves alone goes back by reference; one in a node the rule rebuilt goes
back by value (sparkext.codec.literals), and Spark then runs what Python wrote. If a
value changed on the way (a digit, the sign of a zero, a NaN, a character outside the
BMP, a microsecond), the query would quietly compute with another constant.

For each Spark type: a seeded generator makes values (bounds of every integer width,
-0.0, NaN and infinities, decimals with as many digits as their type holds, p == s
included, strings with characters outside the BMP and empty ones, bytes, dates,
timestamps with and without a zone, intervals, arrays, maps, structs, and NULL). Plain
Spark caches a table of them; then one query selects every value as a literal and
compares the column with every literal (``c <=> lit``). It runs under plain Spark, and
with ``rebuild_everything`` in strict mode, which rebuilds every node so that every
literal goes Python -> JVM; the rows must be the same, compared by ``repr`` so that
-0.0 is not 0.0 and ``Decimal('0.0000')`` is not ``Decimal('0')``.
"""

from __future__ import annotations

import datetime as dt
import random
import struct

import pytest

import sparkext
from sparkext import Batch, Once
from sparkext.testing.rules import rebuild_everything
from tests.conftest import conf, rules_enabled

SEED = 20261124

_EPOCH = dt.datetime(1970, 1, 1)


def _text(s: str) -> str:
    # As UTF-8 bytes: no SQL escaping to get wrong, any character at all.
    return f"CAST(X'{s.encode('utf-8').hex()}' AS STRING)"


def _ints(rng, sql_type, bits):
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    vals = [lo, hi, 0, -1, 1] + [rng.randint(lo, hi) for _ in range(5)]
    return [f"CAST('{v}' AS {sql_type})" for v in vals]


def _float_text(x: float) -> str:
    if x != x:
        return "NaN"
    if x in (float("inf"), float("-inf")):
        return "Infinity" if x > 0 else "-Infinity"
    return repr(x)


def _doubles(rng):
    special = [-0.0, 0.0, float("nan"), float("inf"), float("-inf"), 5e-324, -5e-324,
               2.2250738585072014e-308, 1.7976931348623157e308, 0.1]
    rand = []
    while len(rand) < 6:
        x = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]
        if x == x and abs(x) != float("inf"):
            rand.append(x)
    return [f"CAST('{_float_text(x)}' AS DOUBLE)" for x in special + rand]


def _floats(rng):
    special = [-0.0, 0.0, float("nan"), float("inf"), float("-inf"),
               struct.unpack("<f", struct.pack("<I", 1))[0],  # the smallest subnormal
               struct.unpack("<f", struct.pack("<I", 0x7F7FFFFF))[0]]  # the largest
    rand = []
    while len(rand) < 6:
        x = struct.unpack("<f", rng.getrandbits(32).to_bytes(4, "little"))[0]
        if x == x and abs(x) != float("inf"):
            rand.append(x)
    # (The shortest text of the float32's exact value: parsed as FLOAT, it is that value.)
    return [f"CAST('{_float_text(x)}' AS FLOAT)" for x in special + rand]


def _decimals(rng, p, s, zero=True):
    def digits(n):
        return "".join(rng.choice("0123456789") for _ in range(n))

    def number(whole, frac, sign=""):
        return sign + (whole or "0") + ("." + frac if frac else "")

    vals = [number("9" * (p - s), "9" * s), number("9" * (p - s), "9" * s, "-"),
            number("", "0" * (s - 1) + "1" if s else "", "-" if s else ""),
            number(digits(p - s), digits(s)), number(digits(p - s), digits(s), "-")]
    if zero:
        vals.append(number("", "0" * s))
    return [f"CAST('{v}' AS DECIMAL({p},{s}))" for v in vals]


def _strings(rng):
    pool = ("a", "Z", "é", "ß", "日", "本", "😀", "𝄞", "\u0000", "'", '"', "\\", " ", "\n",
            "\U0010FFFF", "\u200d")
    fixed = ["", "a", "😀", "x𝄞y", "'\"\\", "\u0000"]
    return [_text(s) for s in fixed] + [
        _text("".join(rng.choice(pool) for _ in range(rng.randint(1, 12)))) for _ in range(6)]


def _binaries(rng):
    vals = [b"", b"\x00", b"\xff\x00", bytes(range(256))[:40]] + [
        rng.getrandbits(8 * n).to_bytes(n, "little") for n in (1, 7, 33)]
    return [f"X'{v.hex()}'" for v in vals]


def _dates(rng):
    fixed = ["0001-01-01", "9999-12-31", "1970-01-01", "1969-12-31", "1582-10-04",
             "1582-10-15", "2000-02-29"]
    rand = [(dt.date(1, 1, 1) + dt.timedelta(days=rng.randint(0, 3_652_058))).isoformat()
            for _ in range(5)]
    return [f"DATE '{d}'" for d in fixed + rand]


def _timestamps(rng, sql_type):
    fixed = ["1970-01-01 00:00:00", "1969-12-31 23:59:59.999999", "1900-01-01 00:00:00",
             "2262-04-11 23:47:16.854775", "1582-10-15 00:00:00.000001"]
    rand = [(_EPOCH + dt.timedelta(microseconds=rng.randint(-2_208_988_800_000_000,
                                                             4_102_444_800_000_000)))
            .isoformat(sep=" ") for _ in range(5)]
    return [f"{sql_type} '{t}'" for t in fixed + rand]


def _day_time(rng):
    fixed = ["106751991 04:00:54.775807", "-106751991 04:00:54.775808", "0 00:00:00",
             "0 00:00:00.000001"]
    rand = [f"{rng.randint(-99999, 99999)} {rng.randint(0, 23):02}:{rng.randint(0, 59):02}:"
            f"{rng.randint(0, 59):02}.{rng.randint(0, 999999):06}" for _ in range(4)]
    return [f"INTERVAL '{v}' DAY TO SECOND" for v in fixed + rand]


def _year_month(rng):
    fixed = ["178956970-7", "-178956970-8", "0-0", "0-1"]
    rand = [f"{rng.randint(-99999, 99999)}-{rng.randint(0, 11)}" for _ in range(4)]
    return [f"INTERVAL '{v}' YEAR TO MONTH" for v in fixed + rand]


#: (title, SQL type, literal texts, comparable with <=>, collectable by pyspark)
def cases() -> list[tuple[str, str, list[str], bool, bool]]:
    rng = random.Random(SEED)
    out = [
        ("tinyint", "TINYINT", _ints(rng, "TINYINT", 8), True, True),
        ("smallint", "SMALLINT", _ints(rng, "SMALLINT", 16), True, True),
        ("int", "INT", _ints(rng, "INT", 32), True, True),
        ("bigint", "BIGINT", _ints(rng, "BIGINT", 64), True, True),
        ("double", "DOUBLE", _doubles(rng), True, True),
        ("float", "FLOAT", _floats(rng), True, True),
        ("boolean", "BOOLEAN", ["true", "false"], True, True),
        ("string", "STRING", _strings(rng), True, True),
        ("binary", "BINARY", _binaries(rng), True, True),
        ("date", "DATE", _dates(rng), True, True),
        ("timestamp", "TIMESTAMP", _timestamps(rng, "TIMESTAMP"), True, True),
        ("timestamp_ntz", "TIMESTAMP_NTZ", _timestamps(rng, "TIMESTAMP_NTZ"), True, True),
        ("interval day to second", "INTERVAL DAY TO SECOND", _day_time(rng), True, True),
        ("interval year to month", "INTERVAL YEAR TO MONTH", _year_month(rng), True, False),
        ("array<int>", "ARRAY<INT>",
         ["array(1, NULL, -2147483648)", "CAST(array() AS ARRAY<INT>)", "array(0)"], True, True),
        ("array<array<double>>", "ARRAY<ARRAY<DOUBLE>>",
         ["array(array(CAST('-0.0' AS DOUBLE), CAST('NaN' AS DOUBLE)), NULL)",
          "array(array(1.5D))"], True, True),
        ("array<string>", "ARRAY<STRING>", [f"array({_text('😀')}, {_text('')}, NULL)"],
         True, True),
        ("map<string,int>", "MAP<STRING,INT>",
         [f"map({_text('a')}, 1, {_text('𝄞')}, NULL)", "CAST(map() AS MAP<STRING,INT>)"],
         False, True),
        ("map<int,array<decimal>>", "MAP<INT,ARRAY<DECIMAL(5,5)>>",
         ["map(1, array(CAST('0.00001' AS DECIMAL(5,5))), 2, NULL)"], False, True),
        ("struct", "STRUCT<x: INT, y: STRING, z: DATE>",
         [f"named_struct('x', 1, 'y', {_text('é')}, 'z', DATE '0001-01-01')",
          "named_struct('x', CAST(NULL AS INT), 'y', CAST(NULL AS STRING), "
          "'z', CAST(NULL AS DATE))"], True, True),
    ]
    for p, s in ((1, 0), (5, 2), (10, 10), (18, 9), (19, 0), (38, 0), (38, 10), (38, 37)):
        out.append((f"decimal({p},{s})", f"DECIMAL({p},{s})",
                    _decimals(rng, p, s, zero=p != s), True, True))
    return out


CASES = cases()


def _query(spark, name: str, sql_type: str, lits: list[str], comparable: bool,
           collectable: bool):
    """The cached table of the values (built by plain Spark) and the query over it."""
    table = "lits_" + "".join(ch if ch.isalnum() else "_" for ch in name)
    values = lits + [f"CAST(NULL AS {sql_type})"]
    source = " UNION ALL ".join(f"SELECT CAST({v} AS {sql_type}) AS c" for v in values)
    with conf(spark, {"spark.sparkext.enabled": "false"}):
        cached = spark.sql(source).cache()
        cached.count()
    cached.createOrReplaceTempView(table)
    cols = ["CAST(c AS STRING) AS cs"]
    if collectable:
        cols.append("c")
        cols += [f"{v} AS l{i}" for i, v in enumerate(values)]
    if comparable:
        cols += [f"c <=> {v} AS m{i}" for i, v in enumerate(values)]
    return cached, f"SELECT {', '.join(cols)} FROM {table}"


def _rows(df) -> list[str]:
    return sorted(repr(r) for r in df.collect())


@pytest.mark.parametrize("name,sql_type,lits,comparable,collectable", CASES,
                         ids=[c[0] for c in CASES])
def test_literals_of_every_type_come_back_from_python_exactly(spark, name, sql_type, lits,
                                                              comparable, collectable):
    cached, sql = _query(spark, name, sql_type, lits, comparable, collectable)
    try:
        with conf(spark, {"spark.sparkext.enabled": "false"}):
            expected = _rows(spark.sql(sql))
        with rules_enabled(spark, batches=[Batch("rebuild", Once(), (rebuild_everything,))]):
            sparkext.reset_metrics(spark)
            actual = _rows(spark.sql(sql))
            m = sparkext.metrics(spark)
        # Strict mode: a refused answer would have raised. The rewrite was taken, so the
        # rows below came from the literals Python wrote.
        assert m["accepted"] >= 1 and m["rejected"] == 0 and m["python_errors"] == 0, m
        assert actual == expected
    finally:
        cached.unpersist()


def test_the_generator_covers_bounds_and_the_awkward_values():
    texts = " ".join(" ".join(c[2]) for c in CASES)
    for needle in ("'-9223372036854775808' AS BIGINT", "'-0.0' AS DOUBLE", "'NaN' AS FLOAT",
                   "X''", "DECIMAL(38,37)", "TIMESTAMP_NTZ", "YEAR TO MONTH", "DAY TO SECOND",
                   "f09f9880"):  # (UTF-8 of a character outside the BMP)
        assert needle in texts, needle
