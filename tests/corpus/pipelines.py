"""A corpus of DataFrame pipelines for differential tests.

Every pipeline reads the tables of ``tests/corpus/tables.py`` (NULLs, a duplicated row,
NaN and infinity, empty tables, one column of every Spark SQL type) through
``spark.table`` or ``spark.sql`` and returns a DataFrame. The differential tests run each
pipeline with and without an optimizer plugin and compare the rows as multisets, so a
pipeline must return the same multiset of rows on every run, whatever its plan looks like:

* ``limit`` and ``offset`` only follow an ``orderBy`` that is total on the rows it orders
  (a unique key, or every selected column: ``people`` holds one row twice);
* ``sample`` has a seed and reads a table directly; ``rand``/``randn`` have seeds;
* no ``first``/``last``, unsorted ``collect_list``, ``row_number`` over ties,
  ``current_timestamp`` or ``uuid``; ``dropDuplicates`` keeps columns its subset determines;
* floating-point aggregates only add values that are exact in binary (or NaN/infinity).

Together the pipelines cover every logical node kind the bridge mirrors and every join type
(the ExistenceJoin of an EXISTS under OR included), subqueries, hints, Python UDFs,
higher-order functions, windows, generators, grouping sets, repartitioning, literals of
every type and every column of ``all_types``; the round-trip and differential suites check
that coverage. Most pipelines put a filter where a pushdown rule has to reason about it:
above joins (on one side, on both, on the NULL-padded side), aggregates (HAVING), windows
(on the partition key and on a window's output), unions, generators and limits.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from decimal import Decimal

import pandas as pd  # pandas UDFs resolve their type hints in this module's globals
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

PIPELINES: dict[str, Callable[[SparkSession], DataFrame]] = {}


def pipeline(fn):
    PIPELINES[fn.__name__] = fn
    return fn


def people(s):
    return s.table("people")


def depts(s):
    return s.table("depts")


def events(s):
    return s.table("events")


def all_types(s):
    return s.table("all_types")


# -- filters and projections -------------------------------------------------------------


@pipeline
def filter_then_project(s):
    """A filter on an alias, above the projection that defines it."""
    return people(s).select("id", (F.col("age") + 1).alias("age1")).where("age1 > 30")


@pipeline
def project_above_filter(s):
    """Computed columns above a conjunctive filter."""
    return (people(s).where("age >= 0 AND active")
            .select("id", F.upper("name").alias("n"), (F.col("salary") * 2).alias("s2")))


@pipeline
def stacked_filters(s):
    """Filters separated by projections that rename and compute columns."""
    return (people(s).where("name IS NOT NULL").select("id", "name", "salary")
            .where(F.col("salary") > 1000).select("id", F.upper("name").alias("n"))
            .where("id > 1"))


@pipeline
def filter_on_nulls(s):
    """IS NULL, IS NOT NULL and null-safe equality."""
    return (people(s).where("age IS NULL OR dept_id <=> 20").where(F.col("name").isNotNull())
            .select("id", "name", "age"))


@pipeline
def always_false_filter(s):
    """A filter that is false for every row (Catalyst folds it to an empty relation)."""
    return people(s).where("1 = 0").select("id")


@pipeline
def contradictory_filter(s):
    """A filter that no row satisfies, though no literal says so."""
    return people(s).where("age > 50 AND age < 10").select("id", "age")


@pipeline
def filter_on_null_comparisons(s):
    """Comparisons with NULL: never true, so nothing passes."""
    return people(s).where("age = NULL OR name <> NULL").select("id")


@pipeline
def filter_over_empty_table(s):
    """Filters and projections over an empty table."""
    return s.table("empty_people").where("age > 1").select("id", "name")


@pipeline
def short_in_lists(s):
    """Short IN lists (In): plain, negated, and one holding a NULL."""
    return people(s).where((F.col("dept_id").isin(10, 20) & ~F.col("id").isin(2, 99))
                           | F.expr("age IN (0, NULL)"))


@pipeline
def long_in_lists(s):
    """IN lists of 30 values (InSet), on a number, a string and negated."""
    return events(s).where(
        F.col("eid").isin(list(range(0, 60, 2)))
        & F.col("host").isin([f"h{i}" for i in range(1, 31)])
        & ~F.col("person_id").isin(list(range(100, 130))))


@pipeline
def not_in_list_with_null(s):
    """NOT IN over a list holding NULL (never true), under an OR."""
    return people(s).where("id NOT IN (1, NULL) OR name = 'ann'").select("id", "name")


@pipeline
def string_predicates(s):
    """LIKE, ILIKE, RLIKE, startswith, contains and endswith."""
    name = F.col("name")
    return people(s).where(name.like("%e%") | name.startswith("a") | name.contains("u")
                           | name.endswith("y") | name.rlike("^c.d$") | name.ilike("B%"))


@pipeline
def negated_string_predicates(s):
    """Negated LIKE and startswith over nullable strings and struct fields."""
    return people(s).where(~F.col("name").like("%a%") & ~F.col("addr.city").startswith("P"))


@pipeline
def case_when_and_coalesce(s):
    """CASE WHEN, COALESCE, IF, NVL, NULLIF, greatest and least."""
    return people(s).select(
        "id",
        F.when(F.col("age") > 30, "old").when(F.col("age") > 0, "young").otherwise("?")
        .alias("band"),
        F.coalesce("age", "dept_id", F.lit(-1)).alias("co"),
        F.expr("if(active, 1, 0)").alias("flag"), F.expr("nvl(name, 'anon')").alias("nv"),
        F.expr("nullif(age, 29)").alias("ni"),
        F.greatest("age", "dept_id").alias("g"), F.least("age", "dept_id").alias("l"))


@pipeline
def case_when_in_filter(s):
    """A CASE WHEN and a COALESCE inside a filter."""
    return people(s).where(
        F.when(F.col("dept_id") == 10, F.col("age") > 30)
        .when(F.col("dept_id").isNull(), F.lit(True)).otherwise(F.col("active"))
        & (F.coalesce("score", F.lit(0.0)) >= 0)).select("id", "dept_id")


@pipeline
def decimal_arithmetic(s):
    """Decimal multiplication, division, rounding and widening."""
    salary = F.col("salary")
    return people(s).where(salary > Decimal("0")).select(
        "id", (salary * F.lit(Decimal("1.10"))).alias("raised"), (salary / 3).alias("third"),
        (salary + F.col("age")).alias("plus_int"), F.round(salary, -2).alias("r"),
        (salary * salary).alias("sq"),
        F.expr("CAST(salary AS DECIMAL(20, 4)) - 0.0001BD").alias("wide"))


@pipeline
def integral_arithmetic(s):
    """Division, remainder, pmod, div, negation, abs and bitwise operators on integers."""
    return people(s).select(
        "id", (F.col("id") % 3).alias("m"), F.expr("pmod(id - 5, 3)").alias("pm"),
        F.expr("id div 2").alias("d"), (F.col("id") / 4).alias("q"), (-F.col("age")).alias("neg"),
        F.abs("age").alias("a"), F.expr("id & 3").alias("band"),
        F.shiftleft("id", 2).alias("shl"), (F.col("age") * F.lit(10**10)).alias("big"))


@pipeline
def casts_between_types(s):
    """Casts between numbers, strings, dates and timestamps (NaN cast to decimal is NULL)."""
    return people(s).select(
        F.col("id").cast("long").alias("l"), F.col("salary").cast("double").alias("d"),
        F.col("joined").cast("timestamp").alias("ts"), F.col("id").cast("string").alias("s"),
        F.col("score").cast("decimal(10,2)").alias("dec"),
        F.expr("try_cast(name AS INT)").alias("ti"),
        F.col("active").cast("int").alias("ai")).where("l > 1")


@pipeline
def casts_on_all_types(s):
    """Widening casts, try_cast narrowing and casts to string from every column type."""
    return all_types(s).select(
        F.col("b").cast("decimal(5,0)").alias("b_dec"), F.col("s").cast("int").alias("s_int"),
        F.expr("try_cast(i AS SMALLINT)").alias("i_short"), F.col("l").cast("double").alias("ld"),
        F.col("f").cast("double").alias("fd"), F.col("d").cast("float").alias("df"),
        F.col("dec").cast("decimal(10,2)").alias("dec2"), F.col("str").cast("binary").alias("sb"),
        F.col("bin").cast("string").alias("bs"), F.col("bool").cast("string").alias("boo"),
        F.col("date").cast("timestamp").alias("dts"), F.col("ts").cast("date").alias("tsd"),
        F.col("ts").cast("timestamp_ntz").alias("tsn"), F.col("ts_ntz").cast("string").alias("ns"),
        F.col("dt_iv").cast("string").alias("dis"), F.col("ym_iv").cast("string").alias("yis"),
        F.col("arr").cast("array<long>").alias("al"), F.col("m").cast("string").alias("ms"),
        F.col("st").cast("string").alias("sts"))


@pipeline
def date_functions(s):
    """date_trunc, trunc, year, month, date_add, date_sub, datediff, to_date, last_day."""
    return events(s).select(
        "eid", F.date_trunc("hour", "ts").alias("h"), F.trunc(F.to_date("ts"), "MM").alias("m"),
        F.year("ts").alias("y"), F.month("ts").alias("mo"), F.dayofweek("ts").alias("dow"),
        F.date_add(F.to_date("ts"), 3).alias("d3"), F.date_sub(F.to_date("ts"), 40).alias("d40"),
        F.datediff(F.to_date("ts"), F.to_date(F.lit("2023-12-25"))).alias("dd"),
        F.last_day("ts").alias("ld"), F.hour("ts").alias("hr")).where("y = 2024 AND hr < 12")


@pipeline
def date_functions_on_dates(s):
    """Date parsing, formatting and arithmetic on a nullable date column."""
    return people(s).where(F.year("joined") >= 2019).select(
        "id", F.date_format("joined", "yyyy/MM").alias("ym"),
        F.add_months("joined", 13).alias("am"),
        F.to_date(F.concat(F.year("joined").cast("string"), F.lit("-06-30"))).alias("mid"),
        F.trunc("joined", "year").alias("ty"), F.unix_timestamp("joined").alias("epoch"))


@pipeline
def timestamp_interval_arithmetic(s):
    """Timestamps, dates and NTZ timestamps plus interval columns and literals."""
    return all_types(s).where("ts IS NOT NULL").select(
        (F.col("ts") + F.col("dt_iv")).alias("ts_plus"),
        (F.col("ts_ntz") - F.expr("INTERVAL '1' DAY")).alias("ntz_minus"),
        F.expr("date + ym_iv").alias("date_plus"),
        F.expr("timestampadd(HOUR, 3, ts)").alias("added"),
        F.expr("ts - INTERVAL '2 03:00:00' DAY TO SECOND").alias("back"),
        (F.col("dt_iv") * 2).alias("twice"))


@pipeline
def string_functions(s):
    """upper, lower, substring, length, concat, concat_ws, trim, padding and regexes."""
    name = F.col("name")
    return people(s).select(
        "id", F.upper(name).alias("u"), F.lower(F.initcap(name)).alias("lo"),
        F.substring(name, 1, 2).alias("sub"), F.length(name).alias("len"),
        F.concat(name, F.lit("-"), name).alias("cc"),
        F.concat_ws("/", name, "addr.city").alias("ws"),
        F.trim(F.lit("  x ")).alias("t"), F.lpad(name, 5, "*").alias("lp"),
        F.regexp_replace(name, "[aeiou]", "_").alias("rr"),
        F.regexp_extract("addr.zip", r"^(\d\d)", 1).alias("dep"),
        F.split("addr.zip", "0").alias("sp"),
        F.reverse(name).alias("rev"), F.instr(name, "e").alias("pos"))


@pipeline
def struct_and_map_access(s):
    """Struct fields, map lookups and array elements, filtered on a struct field."""
    return people(s).select(
        "id", F.col("addr.city").alias("city"), F.col("attrs")["x"].alias("x"),
        F.element_at("attrs", F.lit("y")).alias("y"), F.expr("try_element_at(tags, 1)").alias("t1"),
        F.size("tags").alias("n"), F.array_sort(F.map_keys("attrs")).alias("keys"),
    ).where("city IS NOT NULL")


@pipeline
def filter_on_nested_fields(s):
    """Filters on a struct field, a map value and an array element."""
    return people(s).where(
        (F.col("addr.city") == "Paris") & (F.col("attrs")["y"] == 2)
        & F.col("addr").getField("zip").startswith("75") & F.array_contains("tags", "c"))


@pipeline
def constructed_structs_and_maps(s):
    """Structs, maps and arrays built in one projection and taken apart in the next."""
    built = people(s).select(
        F.struct("id", "name").alias("st"), F.create_map(F.lit("age"), "age").alias("m"),
        F.array("id", "dept_id").alias("a"))
    return built.where(F.col("st.id") > 2).select(
        F.col("st.name").alias("name"), F.col("m")["age"].alias("age"), F.col("a")[1].alias("d"))


@pipeline
def higher_order_functions(s):
    """transform, filter, exists, forall and aggregate over arrays (lambda functions)."""
    return people(s).select(
        "id", F.transform("tags", lambda t: F.upper(t)).alias("up"),
        F.filter("tags", lambda t: t != "b").alias("no_b"),
        F.exists("tags", lambda t: t.isNull()).alias("has_null"),
        F.forall("tags", lambda t: t.isin("a", "b")).alias("only_ab"),
        F.aggregate("tags", F.lit(0), lambda acc, t: acc + F.length(t)).alias("chars"),
    ).where(F.size("up") > 0)


@pipeline
def higher_order_functions_on_maps(s):
    """transform with an index, zip_with, map_filter and transform_values."""
    return people(s).where(F.size("tags") > 0).select(
        "id", F.transform("tags", lambda t, i: F.concat(t, i.cast("string"))).alias("indexed"),
        F.zip_with("tags", "tags", lambda a, b: F.concat(a, b)).alias("doubled"),
        F.map_filter("attrs", lambda k, v: v > 0).alias("positive"),
        F.transform_values("attrs", lambda k, v: v * 10).alias("tens"))


@pipeline
def literals_of_every_type(s):
    """A literal of every Spark SQL type, each used in an expression over a column."""
    return s.sql("""
        SELECT id,
               id + 1Y AS byte_plus, dept_id * 2S AS short_times, id + 3 AS int_plus,
               id * 4000000000L AS long_times, score * 1.5F AS float_times,
               score + 2.25D AS double_plus, salary + 12.345BD AS decimal_plus,
               concat(name, 'text') AS string_concat,
               concat(X'CAFE', CAST(name AS BINARY)) AS binary_concat,
               active AND true AS boolean_and, datediff(joined, DATE'2020-01-01') AS days,
               CAST(joined AS TIMESTAMP) < TIMESTAMP'2020-01-01 00:00:00' AS before_ts,
               CAST(joined AS TIMESTAMP_NTZ) + INTERVAL '1 02:03:04' DAY TO SECOND AS ntz,
               joined + INTERVAL '1-2' YEAR TO MONTH AS later,
               array_union(tags, array('z')) AS arr, map_concat(attrs, map('k', 9)) AS m,
               named_struct('x', id, 'y', 'z').y AS st_y, coalesce(age, NULL, -1) AS nul
        FROM people
        WHERE joined > DATE'2019-01-01' AND salary > 10.5BD AND active <> false""")


@pipeline
def literal_comparisons_on_all_types(s):
    """Every column of all_types compared with a literal of its own type."""
    return s.sql("""
        SELECT * FROM all_types
        WHERE b > -100Y AND s <> 7S AND i > 0 AND l > 0L AND f > 1.0F AND d <> 3.0D
          AND dec > 0.5BD AND str <> 'x' AND bin = X'0001' AND bool = true
          AND date > DATE'2000-01-01' AND ts > TIMESTAMP'2000-01-01 00:00:00'
          AND ts_ntz < TIMESTAMP_NTZ'2030-01-01 00:00:00'
          AND dt_iv > INTERVAL '0 00:00:01' DAY TO SECOND
          AND ym_iv >= INTERVAL '1-0' YEAR TO MONTH
          AND array_contains(arr, 2) AND arr <> array(7) AND m['k'] = 1.0D
          AND st = named_struct('x', 1, 'y', 'one')""")


@pipeline
def every_column_of_all_types(s):
    """Every column of all_types filtered through the DataFrame API with Python literals."""
    return all_types(s).where(
        (F.col("b") > -100) & (F.col("s") > 0) & (F.col("i") != 5) & (F.col("l") > 0)
        & (F.col("f") < 2.0) & (F.col("d") != 3.0) & (F.col("dec") > Decimal("0.5"))
        & (F.col("str") != "x") & (F.col("bin") != F.lit(b"\x09")) & (F.col("bool") == F.lit(True))
        & (F.col("date") > F.lit(dt.date(2000, 1, 1)))
        & (F.col("ts") > F.lit(dt.datetime(2000, 1, 1, tzinfo=dt.timezone.utc)))
        & (F.col("ts_ntz") > F.lit(dt.datetime(2000, 1, 1)).cast("timestamp_ntz"))
        & (F.col("dt_iv") < F.lit(dt.timedelta(days=2)))
        & F.col("ym_iv").isNotNull() & (F.size("arr") > 0)
        & (F.col("m")["k"] > 0) & (F.col("st.y") == "one"))


@pipeline
def every_column_of_all_types_projected(s):
    """An expression over every column of all_types, including the all-NULL row."""
    return all_types(s).select(
        (F.col("b") + 1).alias("b1"), (F.col("s") * 2).alias("s2"), (F.col("i") + 1).alias("i1"),
        (F.col("l") / 2).alias("l2"), F.isnan("f").alias("f_nan"), F.signum("d").alias("d_sign"),
        F.round("dec", 2).alias("dec2"), F.upper("str").alias("up"), F.length("bin").alias("bl"),
        (~F.col("bool")).alias("nb"), F.dayofmonth("date").alias("dom"),
        F.minute("ts").alias("mi"), F.to_date("ts_ntz").alias("nd"),
        (F.col("dt_iv") + F.col("dt_iv")).alias("iv2"), F.col("ym_iv").alias("ym"),
        F.array_max("arr").alias("amax"), F.map_values("m").alias("mv"),
        F.col("st.x").alias("sx"))


@pipeline
def the_null_row_of_all_types(s):
    """IS NULL on every column of all_types: only the all-NULL row passes."""
    cols = ["b", "s", "i", "l", "f", "d", "dec", "str", "bin", "bool", "date", "ts", "ts_ntz",
            "dt_iv", "ym_iv", "arr", "m", "st"]
    cond = F.lit(True)
    for c in cols:
        cond = cond & F.col(c).isNull()
    return all_types(s).where(cond)


@pipeline
def nan_and_infinity(s):
    """Comparisons with NaN and infinity: NaN equals NaN and is above every number."""
    score = F.col("score")
    return people(s).where((score == float("nan")) | (score == float("inf")) | (score < 0)
                           | (score > 1e308)).select(
        "id", "score", F.nanvl("score", F.lit(0.0)).alias("nv"), F.isnan("score").alias("is_nan"))


@pipeline
def nan_in_grouping_and_join_keys(s):
    """NaN and infinity as grouping and join keys (Spark normalises NaN)."""
    a = all_types(s).select("f", "d").alias("a")
    b = all_types(s).select("f", "d").alias("b")
    joined = a.join(b, F.col("a.f") == F.col("b.f")).select(F.col("a.f").alias("f"), "b.d")
    return joined.groupBy("f").agg(F.count("*").alias("n"), F.max("d").alias("max_d"))


@pipeline
def rand_in_select(s):
    """rand(seed) and randn(seed) in a projection over a table read, filtered above."""
    return (events(s).select("eid", F.rand(3).alias("r"), F.randn(5).alias("z"))
            .where("r > 0.2 AND eid > 5"))


@pipeline
def rand_in_filter(s):
    """rand(seed) in a filter right over a table read."""
    return events(s).where(F.rand(11) < 0.5).select("eid", "host")


# -- joins -------------------------------------------------------------------------------


@pipeline
def inner_join_using(s):
    """An inner USING join with filters on each side and one across both."""
    return (people(s).join(depts(s), "dept_id")
            .where("region IS NOT NULL AND age >= 0 AND budget > age")
            .select("id", "dept_name", "budget"))


@pipeline
def inner_join_nullable_keys(s):
    """An inner join on nullable keys: NULL never matches."""
    p, d = people(s).alias("p"), depts(s).alias("d")
    return p.join(d, F.col("p.dept_id") == F.col("d.dept_id")).select("p.id", "d.dept_name")


@pipeline
def null_safe_equi_join(s):
    """A join on <=>: the NULL keys match each other."""
    p, d = people(s).alias("p"), depts(s).alias("d")
    return (p.join(d, F.col("p.dept_id").eqNullSafe(F.col("d.dept_id")))
            .select("p.id", "d.dept_name"))


@pipeline
def join_on_expression_keys(s):
    """A join whose keys are expressions over each side."""
    p, d = people(s).alias("p"), depts(s).alias("d")
    return (p.join(d, F.col("p.dept_id") + 10 == F.col("d.dept_id"))
            .select("p.id", "d.dept_id", "d.dept_name"))


@pipeline
def filters_mixing_both_join_sides(s):
    """WHERE disjunctions that reference both sides of an inner join."""
    p, d = people(s).alias("p"), depts(s).alias("d")
    return (p.join(d, F.col("p.dept_id") == F.col("d.dept_id"))
            .where("(p.age < d.budget / 20 OR d.region = 'us') AND p.id + d.dept_id > 12")
            .select("p.id", "d.dept_name"))


@pipeline
def left_outer_join_where_on_both_sides(s):
    """WHERE conjuncts on both sides of a left outer join, one keeping NULL-padded rows."""
    p, d = people(s).alias("p"), depts(s).alias("d")
    return (p.join(d, F.col("p.dept_id") == F.col("d.dept_id"), "left")
            .where("p.age > 20 AND (d.region IS NULL OR d.region = 'us')")
            .select("p.id", "d.dept_name"))


@pipeline
def left_outer_join_on_conditions(s):
    """ON conjuncts on either side of a left outer join."""
    p, d = people(s).alias("p"), depts(s).alias("d")
    cond = ((F.col("p.dept_id") == F.col("d.dept_id")) & (F.col("d.budget") > 40)
            & (F.col("p.age") > 25))
    return p.join(d, cond, "left").select("p.id", "p.age", "d.dept_name")


@pipeline
def left_outer_join_becomes_inner(s):
    """A WHERE conjunct that rejects the NULL-padded rows of a left outer join."""
    p, d = people(s).alias("p"), depts(s).alias("d")
    return (p.join(d, F.col("p.dept_id") == F.col("d.dept_id"), "left")
            .where("d.budget > 100").select("p.id", "d.budget"))


@pipeline
def left_outer_join_filter_mixing_sides(s):
    """A WHERE clause over both sides of a left outer join that keeps NULL-padded rows."""
    p, d = people(s).alias("p"), depts(s).alias("d")
    return (p.join(d, F.col("p.dept_id") == F.col("d.dept_id"), "left_outer")
            .where("p.age < d.budget OR d.budget IS NULL").select("p.id", "p.age", "d.budget"))


@pipeline
def right_outer_join(s):
    """WHERE and ON conjuncts around a right outer join."""
    p, d = people(s).alias("p"), depts(s).alias("d")
    cond = (F.col("p.dept_id") == F.col("d.dept_id")) & (F.col("p.age") > 10)
    return (p.join(d, cond, "right").where("d.region = 'eu' OR p.id IS NULL")
            .select("d.dept_id", "p.name"))


@pipeline
def full_outer_join(s):
    """Conjuncts around a full outer join, where nothing may move."""
    p, d = people(s).alias("p"), depts(s).alias("d")
    cond = (F.col("p.dept_id") == F.col("d.dept_id")) & (F.col("d.budget") > 10)
    return (p.join(d, cond, "full").where("p.age IS NULL OR p.age > 20")
            .select("p.id", "d.dept_name"))


@pipeline
def full_outer_join_rejected_on_one_side(s):
    """A WHERE conjunct that turns a full outer join into a left outer one."""
    p, d = people(s).alias("p"), depts(s).alias("d")
    return (p.join(d, F.col("p.dept_id") == F.col("d.dept_id"), "full")
            .where("p.age > 20").select("p.id", "d.dept_name"))


@pipeline
def full_outer_join_using(s):
    """A full outer USING join, filtered on its coalesced key and on both sides."""
    return (people(s).join(depts(s), "dept_id", "full_outer")
            .where("dept_id IS NULL OR dept_id >= 20")
            .where("coalesce(age, 0) < coalesce(budget, 100)")
            .select("dept_id", "id", "dept_name"))


@pipeline
def left_semi_join(s):
    """A left semi join with ON conjuncts on both sides, filtered above."""
    p, d = people(s), depts(s)
    cond = (p.dept_id == d.dept_id) & (d.budget > 10) & (p.age > 20)
    return p.join(d, cond, "left_semi").where("name IS NOT NULL")


@pipeline
def left_anti_join(s):
    """A left anti join with an ON conjunct on the left side (it must stay in the join)."""
    p, d = people(s), depts(s)
    cond = (p.dept_id == d.dept_id) & (p.age > 30)
    return p.join(d, cond, "left_anti").select("id", "age")


@pipeline
def left_anti_join_nullable_keys(s):
    """A left anti join on a nullable key: the NULL-keyed row survives."""
    return depts(s).join(people(s), "dept_id", "left_anti").where("budget IS NOT NULL")


@pipeline
def cross_join(s):
    """A cross join without a condition."""
    return (depts(s).select("dept_name")
            .crossJoin(people(s).where("id < 3").select("id")))


@pipeline
def cross_join_with_filter(s):
    """A cross join whose WHERE clause relates the sides."""
    p, d = people(s), depts(s).select("dept_id", "budget")
    return (p.crossJoin(d).where((p.dept_id == F.col("budget") / 50) | (F.col("budget") == 1))
            .select("id", "budget"))


@pipeline
def join_with_broadcast_function(s):
    """F.broadcast on one side of an inner join."""
    return (people(s).join(F.broadcast(depts(s)), "dept_id").where("budget > 1")
            .select("id", "dept_name"))


@pipeline
def join_with_broadcast_hint(s):
    """df.hint('broadcast') on the right side of a left outer join."""
    return (people(s).join(depts(s).hint("broadcast"), "dept_id", "left")
            .where("age > 0").select("id", "region"))


@pipeline
def join_with_merge_hint(s):
    """A SQL MERGE hint on a join with an extra non-equi condition."""
    return s.sql("""SELECT /*+ MERGE(d) */ p.id, d.region FROM people p JOIN depts d
                    ON p.dept_id = d.dept_id AND p.age < d.budget WHERE d.region <> 'apac'""")


@pipeline
def join_with_shuffle_hash_hint(s):
    """A SQL SHUFFLE_HASH hint on a join between a table and an aggregate."""
    return s.sql("""SELECT /*+ SHUFFLE_HASH(c) */ p.name, c.n FROM people p
                    JOIN (SELECT person_id, count(*) AS n FROM events GROUP BY person_id) c
                    ON p.id = c.person_id WHERE c.n > 6""")


@pipeline
def non_equi_join(s):
    """A join on a range condition only."""
    a, b = people(s).alias("a"), people(s).alias("b")
    return (a.join(b, F.col("a.age") < F.col("b.age"))
            .select(F.col("a.id").alias("x"), F.col("b.id").alias("y")).where("x > 1"))


@pipeline
def non_equi_left_outer_join(s):
    """A left outer band join (BETWEEN) with no equality."""
    return s.sql("""SELECT e.eid, p.id FROM events e LEFT JOIN people p
                    ON e.eid BETWEEN p.age AND p.age + 2 WHERE e.eid < 12""")


@pipeline
def equi_join_with_inequality(s):
    """An equi-join with an extra inequality between the sides."""
    p, d = people(s).alias("p"), depts(s).alias("d")
    cond = (F.col("p.dept_id") == F.col("d.dept_id")) & (F.col("p.age") * 10 < F.col("d.budget"))
    return p.join(d, cond).select("p.id", "d.dept_name", "d.budget")


@pipeline
def self_join(s):
    """A self-join of events (host and an offset id), filtered on both copies."""
    a, b = events(s).alias("a"), events(s).alias("b")
    cond = (F.col("a.host") == F.col("b.host")) & (F.col("a.eid") + 4 == F.col("b.eid"))
    return (a.join(b, cond).where("a.kind = 'click' AND b.amount > 1")
            .select(F.col("a.eid").alias("first"), F.col("b.eid").alias("second"), "b.kind"))


@pipeline
def self_join_pairs(s):
    """A self-join pairing people of a department, filtered on both sides."""
    a, b = people(s).alias("a"), people(s).alias("b")
    cond = (F.col("a.dept_id") == F.col("b.dept_id")) & (F.col("a.id") <= F.col("b.id"))
    return (a.join(b, cond).where("a.active AND b.age IS NOT NULL")
            .select(F.col("a.id").alias("x"), F.col("b.id").alias("y"), "a.dept_id"))


@pipeline
def three_way_join(s):
    """Three tables joined, with filters on each and above the joins."""
    e, p = events(s), people(s)
    return (e.join(p, e.person_id == p.id).join(depts(s), "dept_id")
            .where("region = 'us' AND kind <> 'view' AND budget > 100")
            .select("eid", "name", "dept_name"))


@pipeline
def four_way_join(s):
    """Four relations (one an aggregate) joined in SQL, with filters above."""
    return s.sql("""
        SELECT e.eid, p.name, d.dept_name, c.n
        FROM events e
        JOIN people p ON e.person_id = p.id
        JOIN depts d ON p.dept_id = d.dept_id
        JOIN (SELECT dept_id, count(*) AS n FROM people GROUP BY dept_id) c
          ON c.dept_id = d.dept_id
        WHERE e.amount > 1 AND c.n > 1 AND d.budget > 10""")


@pipeline
def join_with_empty_side(s):
    """Outer and inner joins with an empty table on one side."""
    return (people(s).join(s.table("empty_depts"), "dept_id", "left").select("id", "dept_name")
            .union(people(s).join(s.table("empty_depts"), "dept_id").select("id", "dept_name")))


@pipeline
def right_join_of_empty_table(s):
    """An empty table right-joined to a full one, filtered on the NULL-padded side."""
    e, p = s.table("empty_people").alias("e"), people(s).alias("p")
    return (e.join(p, F.col("e.id") == F.col("p.id"), "right").where("e.name IS NULL")
            .select("p.id", "e.name"))


@pipeline
def always_false_filter_above_join(s):
    """A false filter above a join."""
    return people(s).join(depts(s), "dept_id").where(F.lit(False)).select("id")


@pipeline
def join_then_aggregate(s):
    """An aggregate over a join, with count distinct."""
    return (people(s).join(depts(s), "dept_id").groupBy("region")
            .agg(F.sum("salary").alias("total"), F.countDistinct("id").alias("ids")))


@pipeline
def aggregate_then_join(s):
    """A join of an aggregate, filtered on the aggregate's result and the other side."""
    counts = events(s).groupBy("person_id").agg(F.count("*").alias("n"),
                                                F.sum("amount").alias("amount"))
    p = people(s)
    return (counts.join(p, counts.person_id == p.id).where("n > 6 AND age > 0")
            .select("id", "name", "n", "amount"))


