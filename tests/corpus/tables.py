"""Small tables for the pipeline corpus: NULLs, duplicates, NaN, empty tables, and one
column of every Spark SQL data type. Registered as temp views by the ``tables`` fixture."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DateType,
    DayTimeIntervalType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

UTC = dt.timezone.utc

PEOPLE = StructType([
    StructField("id", IntegerType()),
    StructField("name", StringType()),
    StructField("age", IntegerType()),
    StructField("dept_id", IntegerType()),
    StructField("salary", DecimalType(10, 2)),
    StructField("score", DoubleType()),
    StructField("joined", DateType()),
    StructField("active", BooleanType()),
    StructField("tags", ArrayType(StringType())),
    StructField("attrs", MapType(StringType(), IntegerType())),
    StructField("addr", StructType([StructField("city", StringType()),
                                    StructField("zip", StringType())])),
])

_people = [
    (1, "ann", 34, 10, Decimal("5200.50"), 1.5, dt.date(2019, 3, 1), True, ["a", "b"],
     {"x": 1}, ("Paris", "75001")),
    (2, "bob", None, 20, Decimal("4100.00"), None, dt.date(2020, 7, 15), False, [], {},
     ("Lyon", None)),
    (3, "cid", 45, None, None, float("nan"), None, None, None, None, None),
    (4, "dee", 29, 10, Decimal("6100.25"), -3.0, dt.date(2018, 1, 31), True, ["c"],
     {"y": 2, "z": None}, ("Paris", "75002")),
    (4, "dee", 29, 10, Decimal("6100.25"), -3.0, dt.date(2018, 1, 31), True, ["c"],
     {"y": 2, "z": None}, ("Paris", "75002")),
    (5, None, 51, 30, Decimal("7000.00"), 0.0, dt.date(2021, 12, 24), True, ["a", None],
     {"x": 3}, ("Nice", "06000")),
    (6, "fay", 0, 20, Decimal("0.00"), 10.25, dt.date(2022, 2, 2), False, ["b", "b"],
     {"w": 0}, (None, None)),
    (7, "gus", -1, 40, Decimal("-1.00"), float("inf"), dt.date(1999, 12, 31), True, [],
     None, ("Lille", "59000")),
]

DEPTS = StructType([
    StructField("dept_id", IntegerType()),
    StructField("dept_name", StringType()),
    StructField("region", StringType()),
    StructField("budget", LongType()),
])

_depts = [
    (10, "eng", "eu", 1000), (20, "ops", "us", 500), (20, "ops2", "us", 50),
    (30, "hr", None, None), (None, "ghost", "eu", 1), (50, "empty", "apac", 0),
]

EVENTS = StructType([
    StructField("eid", LongType()),
    StructField("host", StringType()),
    StructField("ts", TimestampType()),
    StructField("kind", StringType()),
    StructField("amount", DecimalType(12, 3)),
    StructField("person_id", IntegerType()),
])


def _events():
    base = dt.datetime(2024, 1, 1, tzinfo=UTC)
    hosts = ["h1", "h2", "h3", None]
    kinds = ["click", "view", "buy"]
    rows = []
    for i in range(60):
        rows.append((i, hosts[i % 4], base + dt.timedelta(minutes=37 * i),
                     kinds[i % 3] if i % 11 else None,
                     Decimal(i * 7 % 13) / 4 if i % 9 else None, (i % 9) or None))
    return rows


ALL_TYPES = StructType([
    StructField("b", ByteType()), StructField("s", ShortType()), StructField("i", IntegerType()),
    StructField("l", LongType()), StructField("f", FloatType()), StructField("d", DoubleType()),
    StructField("dec", DecimalType(20, 5)), StructField("str", StringType()),
    StructField("bin", BinaryType()), StructField("bool", BooleanType()),
    StructField("date", DateType()), StructField("ts", TimestampType()),
    StructField("ts_ntz", TimestampNTZType()),
    StructField("dt_iv", DayTimeIntervalType()),
    StructField("arr", ArrayType(IntegerType())),
    StructField("m", MapType(StringType(), DoubleType())),
    StructField("st", StructType([StructField("x", IntegerType()),
                                  StructField("y", StringType())])),
])

_all_types = [
    (1, 300, 70000, 2**40, 1.5, 2.25, Decimal("12345.67891"), "héllo", b"\x00\x01", True,
     dt.date(2024, 2, 29), dt.datetime(2024, 2, 29, 12, 30, tzinfo=UTC),
     dt.datetime(2024, 2, 29, 12, 30), dt.timedelta(days=1, seconds=5), [1, 2, None],
     {"k": 1.0}, (1, "one")),
    (-128, -32768, -2**31, -2**63, float("nan"), float("-inf"), Decimal("-0.00001"), "",
     b"", False, dt.date(1970, 1, 1), dt.datetime(1970, 1, 1, tzinfo=UTC),
     dt.datetime(1970, 1, 1), dt.timedelta(0), [], {}, (None, None)),
    (None,) * 17,
]


def register(spark) -> dict:
    """Creates the corpus tables as temp views; returns them by name."""
    tables = {
        "people": spark.createDataFrame(_people, PEOPLE),
        "depts": spark.createDataFrame(_depts, DEPTS),
        "events": spark.createDataFrame(_events(), EVENTS),
        # pyspark cannot build year-month intervals from Python values: added in SQL.
        "all_types": spark.createDataFrame(_all_types, ALL_TYPES).withColumn(
            "ym_iv", F.expr("CASE WHEN i IS NULL THEN NULL "
                            "WHEN i > 0 THEN INTERVAL '1-2' YEAR TO MONTH "
                            "ELSE INTERVAL '0-0' YEAR TO MONTH END")),
        "empty_people": spark.createDataFrame([], PEOPLE),
        "empty_depts": spark.createDataFrame([], DEPTS),
    }
    for name, df in tables.items():
        df.createOrReplaceTempView(name)
    # CHAR and VARCHAR exist only as column types of a table.
    spark.sql("DROP TABLE IF EXISTS chars")
    spark.sql("CREATE TABLE chars (id INT, c CHAR(5), v VARCHAR(10)) USING parquet")
    spark.sql("INSERT INTO chars VALUES (1, 'ab', 'xyz'), (2, NULL, NULL), (3, 'abcde', 'x')")
    tables["chars"] = spark.table("chars")
    # Last: TIME (Spark 4.1+), VARIANT and collations (4.0+) fail on older lines, where
    # tests/compat/ keeps the tables made so far.
    # Types Python cannot build values of: TIME, VARIANT, a collated string.
    tables["more_types"] = spark.sql(
        "SELECT * FROM VALUES "
        "(1, TIME'12:34:56', parse_json('{\"a\": 1, \"b\": [1, 2]}'), collate('Abc', 'UTF8_LCASE')), "
        "(2, NULL, NULL, NULL), "
        "(3, TIME'00:00:01', parse_json('null'), collate('abc', 'UTF8_LCASE')) AS t(id, t, v, c)")
    tables["more_types"].createOrReplaceTempView("more_types")
    return tables

