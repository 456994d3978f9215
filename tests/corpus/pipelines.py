"""A corpus of DataFrame pipelines for differential tests.

Every pipeline reads the tables of tests/corpus/tables.py (NULLs, duplicates, NaN, empty
tables, one column of every Spark SQL type) and returns a DataFrame whose rows are the
same multiset every time it runs, whatever the plan: limits come after total orders,
samples and ``rand`` have seeds and sit right on a table read. Together they cover every
mirrored node kind, every join type, subqueries, UDFs, windows, generators and every data
type; the round-trip and differential tests check that coverage.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

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


# -- filters and projections -----------------------------------------------------------


@pipeline
def filter_then_project(s):
    """A filter above a projection with an alias."""
    return people(s).select("id", (F.col("age") + 1).alias("age1")).where("age1 > 30")


@pipeline
def filter_on_nulls(s):
    """IS NULL / IS NOT NULL / null-safe equality."""
    return people(s).where("age IS NULL OR dept_id <=> 20").select("id", "name", "age")


@pipeline
def always_false_filter(s):
    """A filter that is always false."""
    return people(s).where("1 = 0").select("id")


@pipeline
def stacked_filters(s):
    """Filters separated by projections, with a cast that could raise under ANSI."""
    return (people(s).where("name IS NOT NULL").select("id", "name", "salary")
            .where(F.col("salary") > 1000).select("id", F.upper("name").alias("n"))
            .where("id > 1"))


@pipeline
def empty_table_filter(s):
    """Filters and projections over an empty table."""
    return s.table("empty_people").where("age > 1").select("id", "name")


@pipeline
def long_in_list(s):
    """A long IN list (InSet) and a short one (In)."""
    return people(s).where(F.col("id").isin(list(range(3, 40))) & F.col("dept_id").isin(10, 20))


@pipeline
def string_predicates(s):
    """LIKE, startswith, contains, endswith."""
    return people(s).where(F.col("name").like("%e%") | F.col("name").startswith("a")
                           | F.col("name").contains("u") | F.col("name").endswith("y"))


@pipeline
def case_when_coalesce(s):
    """CASE WHEN, COALESCE, IF, greatest, least."""
    return people(s).select(
        "id",
        F.when(F.col("age") > 30, "old").when(F.col("age") > 0, "young").otherwise("?").alias("c"),
        F.coalesce("age", "dept_id", F.lit(-1)).alias("co"),
        F.expr("if(active, 1, 0)").alias("f"),
        F.greatest("age", "dept_id").alias("g"), F.least("age", "dept_id").alias("l"))


@pipeline
def arithmetic_and_decimals(s):
    """Decimal and integral arithmetic, division, remainder, pmod."""
    return people(s).select(
        "id", (F.col("salary") * F.lit(Decimal("1.10"))).alias("raise"),
        (F.col("salary") / 3).alias("third"), (F.col("id") % 3).alias("m"),
        F.expr("pmod(id - 5, 3)").alias("pm"), F.expr("id div 2").alias("d"),
        (-F.col("age")).alias("neg"), F.abs("age").alias("a"))


@pipeline
def casts_between_types(s):
    """Casts between numbers, strings, dates and timestamps."""
    return people(s).select(
        F.col("id").cast("long").alias("l"), F.col("salary").cast("double").alias("d"),
        F.col("joined").cast("timestamp").alias("ts"), F.col("id").cast("string").alias("s"),
        F.col("score").cast("decimal(10,2)").alias("dec")).where("l > 1")


@pipeline
def date_functions(s):
    """date_trunc, trunc, year, month, date_add, to_date."""
    return events(s).select(
        "eid", F.date_trunc("hour", "ts").alias("h"), F.trunc(F.to_date("ts"), "MM").alias("m"),
        F.year("ts").alias("y"), F.month("ts").alias("mo"),
        F.date_add(F.to_date("ts"), 3).alias("d3")).where("y = 2024")


@pipeline
def string_functions(s):
    """upper, lower, substring, length, concat, trim."""
    return people(s).select(
        "id", F.upper("name").alias("u"), F.lower("name").alias("lo"),
        F.substring("name", 1, 2).alias("sub"), F.length("name").alias("len"),
        F.concat("name", F.lit("-"), "name").alias("cc"), F.trim(F.lit("  x ")).alias("t"))


@pipeline
def struct_and_map_access(s):
    """Struct fields, map lookups, array elements."""
    return people(s).select(
        "id", F.col("addr.city").alias("city"), F.col("attrs")["x"].alias("x"),
        F.expr("try_element_at(tags, 1)").alias("first_tag"), F.size("tags").alias("n"))\
        .where("city IS NOT NULL")


@pipeline
def higher_order_functions(s):
    """transform and filter over arrays (lambda functions)."""
    return people(s).select(
        "id", F.transform("tags", lambda t: F.upper(t)).alias("up"),
        F.filter("tags", lambda t: t != "b").alias("nob")).where(F.size("up") > 0)


@pipeline
def literals_of_every_type(s):
    """A literal of every Spark SQL type, used in expressions."""
    return s.sql("""
        SELECT id,
               CAST(1 AS TINYINT) + id AS b, CAST(2 AS SMALLINT) AS sh, 3 AS i,
               4000000000L AS l, CAST(1.5 AS FLOAT) AS f, 2.25D AS d, 12.345BD AS dec,
               'text' AS str, X'CAFE' AS bin, true AS bool, DATE'2024-02-29' AS dt,
               TIMESTAMP'2024-02-29 12:00:00' AS ts, TIMESTAMP_NTZ'2024-02-29 12:00:00' AS ntz,
               INTERVAL '1 02:03:04' DAY TO SECOND AS dti,
               CAST(INTERVAL '1-2' YEAR TO MONTH AS STRING) AS ymi,
               array(1, 2, 3) AS arr, map('k', 1.5D) AS m, named_struct('x', 1, 'y', 'z') AS st,
               CAST(NULL AS INT) AS nul
        FROM people WHERE joined > DATE'2019-01-01' AND salary > 10.5BD""")


@pipeline
def every_column_of_all_types(s):
    """Every column of all_types selected and filtered."""
    t = s.table("all_types")
    return t.where(
        (F.col("b") > -100) & (F.col("s") > 0) & (F.col("i") != 5) & (F.col("l") > 0)
        & (F.col("f") > 0) & (F.col("d") != 3.0) & (F.col("dec") > 0) & (F.col("str") != "x")
        & (F.col("bin") != F.lit(b"\x09")) & F.col("bool") & (F.col("date") > "2000-01-01")
        & (F.col("ts") > F.lit("2000-01-01").cast("timestamp"))
        & F.col("ts_ntz").isNotNull() & F.col("dt_iv").isNotNull() & (F.size("arr") > 0)
        & F.col("m").isNotNull() & F.col("st").isNotNull()
        & F.col("ym_iv").isNotNull()).drop("ym_iv")


@pipeline
def nan_and_infinity(s):
    """Comparisons with NaN and infinity on a double column."""
    return people(s).where("score > 0 OR isnan(score)").select(
        "id", "score", F.nanvl("score", F.lit(0.0)).alias("nv"))


# -- joins -------------------------------------------------------------------------------


@pipeline
def inner_join_with_filters(s):
    """Filters on each side and across an inner join."""
    return (people(s).join(depts(s), "dept_id")
            .where("region = 'eu' AND age > 20 AND budget > age").select("id", "dept_name"))


@pipeline
def inner_join_nullable_keys(s):
    """An inner join on nullable keys (NULL never matches)."""
    p, d = people(s).alias("p"), depts(s).alias("d")
    return p.join(d, F.col("p.dept_id") == F.col("d.dept_id")).select("p.id", "d.dept_name")


@pipeline
def left_outer_join_where_on_both_sides(s):
    """WHERE conjuncts on both sides of a left outer join."""
    p, d = people(s).alias("p"), depts(s).alias("d")
    return (p.join(d, F.col("p.dept_id") == F.col("d.dept_id"), "left")
            .where("p.age > 20 AND (d.region IS NULL OR d.region = 'us')")
            .select("p.id", "d.dept_name"))


@pipeline
def left_outer_join_on_conditions(s):
    """ON conjuncts on either side of a left outer join."""
    p, d = people(s).alias("p"), depts(s).alias("d")
    cond = (F.col("p.dept_id") == F.col("d.dept_id")) & (F.col("d.budget") > 40) \
        & (F.col("p.age") > 25)
    return p.join(d, cond, "left").select("p.id", "p.age", "d.dept_name")


@pipeline
def left_outer_join_becomes_inner(s):
    """A WHERE conjunct that rejects the NULL-padded rows of a left outer join."""
    p, d = people(s).alias("p"), depts(s).alias("d")
    return (p.join(d, F.col("p.dept_id") == F.col("d.dept_id"), "left")
            .where("d.budget > 100").select("p.id", "d.budget"))


@pipeline
def right_outer_join(s):
    """WHERE and ON conjuncts around a right outer join."""
    p, d = people(s).alias("p"), depts(s).alias("d")
    cond = (F.col("p.dept_id") == F.col("d.dept_id")) & (F.col("p.age") > 10)
    return (p.join(d, cond, "right").where("d.region = 'eu' OR p.id IS NULL")
            .select("d.dept_id", "p.name"))


@pipeline
def full_outer_join(s):
    """Conjuncts around a full outer join (nothing may move)."""
    p, d = people(s).alias("p"), depts(s).alias("d")
    cond = (F.col("p.dept_id") == F.col("d.dept_id")) & (F.col("d.budget") > 10)
    return (p.join(d, cond, "full").where("p.age IS NULL OR p.age > 20")
            .select("p.id", "d.dept_name"))


@pipeline
def full_outer_join_rejected_on_one_side(s):
    """A WHERE conjunct that turns a full outer join into a left one."""
    p, d = people(s).alias("p"), depts(s).alias("d")
    return (p.join(d, F.col("p.dept_id") == F.col("d.dept_id"), "full")
            .where("p.age > 20").select("p.id", "d.dept_name"))


@pipeline
def left_semi_join(s):
    """A left semi join with ON conjuncts on both sides."""
    cond = (people(s).dept_id == depts(s).dept_id) & (depts(s).budget > 10) \
        & (people(s).age > 20)
    return people(s).join(depts(s), cond, "left_semi").where("name IS NOT NULL")


@pipeline
def left_anti_join(s):
    """A left anti join with an ON conjunct on the left side (it must stay)."""
    cond = (people(s).dept_id == depts(s).dept_id) & (people(s).age > 30)
    return people(s).join(depts(s), cond, "left_anti").select("id", "age")


@pipeline
def cross_join_with_filter(s):
    """A cross join whose WHERE clause joins the sides."""
    return (people(s).crossJoin(depts(s).select("dept_id", "budget"))
            .where((people(s).dept_id == F.col("budget") / 50) | (F.col("budget") == 1))
            .select("id", "budget"))


@pipeline
def join_with_broadcast_hint(s):
    """A join hint on one side."""
    return (people(s).join(F.broadcast(depts(s)), "dept_id").where("budget > 1")
            .select("id", "dept_name"))


@pipeline
def join_with_merge_hint_sql(s):
    """A SQL join hint."""
    return s.sql("""SELECT /*+ MERGE(d) */ p.id, d.region FROM people p JOIN depts d
                    ON p.dept_id = d.dept_id AND p.age < d.budget WHERE d.region <> 'apac'""")


@pipeline
def non_equi_join(s):
    """A join on a range condition only."""
    return (people(s).alias("a").join(people(s).alias("b"), F.col("a.age") < F.col("b.age"))
            .select(F.col("a.id").alias("x"), F.col("b.id").alias("y")).where("x > 1"))


@pipeline
def self_join(s):
    """A self-join with filters on both copies."""
    a, b = events(s).alias("a"), events(s).alias("b")
    return (a.join(b, (F.col("a.host") == F.col("b.host")) & (F.col("a.eid") + 1 == F.col("b.eid")))
            .where("a.kind = 'click'").select("a.eid", "b.kind"))


@pipeline
def three_way_join(s):
    """Three tables, filters placed after the joins."""
    return (events(s).join(people(s), events(s).person_id == people(s).id)
            .join(depts(s), "dept_id").where("region = 'eu' AND kind <> 'view' AND age > 0")
            .select("eid", "name", "dept_name"))


@pipeline
def join_of_empty_tables(s):
    """A join with an empty side."""
    return people(s).join(s.table("empty_depts"), "dept_id", "left").select("id", "dept_name")


@pipeline
def exists_in_a_disjunction(s):
    """EXISTS inside OR: an existence join."""
    return s.sql("""SELECT * FROM people p WHERE p.age > 40 OR EXISTS (
                    SELECT 1 FROM depts d WHERE d.dept_id = p.dept_id AND d.budget > 100)""")


@pipeline
def in_and_not_in_subqueries(s):
    """IN and NOT IN subqueries (semi and anti joins)."""
    return s.sql("""SELECT id, name FROM people
                    WHERE dept_id IN (SELECT dept_id FROM depts WHERE region = 'us')
                       OR id NOT IN (SELECT person_id FROM events WHERE person_id IS NOT NULL)""")


@pipeline
def exists_and_not_exists(s):
    """EXISTS and NOT EXISTS with correlated conditions."""
    return s.sql("""SELECT d.dept_name FROM depts d
                    WHERE EXISTS (SELECT * FROM people p WHERE p.dept_id = d.dept_id)
                      AND NOT EXISTS (SELECT * FROM people p WHERE p.dept_id = d.dept_id
                                                            AND p.age > 50)""")


@pipeline
def correlated_scalar_subquery(s):
    """A correlated scalar subquery in the SELECT list."""
    return s.sql("""SELECT p.id, (SELECT max(budget) FROM depts d WHERE d.dept_id = p.dept_id)
                    AS top FROM people p""")


@pipeline
def uncorrelated_scalar_subquery(s):
    """An uncorrelated scalar subquery in a WHERE clause."""
    return s.sql("""SELECT id, salary FROM people
                    WHERE salary > (SELECT avg(salary) FROM people WHERE age IS NOT NULL)""")


@pipeline
def nested_subqueries_and_cte(s):
    """A CTE and a subquery in FROM."""
    return s.sql("""WITH big AS (SELECT dept_id, budget FROM depts WHERE budget > 10)
                    SELECT x.id, big.budget FROM
                      (SELECT id, dept_id FROM people WHERE age > 0) x JOIN big
                      ON x.dept_id = big.dept_id WHERE big.budget < 1000""")


# -- aggregates --------------------------------------------------------------------------


@pipeline
def grouped_aggregate_with_having(s):
    """GROUP BY with a HAVING on an aggregate and one on a key."""
    return (people(s).groupBy("dept_id").agg(F.count("*").alias("n"), F.sum("salary").alias("t"))
            .where("n > 1 AND dept_id > 5"))


@pipeline
def aggregate_on_expression_key(s):
    """Grouping on an expression; a filter on the key moves below."""
    return (events(s).groupBy((F.col("eid") % 5).alias("k"))
            .agg(F.min("ts").alias("first"), F.countDistinct("host").alias("hosts"))
            .where("k < 3"))


@pipeline
def global_aggregate(s):
    """A global aggregate (one row, even over no rows)."""
    return people(s).where("age > 1000").agg(F.count("*").alias("n"), F.max("age").alias("m"))


@pipeline
def global_aggregate_over_empty(s):
    """A global aggregate over an empty table, filtered above."""
    return s.table("empty_people").agg(F.count("id").alias("n")).where("n = 0")


@pipeline
def aggregate_with_filter_clause(s):
    """Aggregates with FILTER clauses and count distinct."""
    return s.sql("""SELECT host, count(*) FILTER (WHERE kind = 'buy') AS buys,
                           count(DISTINCT kind) AS kinds, sum(amount) AS amount
                    FROM events GROUP BY host""")


@pipeline
def select_distinct_sql(s):
    """SELECT DISTINCT (a Distinct node until Catalyst replaces it)."""
    return s.sql("SELECT DISTINCT region, budget > 10 AS big FROM depts WHERE region IS NOT NULL")


@pipeline
def distinct_rows(s):
    """DISTINCT (replaced by an aggregate in Catalyst)."""
    return people(s).select("dept_id", "active").distinct().where("dept_id IS NOT NULL")


@pipeline
def drop_duplicates_on_subset(s):
    """dropDuplicates on a subset, filtered on a key."""
    return people(s).dropDuplicates(["id"]).where("id > 2").select("id")


@pipeline
def rollup_and_cube(s):
    """ROLLUP and CUBE (Expand)."""
    return s.sql("""SELECT region, dept_id, sum(budget) AS b, grouping_id() AS g
                    FROM depts GROUP BY ROLLUP(region, dept_id) HAVING region IS NULL OR b > 0""")


@pipeline
def grouping_sets(s):
    """GROUPING SETS with a filter on a grouping column."""
    return s.sql("""SELECT host, kind, count(*) AS n FROM events WHERE amount IS NOT NULL
                    GROUP BY GROUPING SETS ((host), (kind), ()) """)


# -- windows -----------------------------------------------------------------------------


@pipeline
def window_functions(s):
    """row_number, rank, dense_rank, lag and lead."""
    w = Window.partitionBy("host").orderBy("ts")
    return events(s).select(
        "eid", "host", F.row_number().over(w).alias("rn"), F.rank().over(w).alias("r"),
        F.dense_rank().over(w).alias("dr"), F.lag("eid").over(w).alias("prev"),
        F.lead("eid", 2).over(w).alias("next2"))


@pipeline
def filter_above_window(s):
    """A filter on the partition key moves below the window; one on its result stays."""
    w = Window.partitionBy("dept_id").orderBy("id")
    return (people(s).withColumn("rn", F.row_number().over(w))
            .where("dept_id = 10 AND rn = 1"))


@pipeline
def window_with_frames(s):
    """Running sums with row and range frames."""
    w1 = Window.partitionBy("host").orderBy("eid").rowsBetween(-2, 0)
    w2 = Window.orderBy("eid").rangeBetween(Window.unboundedPreceding, 0)
    return events(s).select("eid", F.sum("amount").over(w1).alias("s3"),
                            F.count("*").over(w2).alias("c"))


@pipeline
def window_without_partition(s):
    """A window over the whole table."""
    return people(s).select("id", F.sum("age").over(Window.partitionBy()).alias("total"))


# -- unions, set operations, generators ------------------------------------------------


@pipeline
def union_all_with_filter(s):
    """A filter above UNION ALL goes into both children."""
    a = people(s).select("id", "age")
    b = events(s).select(F.col("eid").cast("int").alias("id"), F.lit(1).alias("age"))
    return a.unionAll(b).where("id > 3")


@pipeline
def union_by_name_missing_columns(s):
    """unionByName with allowMissingColumns."""
    return (people(s).select("id", "name")
            .unionByName(depts(s).select(F.col("dept_id").alias("id")), allowMissingColumns=True)
            .where("id IS NOT NULL"))


@pipeline
def union_distinct(s):
    """UNION (distinct)."""
    return people(s).select("dept_id").union(depts(s).select("dept_id")).distinct()


@pipeline
def intersect_rows(s):
    """INTERSECT."""
    return people(s).select("dept_id").intersect(depts(s).select("dept_id"))


@pipeline
def except_all_rows(s):
    """EXCEPT ALL and subtract."""
    return (people(s).select("dept_id").exceptAll(depts(s).select("dept_id"))
            .union(people(s).select("dept_id").subtract(depts(s).select("dept_id"))))


@pipeline
def explode_arrays(s):
    """explode with a filter on the child and on the exploded value."""
    return people(s).select("id", F.explode("tags").alias("tag")).where("id > 1 AND tag <> 'b'")


@pipeline
def posexplode_and_outer(s):
    """posexplode and explode_outer."""
    return (people(s).select("id", F.posexplode("tags").alias("pos", "tag"))
            .union(people(s).select("id", F.lit(0).alias("pos"),
                                    F.explode_outer("tags").alias("tag"))))


@pipeline
def inline_structs(s):
    """inline of an array of structs."""
    return s.sql("""SELECT id, x, y FROM people
                    LATERAL VIEW inline(array(named_struct('x', id, 'y', name))) t AS x, y
                    WHERE x > 2""")


@pipeline
def explode_map(s):
    """explode of a map column."""
    return people(s).select("id", F.explode("attrs").alias("k", "v")).where("v > 0")


# -- sorts, limits, samples, repartitioning ---------------------------------------------


@pipeline
def order_by_with_nulls(s):
    """ORDER BY with ASC/DESC and explicit NULLS FIRST/LAST."""
    return people(s).orderBy(F.desc_nulls_first("age"), F.asc_nulls_last("name"), "id", "salary")


@pipeline
def sort_within_partitions(s):
    """A sort within partitions."""
    return events(s).repartition(3, "host").sortWithinPartitions("ts")


@pipeline
def limit_after_total_order(s):
    """LIMIT after an order that is total."""
    return events(s).orderBy("eid").limit(7).where("eid > 2")


@pipeline
def offset_after_total_order(s):
    """OFFSET after a total order."""
    return events(s).orderBy("eid").offset(50)


@pipeline
def filter_above_limit(s):
    """A filter above a limit (it must stay above)."""
    return events(s).orderBy(F.desc("eid")).limit(10).where("host = 'h1'")


@pipeline
def sample_with_seed(s):
    """A sample with a seed right over a table read."""
    return events(s).sample(fraction=0.5, seed=7).where("eid > 10")


@pipeline
def rand_with_seed(s):
    """rand(seed) in a projection and in a filter over a table read."""
    return (events(s).select("eid", F.rand(3).alias("r")).where("r > 0.2 AND eid > 5")
            .select("eid"))


@pipeline
def repartitions(s):
    """repartition(n), coalesce(n), repartition(n, col), repartitionByRange."""
    e = events(s)
    return (e.repartition(3).where("eid > 2").coalesce(2)
            .union(e.repartition(2, "host").where("eid < 5"))
            .union(e.repartitionByRange(2, "ts").where("eid = 30")))


@pipeline
def rebalance_hint(s):
    """The REBALANCE hint."""
    return s.sql("SELECT /*+ REBALANCE(host) */ eid, host FROM events WHERE kind = 'view'")


@pipeline
def cached_then_filtered(s):
    """A filter over a subquery alias and a projection in SQL."""
    return s.sql("""SELECT q.eid FROM (SELECT eid, host, amount FROM events) q
                    WHERE q.host = 'h2' AND q.amount > 0""")


# -- UDFs --------------------------------------------------------------------------------


@pipeline
def python_udf(s):
    """A Python UDF in a projection and in a filter."""
    double = F.udf(lambda x: None if x is None else x * 2, "int")
    return people(s).select("id", double("age").alias("a2")).where("a2 > 40")


@pipeline
def python_udf_on_join_key(s):
    """A Python UDF above a join."""
    name_len = F.udf(lambda x: None if x is None else len(x), "int")
    return (people(s).join(depts(s), "dept_id").select("id", name_len("dept_name").alias("n"))
            .where("n > 2"))