# -- subqueries and SQL ------------------------------------------------------------------


@pipeline
def exists_in_a_disjunction(s):
    """EXISTS inside OR: an existence join."""
    return s.sql("""SELECT * FROM people p WHERE p.age > 40 OR EXISTS (
                    SELECT 1 FROM depts d WHERE d.dept_id = p.dept_id)""")


@pipeline
def in_and_not_in_subqueries_under_or(s):
    """IN and NOT IN subqueries under OR (existence joins)."""
    return s.sql("""SELECT id, name FROM people
                    WHERE dept_id IN (SELECT dept_id FROM depts WHERE region = 'us')
                       OR id NOT IN (SELECT person_id FROM events WHERE person_id IS NOT NULL)""")


@pipeline
def exists_and_not_exists(s):
    """EXISTS and NOT EXISTS with correlated conditions (semi and anti joins)."""
    return s.sql("""SELECT d.dept_name FROM depts d
                    WHERE EXISTS (SELECT * FROM people p WHERE p.dept_id = d.dept_id)
                      AND NOT EXISTS (SELECT * FROM people p WHERE p.dept_id = d.dept_id
                                                                AND p.age > 50)""")


@pipeline
def not_in_subquery_with_nulls(s):
    """NOT IN a subquery that returns a NULL: a null-aware anti join, so no rows."""
    return s.sql("SELECT * FROM depts WHERE dept_id NOT IN (SELECT dept_id FROM people)")


@pipeline
def not_in_subquery_without_nulls(s):
    """NOT IN a subquery without NULLs; a NULL on the left still drops its row."""
    return s.sql("""SELECT * FROM depts
                    WHERE dept_id NOT IN (SELECT dept_id FROM people WHERE dept_id IS NOT NULL)""")


@pipeline
def multi_column_in_subquery(s):
    """A two-column IN subquery."""
    return s.sql("""SELECT * FROM depts d
                    WHERE (d.dept_id, d.region) IN (SELECT dept_id, 'us' FROM people)""")


@pipeline
def correlated_scalar_subquery(s):
    """A correlated scalar subquery in the SELECT list."""
    return s.sql("""SELECT p.id, (SELECT max(budget) FROM depts d WHERE d.dept_id = p.dept_id)
                    AS top FROM people p""")


@pipeline
def correlated_scalar_subquery_in_where(s):
    """A correlated scalar subquery compared in a WHERE clause."""
    return s.sql("""SELECT p.id, p.salary FROM people p
                    WHERE p.salary >= (SELECT avg(q.salary) FROM people q
                                       WHERE q.dept_id = p.dept_id)""")


@pipeline
def uncorrelated_scalar_subquery(s):
    """An uncorrelated scalar subquery in a WHERE clause."""
    return s.sql("""SELECT id, salary FROM people
                    WHERE salary > (SELECT avg(salary) FROM people WHERE age IS NOT NULL)""")


@pipeline
def nested_subqueries(s):
    """Subqueries in FROM nested three deep, and a scalar subquery inside an IN subquery."""
    return s.sql("""
        SELECT * FROM (
          SELECT dept_id, max_age FROM (
            SELECT dept_id, max(age) AS max_age FROM people GROUP BY dept_id) a
          WHERE max_age > 0) b
        WHERE dept_id IN (SELECT dept_id FROM depts
                          WHERE budget > (SELECT min(budget) FROM depts))""")


@pipeline
def common_table_expressions(s):
    """Two CTEs, one referenced twice, joined with filters on each."""
    return s.sql("""
        WITH big AS (SELECT dept_id, budget FROM depts WHERE budget > 10),
             staff AS (SELECT id, dept_id, age FROM people WHERE age >= 0)
        SELECT staff.id, big.budget, (SELECT count(*) FROM big) AS n_big
        FROM staff JOIN big ON staff.dept_id = big.dept_id
        WHERE big.budget < 1000 OR staff.age > 30""")


@pipeline
def filter_over_sql_subquery_alias(s):
    """A filter over a subquery alias and a projection in SQL."""
    return s.sql("""SELECT q.eid FROM (SELECT eid, host, amount FROM events) q
                    WHERE q.host = 'h2' AND q.amount > 0""")


# -- aggregates ---------------------------------------------------------------------------


@pipeline
def grouped_aggregate_with_having(s):
    """A filter on an aggregate result and on a grouping key above an aggregate."""
    return (people(s).groupBy("dept_id").agg(F.count("*").alias("n"), F.sum("salary").alias("t"))
            .where("n > 1 AND dept_id > 5"))


@pipeline
def having_in_sql(s):
    """HAVING on an aggregate that is not in the SELECT list, and on a key."""
    return s.sql("""SELECT host, sum(amount) AS total FROM events GROUP BY host
                    HAVING count(*) > 14 AND (host IS NULL OR host <> 'h3')""")


@pipeline
def aggregate_on_expression_key(s):
    """Grouping on an expression, filtered on that key above."""
    return (events(s).groupBy((F.col("eid") % 5).alias("k"))
            .agg(F.min("ts").alias("first"), F.countDistinct("host").alias("hosts"))
            .where("k < 3"))


@pipeline
def aggregate_functions(s):
    """avg, min, max, count, count_if, bool_and, bool_or and sorted collect_set/list."""
    return people(s).groupBy("active").agg(
        F.avg("age").alias("avg_age"), F.avg("salary").alias("avg_sal"),
        F.min("joined").alias("first_joined"), F.max("name").alias("last_name"),
        F.count("age").alias("n_age"), F.expr("count_if(age > 30)").alias("n_old"),
        F.expr("bool_and(age > 0)").alias("all_pos"), F.expr("bool_or(score > 1)").alias("any"),
        F.sort_array(F.collect_set("dept_id")).alias("depts"),
        F.array_sort(F.collect_list("name")).alias("names"), F.sum("score").alias("score"))


@pipeline
def global_aggregate(s):
    """A global aggregate over a filter nothing passes: still one row."""
    return people(s).where("age > 1000").agg(F.count("*").alias("n"), F.max("age").alias("m"))


@pipeline
def global_aggregates_over_empty_table(s):
    """Global aggregates over an empty table: one row of zeros and NULLs."""
    return s.table("empty_people").agg(
        F.count("*").alias("n"), F.count("id").alias("ids"), F.sum("salary").alias("total"),
        F.avg("age").alias("avg_age"), F.max("name").alias("max_name"),
        F.min("joined").alias("min_joined"), F.countDistinct("dept_id").alias("depts"))


@pipeline
def global_aggregate_over_empty_filtered_above(s):
    """A filter above a global aggregate over an empty table."""
    return s.table("empty_depts").agg(F.count("dept_id").alias("n")).where("n = 0")


@pipeline
def grouped_aggregate_over_empty_table(s):
    """A grouped aggregate over an empty table: no rows."""
    return s.table("empty_depts").groupBy("region").agg(F.sum("budget").alias("b"))


@pipeline
def aggregate_with_filter_clause(s):
    """Aggregates with FILTER clauses next to a count distinct."""
    return s.sql("""SELECT host, count(*) FILTER (WHERE kind = 'buy') AS buys,
                           sum(amount) FILTER (WHERE kind IS NULL OR amount > 2) AS odd,
                           count(DISTINCT kind) AS kinds, sum(amount) AS amount
                    FROM events GROUP BY host""")


@pipeline
def several_distinct_aggregates(s):
    """Distinct aggregates over different columns (rewritten with an Expand)."""
    return events(s).groupBy("host").agg(
        F.countDistinct("kind").alias("kinds"), F.countDistinct("person_id").alias("people"),
        F.sum_distinct("amount").alias("amounts"), F.count("*").alias("n"))


@pipeline
def pivot(s):
    """A pivot with explicit values."""
    return events(s).groupBy("host").pivot("kind", ["click", "view", "buy"]).agg(
        F.sum("amount"))


@pipeline
def select_distinct_sql(s):
    """SELECT DISTINCT on an expression, with a WHERE clause."""
    return s.sql("SELECT DISTINCT region, budget > 10 AS big FROM depts WHERE region IS NOT NULL")


@pipeline
def distinct_rows(s):
    """distinct() filtered above."""
    return people(s).select("dept_id", "active").distinct().where("dept_id IS NOT NULL")


@pipeline
def drop_duplicates_on_subset(s):
    """dropDuplicates on a subset that determines the other columns."""
    return (people(s).select("id", "name", "age", "salary").dropDuplicates(["id", "name"])
            .where("id > 2"))


@pipeline
def drop_duplicates_whole_rows(s):
    """dropDuplicates without a subset over every groupable column."""
    return people(s).drop("attrs").dropDuplicates().where("age < 40")


@pipeline
def rollup(s):
    """ROLLUP with grouping_id(), filtered on an aggregate and on a rolled-up key."""
    return s.sql("""SELECT region, dept_id, sum(budget) AS b, grouping_id() AS g
                    FROM depts GROUP BY ROLLUP(region, dept_id)
                    HAVING region IS NULL OR b > 0""")


@pipeline
def cube(s):
    """cube() with grouping(), filtered above."""
    return (people(s).cube("dept_id", "active")
            .agg(F.count("*").alias("n"), F.grouping("active").alias("ga"))
            .where("n > 1"))


@pipeline
def grouping_sets(s):
    """GROUPING SETS, including the empty set, over a filtered table."""
    return s.sql("""SELECT host, kind, count(*) AS n FROM events WHERE amount IS NOT NULL
                    GROUP BY GROUPING SETS ((host), (kind), ())""")


@pipeline
def aggregate_over_union(s):
    """An aggregate over a union of two tables, filtered on the key."""
    ids = people(s).select(F.col("dept_id").alias("k")).unionAll(depts(s).select("dept_id"))
    return ids.groupBy("k").count().where("k IS NULL OR k < 40")


# -- windows ------------------------------------------------------------------------------


@pipeline
def ranking_window_functions(s):
    """row_number, rank, dense_rank, percent_rank, cume_dist and ntile on a unique order."""
    w = Window.partitionBy("host").orderBy("ts")
    return events(s).select(
        "eid", "host", F.row_number().over(w).alias("rn"), F.rank().over(w).alias("r"),
        F.dense_rank().over(w).alias("dr"), F.percent_rank().over(w).alias("pr"),
        F.cume_dist().over(w).alias("cd"), F.ntile(4).over(w).alias("nt"))


@pipeline
def rank_with_ties(s):
    """rank and dense_rank over an order with ties and NULLs."""
    w = Window.partitionBy("dept_id").orderBy(F.desc_nulls_last("age"))
    return people(s).select("id", "dept_id", "age", F.rank().over(w).alias("r"),
                            F.dense_rank().over(w).alias("dr"))


@pipeline
def lag_and_lead(s):
    """lag and lead with offsets and defaults."""
    w = Window.partitionBy("host").orderBy("eid")
    return events(s).select("eid", F.lag("amount").over(w).alias("prev"),
                            F.lead("eid", 2, -1).over(w).alias("next2"),
                            F.lag("kind", 1, "none").over(w).alias("prev_kind"))


@pipeline
def running_sums_with_frames(s):
    """Sums over a row frame, a range frame and a following frame."""
    w_rows = Window.partitionBy("host").orderBy("eid").rowsBetween(-2, 0)
    w_range = Window.orderBy("eid").rangeBetween(Window.unboundedPreceding, 0)
    w_ahead = Window.partitionBy("kind").orderBy("eid").rowsBetween(0, Window.unboundedFollowing)
    return events(s).select("eid", F.sum("amount").over(w_rows).alias("s3"),
                            F.count("*").over(w_range).alias("c"),
                            F.max("amount").over(w_ahead).alias("rest_max"))


@pipeline
def sum_over_partition_without_frame(s):
    """Aggregates over a whole partition (no order, no frame)."""
    w = Window.partitionBy("dept_id")
    return people(s).select("id", "dept_id", F.sum("salary").over(w).alias("dept_total"),
                            F.count("*").over(w).alias("n"), F.max("age").over(w).alias("oldest"))


@pipeline
def window_without_partition(s):
    """Windows with an empty partitionBy: the whole table is one partition."""
    whole = Window.partitionBy()
    return people(s).select("id", F.sum("age").over(whole).alias("total"),
                            F.rank().over(Window.orderBy(F.asc_nulls_first("age")))
                            .alias("age_rank"))


@pipeline
def filter_on_window_output(s):
    """Filters on the partition key (may move below) and on window outputs (may not)."""
    w = Window.partitionBy("host").orderBy("eid")
    return (events(s).withColumn("rn", F.row_number().over(w))
            .withColumn("running", F.sum("amount").over(w))
            .where("host = 'h2' AND rn <= 5 AND running > 1"))


@pipeline
def filter_on_partition_key_and_other_column(s):
    """Above a window: a conjunct on the partition key and one on another column."""
    w = Window.partitionBy("dept_id").orderBy("id")
    return (people(s).withColumn("dr", F.dense_rank().over(w))
            .where("dept_id = 10 AND age > 30").select("id", "dr"))


@pipeline
def top_per_group(s):
    """row_number() = 1 per group over a total order (a window group limit)."""
    w = Window.partitionBy("kind").orderBy(F.desc("amount"), "eid")
    return events(s).withColumn("rn", F.row_number().over(w)).where("rn = 1").drop("rn")


@pipeline
def several_window_specs(s):
    """Windows with different partitions and orders in one projection."""
    by_host = Window.partitionBy("host").orderBy("eid")
    by_kind = Window.partitionBy("kind").orderBy(F.desc("eid"))
    return events(s).where("eid < 30").select(
        "eid", F.rank().over(by_host).alias("r_host"), F.rank().over(by_kind).alias("r_kind"),
        F.sum("amount").over(Window.partitionBy("person_id")).alias("per_person"))


@pipeline
def window_over_aggregate(s):
    """A window over the result of an aggregate, in SQL with a named window."""
    return s.sql("""
        SELECT host, total, rank() OVER w AS r, sum(total) OVER w AS running
        FROM (SELECT host, sum(amount) AS total FROM events GROUP BY host) t
        WINDOW w AS (ORDER BY total DESC NULLS LAST, host NULLS FIRST)""")


@pipeline
def window_over_empty_table(s):
    """A window over an empty table."""
    w = Window.partitionBy("dept_id").orderBy("id")
    return s.table("empty_people").select("id", F.row_number().over(w).alias("rn"))


# -- unions and set operations ------------------------------------------------------------


@pipeline
def union_all_with_filter(s):
    """A filter above UNION ALL, on a column typed differently on each side."""
    a = people(s).select("id", "age")
    b = events(s).select(F.col("eid").cast("int").alias("id"), F.lit(1).alias("age"))
    return a.unionAll(b).where("id > 3 AND id < 20")


@pipeline
def union_widening_types(s):
    """A union whose columns widen (int with long, decimals of different scales)."""
    a = people(s).select(F.col("id").alias("k"), F.col("salary").alias("v"))
    b = events(s).select(F.col("eid").alias("k"), F.col("amount").alias("v"))
    return a.union(b).where("v > 2")


@pipeline
def union_distinct(s):
    """UNION (distinct) of two tables' columns."""
    return people(s).select("dept_id").union(depts(s).select("dept_id")).distinct()


@pipeline
def union_by_name(s):
    """unionByName with the columns in a different order."""
    return (people(s).select("id", "name")
            .unionByName(depts(s).select(F.col("dept_name").alias("name"),
                                         F.col("dept_id").alias("id")))
            .where("name LIKE '%o%'"))


@pipeline
def union_by_name_missing_columns(s):
    """unionByName with allowMissingColumns, filtered on a column one side lacks."""
    return (people(s).select("id", "name")
            .unionByName(depts(s).select(F.col("dept_id").alias("id")), allowMissingColumns=True)
            .where("id IS NOT NULL AND (name IS NULL OR name > 'c')"))


@pipeline
def union_of_three_with_empty(s):
    """A union of three inputs, one of them empty, with a filter in each branch."""
    return (people(s).where("age > 30").select("id", "name")
            .union(s.table("empty_people").select("id", "name"))
            .union(people(s).where("active = false").select("id", "name")))


@pipeline
def intersect_rows(s):
    """INTERSECT (distinct), filtered above."""
    return (people(s).select("dept_id").intersect(depts(s).select("dept_id"))
            .where("dept_id IS NULL OR dept_id > 10"))


@pipeline
def intersect_all_rows(s):
    """INTERSECT ALL keeps duplicates."""
    return people(s).select("dept_id").intersectAll(depts(s).select("dept_id"))


@pipeline
def except_all_and_subtract(s):
    """EXCEPT ALL and EXCEPT (subtract)."""
    return (people(s).select("dept_id").exceptAll(depts(s).select("dept_id"))
            .union(people(s).select("dept_id").subtract(depts(s).select("dept_id"))))


@pipeline
def except_in_sql(s):
    """EXCEPT in SQL with a filter on each side."""
    return s.sql("""SELECT dept_id, active FROM people WHERE age > 0
                    EXCEPT SELECT dept_id, true FROM depts WHERE budget > 100""")


# -- generators ---------------------------------------------------------------------------


@pipeline
def explode_arrays(s):
    """explode with a filter on the child's column and one on the exploded value."""
    return people(s).select("id", F.explode("tags").alias("tag")).where("id > 1 AND tag <> 'b'")


@pipeline
def posexplode_and_explode_outer(s):
    """posexplode next to explode_outer (NULL and empty arrays keep a row)."""
    return (people(s).select("id", F.posexplode("tags").alias("pos", "tag"))
            .union(people(s).select("id", F.lit(-1).alias("pos"),
                                    F.explode_outer("tags").alias("tag"))))


@pipeline
def posexplode_outer_filtered(s):
    """posexplode_outer filtered on the position (NULL for the padded rows)."""
    return (people(s).select("id", F.posexplode_outer("tags").alias("pos", "tag"))
            .where("pos IS NULL OR pos > 0"))


@pipeline
def inline_structs(s):
    """inline over an array of structs in a LATERAL VIEW, filtered on the output."""
    return s.sql("""SELECT id, x, y FROM people
                    LATERAL VIEW inline(array(named_struct('x', id, 'y', name),
                                              named_struct('x', age, 'y', 'age'))) t AS x, y
                    WHERE x > 2""")


@pipeline
def inline_outer(s):
    """inline_outer over a possibly empty array of structs."""
    return people(s).select(
        "id", F.inline_outer(F.filter(F.array(F.struct(F.col("age").alias("v"))),
                                      lambda st: st["v"] > 30)))


@pipeline
def explode_map(s):
    """explode of a map column, filtered on the value."""
    return people(s).select("id", F.explode("attrs").alias("k", "v")).where("v > 0")


@pipeline
def lateral_view_outer_and_sequence(s):
    """Two LATERAL VIEWs, one OUTER, one exploding a generated sequence."""
    return s.sql("""SELECT id, tag, n FROM people
                    LATERAL VIEW OUTER explode(tags) t AS tag
                    LATERAL VIEW explode(sequence(1, least(coalesce(age, 1), 3))) u AS n
                    WHERE dept_id IS NOT NULL""")


@pipeline
def explode_after_join(s):
    """A generator above a join, filtered on the join's columns and the generated ones."""
    return (people(s).join(depts(s), "dept_id")
            .select("id", "region", F.explode(F.split("dept_name", "")).alias("ch"))
            .where("region = 'us' AND ch <> 'o'"))


@pipeline
def aggregate_over_explode(s):
    """An aggregate over exploded values, filtered on the result."""
    return (people(s).select(F.explode("tags").alias("tag")).groupBy("tag").count()
            .where("count > 1 OR tag IS NULL"))


# -- sorts, limits and offsets -------------------------------------------------------------


@pipeline
def order_by_with_nulls(s):
    """ORDER BY with ASC/DESC and explicit NULLS FIRST/LAST."""
    return people(s).orderBy(F.desc_nulls_first("age"), F.asc_nulls_last("name"), "id",
                             F.desc("salary"))


@pipeline
def order_by_expressions(s):
    """ORDER BY expressions, above a filter, in SQL."""
    return s.sql("""SELECT id, name FROM people WHERE id > 1
                    ORDER BY length(name) DESC NULLS LAST, id ASC NULLS FIRST""")


@pipeline
def sort_within_partitions(s):
    """sortWithinPartitions with ASC/DESC and NULLS FIRST/LAST after a repartition."""
    return (events(s).repartition(3, "host")
            .sortWithinPartitions(F.asc_nulls_last("kind"), F.desc_nulls_first("amount"),
                                  F.desc("ts")))


@pipeline
def sort_within_partitions_filtered(s):
    """A filter above sortWithinPartitions."""
    return people(s).sortWithinPartitions(F.desc("dept_id"), "id").where("age > 20")


@pipeline
def limit_after_total_order(s):
    """LIMIT after an order on a unique key, filtered above."""
    return events(s).orderBy("eid").limit(7).where("eid > 2")


@pipeline
def top_n_over_duplicates(s):
    """LIMIT after an order on every selected column (people holds a duplicated row)."""
    return (people(s).select("id", "name", "age").orderBy(F.desc("age"), "id", "name")
            .limit(4))


@pipeline
def filter_above_limit(s):
    """A filter above a limit (it must stay above)."""
    return events(s).orderBy(F.desc("eid")).limit(10).where("host = 'h1'")


@pipeline
def offset_after_total_order(s):
    """OFFSET after a total order."""
    return events(s).orderBy("eid").offset(50)


@pipeline
def limit_and_offset(s):
    """LIMIT then OFFSET, and OFFSET then LIMIT, after total orders."""
    e = events(s).select("eid", "kind")
    return (e.orderBy(F.desc("eid")).limit(10).offset(3)
            .union(e.orderBy("eid").offset(20).limit(5)))


@pipeline
def limit_in_sql_subquery_then_join(s):
    """A LIMIT inside a subquery, joined and filtered above."""
    return s.sql("""SELECT t.eid, p.name FROM
                      (SELECT eid, person_id FROM events ORDER BY eid DESC LIMIT 15) t
                    JOIN people p ON p.id = t.person_id WHERE p.age > 0""")


@pipeline
def limit_zero(s):
    """LIMIT 0."""
    return people(s).orderBy("id", "name").limit(0)


# -- repartitioning and sampling -----------------------------------------------------------


@pipeline
def repartitions(s):
    """repartition(n), coalesce(n), repartition(n, col) and repartitionByRange, filtered."""
    e = events(s)
    return (e.repartition(3).where("eid > 2").coalesce(2)
            .union(e.repartition(2, "host").where("eid < 5"))
            .union(e.repartitionByRange(2, "ts").where("eid = 30")))


@pipeline
def repartition_by_column_then_aggregate(s):
    """repartition by a column without a count, then an aggregate on that column."""
    return (people(s).repartition("dept_id").groupBy("dept_id").agg(F.max("age").alias("m"))
            .where("m > 0"))


@pipeline
def coalesce_above_join(s):
    """coalesce(1) above a join, filtered above."""
    return (people(s).join(depts(s), "dept_id").coalesce(1).where("budget > 50")
            .select("id", "dept_name"))


@pipeline
def rebalance_hint(s):
    """The REBALANCE hint."""
    return s.sql("SELECT /*+ REBALANCE(host) */ eid, host FROM events WHERE kind = 'view'")


@pipeline
def repartition_hints_in_sql(s):
    """REPARTITION, COALESCE and REPARTITION_BY_RANGE hints in SQL."""
    return s.sql("""SELECT /*+ REPARTITION(3, host) */ eid FROM events WHERE eid < 10
                    UNION ALL SELECT /*+ COALESCE(1) */ id FROM people WHERE age > 30
                    UNION ALL SELECT /*+ REPARTITION_BY_RANGE(2, budget) */ budget FROM depts""")


@pipeline
def sample_with_seed(s):
    """A sample with a seed right over a table read, filtered above."""
    return events(s).sample(fraction=0.5, seed=7).where("eid > 10")


@pipeline
def sample_with_replacement(s):
    """A sample with replacement and a seed, projected above."""
    return people(s).sample(withReplacement=True, fraction=1.5, seed=3).select("id", "name")


@pipeline
def aggregate_over_sample(s):
    """An aggregate over a seeded sample."""
    return events(s).sample(fraction=0.3, seed=42).groupBy("host").count()


# -- Python UDFs --------------------------------------------------------------------------


@pipeline
def python_udf(s):
    """A Python UDF in a projection, filtered on its result."""
    double = F.udf(lambda x: None if x is None else x * 2, "int")
    return people(s).select("id", double("age").alias("a2")).where("a2 > 40")


@pipeline
def python_udf_in_filter(s):
    """A Python UDF directly in a filter, next to an ordinary conjunct."""
    is_even = F.udf(lambda x: x is not None and x % 2 == 0, "boolean")
    return events(s).where(is_even("eid") & (F.col("host") == "h3")).select("eid")


@pipeline
def python_udf_above_join(s):
    """A Python UDF above a join, filtered on its result."""
    name_len = F.udf(lambda x: None if x is None else len(x), "int")
    return (people(s).join(depts(s), "dept_id").select("id", name_len("dept_name").alias("n"))
            .where("n > 2"))


@pipeline
def python_udf_as_grouping_key(s):
    """A two-argument Python UDF as a grouping key."""
    bucket = F.udf(lambda host, eid: f"{host or '-'}:{eid // 20}", "string")
    return events(s).groupBy(bucket("host", "eid").alias("b")).agg(F.count("*").alias("n"))


@pipeline
def python_udf_returning_array(s):
    """A Python UDF returning an array, exploded."""
    letters = F.udf(lambda x: None if x is None else list(x), "array<string>")
    return (people(s).select("id", F.explode(letters("name")).alias("ch"))
            .where("ch <> 'e'"))


# -- pandas UDFs (Arrow) ------------------------------------------------------------------


@pipeline
def pandas_grouped_aggregate_filtered_on_its_result(s):
    """A grouped-aggregate pandas UDF, filtered on its result (a HAVING): the filter must
    stay above the aggregate."""
    @F.pandas_udf("double")
    def oldest(age: pd.Series) -> float:
        return float(age.max())

    return people(s).groupBy("dept_id").agg(oldest("age").alias("m")).where("m > 30")


@pipeline
def pandas_scalar_udf_filtered_on_its_result(s):
    """A scalar pandas UDF in a projection, filtered on its result and on a plain column."""
    @F.pandas_udf("long")
    def twice(x: pd.Series) -> pd.Series:
        return x * 2

    return (events(s).select("eid", "host", twice("eid").alias("e2"))
            .where((F.col("e2") > 20) & (F.col("host") != "h1")))


# -- types Python cannot hold as values ---------------------------------------------------


@pipeline
def time_variant_and_collated_columns(s):
    """TIME, VARIANT and a UTF8_LCASE string: filtered, compared and projected."""
    return (s.table("more_types")
            .where("t IS NULL OR t > TIME'00:00:00'")
            .select("id", "t", F.to_json("v").alias("vj"),
                    F.expr("variant_get(v, '$.a', 'int')").alias("a"),
                    "c", F.expr("c = 'ABC'").alias("same_ignoring_case")))


@pipeline
def char_and_varchar_columns(s):
    """CHAR (padded on read) and VARCHAR columns of a table, filtered on both."""
    return s.table("chars").where("c = 'ab' OR v LIKE 'x%'").select("id", "c", "v")


@pipeline
def calendar_interval_arithmetic(s):
    """A CalendarInterval (make_interval) added to a timestamp, then filtered on."""
    later = F.col("ts") + F.expr("make_interval(0, 1, 0, 2)")
    return events(s).select("eid", later.alias("later")).where(
        F.col("later") > F.lit(dt.datetime(2024, 2, 3, tzinfo=dt.timezone.utc)))


@pipeline
def correlated_scalar_subquery_without_aggregate(s):
    """A correlated scalar subquery Spark cannot prove returns one row: a LeftSingle join."""
    return s.sql("SELECT p.id, (SELECT d.dept_name FROM depts d "
                 "WHERE d.dept_id = p.dept_id AND d.dept_name <> 'ops2') AS dn "
                 "FROM people p WHERE p.id > 1")
