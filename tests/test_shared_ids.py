"""One attribute id produced in two places of a plan (issue 33).

Spark leaves an expression id naming two different values in one plan where it does not
re-instance a relation: a recursive CTE read twice (both reads output the ``UnionLoop``'s
very ids, aliased apart by a Project on each side), a correlated subquery decorrelated
into a join (the outer relation's ids again inside the domain side), a non-inlined CTE
(its definition and its first reference). Below a join, an id then says nothing about
which side's row it came from: the analyses must keep each side's facts to that side's
own output (``EquivalenceProperties.restricted_to``), or a sort key on one side is taken
as equal to one on the other and dropped. Constraints and unique keys only ever speak of
a node's output, so they cannot conflate the two; the tests below pin all of them.

The second half runs the shapes in real sessions, in plain Spark, with sparkext on top of
Catalyst and with Catalyst's pushdown and pruning rules excluded: rows in plain Spark's
order, and every sort key kept where it decides. The test session also checks every fact
the ordering rules relied on against the rows (tests/conftest.py, ``order_facts_hold``),
which catches the original defect even when the join's output happened to come in order.

Last, two classes of plans whose rewrites the JVM rejected although Spark itself makes
them (grouping by a map; a window in a correlated subquery carrying the outer column):
the JVM's checks were stricter than Spark's analyzer, and now follow it line by line.
"""

from __future__ import annotations

import pytest

from sparkext.analysis.constraints import constraints
from sparkext.analysis.ordering import EquivalenceProperties, Ordering, SortKey, properties
from sparkext.analysis.uniqueness import unique_keys
from sparkext.catalyst import excluded_rules_conf
from sparkext.expressions import Alias, EqualTo, IsNotNull, asc, desc, lit
from sparkext.plan import Aggregate, Filter, Join, Project, Relation, Sort
from sparkext.rules.eliminate_sorts import eliminate_sorts
from sparkext.rules.simplify_sort_keys import simplify_sort_keys
from tests.conftest import conf, jvm_nodes
from tests.mirror_plans import col
from tests.rows import assert_same_rows, collect

# A recursive CTE read twice: both reads output x#1, each side names it apart.
x = col("x", 1)
LOOP = Relation("UnionLoop", (x,), 100)


def side(name: str, i: int, child=LOOP):
    alias = Alias(x, name, expr_id=i)
    return Project((alias,), child), alias.to_attribute()


# -- the analyses, on mirror plans ----------------------------------------------------------


def test_a_join_does_not_equate_two_sides_aliases_of_one_id():
    left, a = side("a", 10)
    right, b = side("b", 11)
    p = properties(Join(left, right, "Cross", None))
    assert not p.same_group(a, b)
    assert not p.ordering_satisfy([asc(a), desc(b)], require_global=False)


def test_simplify_sort_keys_keeps_the_key_of_the_other_side():
    left, a = side("a", 10)
    right, b = side("b", 11)
    sort = Sort((asc(a), desc(b)), True, Join(left, right, "Cross", None))
    assert simplify_sort_keys(sort) is sort
    assert eliminate_sorts(sort) is sort


def test_a_constant_on_one_side_is_not_a_constant_on_the_other():
    left, a = side("a", 10, Filter(EqualTo(x, lit(1)), LOOP))
    right, b = side("b", 11)
    p = properties(Join(left, right, "Cross", None))
    assert p.constant(a) is not None  # the left side's own fact survives, through its alias
    assert p.constant(b) is None
    sort = Sort((asc(a), asc(b)), True, Join(left, right, "Cross", None))
    assert simplify_sort_keys(sort).order == (asc(b),)  # a is constant; b decides


def test_a_column_not_null_on_one_side_is_not_so_on_the_other():
    left, a = side("a", 10, Filter(IsNotNull(x), LOOP))
    right, b = side("b", 11)
    p = properties(Join(left, right, "Cross", None))
    assert p.is_not_null(a) and not p.is_not_null(b)


def test_an_outer_join_keeps_no_fact_of_its_side_about_an_id_the_other_side_outputs():
    # LEFT JOIN r b: the right side is the loop itself, outputting x#1, while the left
    # side's facts (a = x) are about its own row's x.
    left, a = side("a", 10)
    join = Join(left, LOOP, "LeftOuter", EqualTo(a, x))
    p = properties(join)
    assert not p.same_group(a, x)
    sort = Sort((asc(a), asc(x)), True, join)
    assert simplify_sort_keys(sort) is sort


def test_constraints_and_unique_keys_speak_of_each_sides_output_only():
    left, a = side("a", 10, Filter(EqualTo(x, lit(1)), LOOP))
    right, b = side("b", 11)
    join = Join(left, right, "Cross", None)
    assert all(c.references <= {a.expr_id} for c in constraints(join))
    grouped = Aggregate((x,), (x,), LOOP)  # unique on x
    right_unique, c = side("c", 12, grouped)
    join = Join(left, right_unique, "Cross", None)
    assert all(m.references <= join.output_ids for k in unique_keys(join) for m in k)
    assert not properties(join).ordering_satisfy([asc(a), asc(b)], False)


def test_restricted_to_keeps_what_an_alias_still_names():
    k = col("k", 2)
    p = EquivalenceProperties()
    p.add_equivalence(x, k)
    p.add_constant(x)
    p.orderings.append(Ordering((SortKey(x), SortKey(col("y", 3))), True))
    r = p.restricted_to(frozenset({2}))
    assert r.constant(k) is not None and r.constant(x) is None
    assert r.orderings == [Ordering((SortKey(k),), True)]  # y is gone: the ordering stops
    assert p.restricted_to(frozenset({1, 2, 3})) is p


# -- real sessions ----------------------------------------------------------------------------

MODES = {"plain": {"spark.sparkext.enabled": "false"},
         "on_top": {"spark.sparkext.enabled": "true"},
         "instead": {"spark.sparkext.enabled": "true", **excluded_rules_conf()}}

RECURSIVE = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) "
TREE = """WITH RECURSIVE t(id, path) AS (
            VALUES(1, cast(array() as array<int>))
            UNION ALL
            SELECT tree.id, t.path || array(tree.id) FROM tree JOIN t ON (tree.parent_id = t.id))
          """

# name -> (SQL, whether it needs recursive CTEs, sort keys that must stay)
SHAPES = {
    "recursive CTE, cross join, keys both ways": (
        RECURSIVE + "SELECT a.n AS an, b.n AS bn FROM r a CROSS JOIN r b ORDER BY an, bn DESC",
        True, 2),
    # a.n = b.n + 1: bn is a strict function of an, rightly dropped; an alone stays.
    "recursive CTE, join on a key": (
        RECURSIVE + "SELECT a.n AS an, b.n AS bn FROM r a JOIN r b ON a.n = b.n + 1 "
                    "ORDER BY an, bn", True, 1),
    "recursive CTE, join on a key, the other side first": (
        RECURSIVE + "SELECT a.n AS an, b.n AS bn, c.n AS cn FROM r a JOIN r b ON a.n = b.n "
                    "CROSS JOIN r c ORDER BY bn, cn DESC, an", True, 2),
    "recursive CTE, left join": (
        RECURSIVE + "SELECT a.n AS an, b.n AS bn FROM r a LEFT JOIN r b ON a.n < b.n "
                    "ORDER BY an, bn DESC", True, 2),
    "recursive CTE, a constant side": (
        RECURSIVE + "SELECT a.n AS an, b.n AS bn FROM r a CROSS JOIN r b WHERE a.n = 2 "
                    "ORDER BY an, bn DESC", True, 1),
    "recursive CTE without column names": (
        "WITH RECURSIVE r AS (SELECT 1 AS n UNION ALL SELECT n + 1 FROM r WHERE n < 3) "
        "SELECT a.n AS an, b.n AS bn FROM r a CROSS JOIN r b ORDER BY an, bn DESC", True, 2),
    "Spark's own test (postgreSQL/with.sql)": (
        TREE + """SELECT t1.id a, t2.id b FROM t AS t1 JOIN t AS t2
                  ON (t1.path[0] = t2.path[0] AND size(t1.path) = 1 AND size(t2.path) > 1)
                  ORDER BY t1.id, t2.id""", True, 2),
    "a lateral subquery over the same table": (
        "SELECT a.id, s.m FROM tree a, LATERAL (SELECT max(b.id) m FROM tree b "
        "WHERE b.parent_id = a.parent_id) s ORDER BY a.parent_id, s.m, a.id DESC", False, 3),
    "a non-deterministic CTE read twice (not inlined)": (
        "WITH c AS (SELECT id, rand(7) AS r FROM tree) "
        "SELECT a.id, b.id AS bid FROM c a CROSS JOIN c b ORDER BY a.id, bid DESC", False, 2),
}


def register_tree(spark):
    """The table of Spark's own test, as the temp view ``tree``."""
    spark.createDataFrame(
        [(1, None), (2, 1), (3, 1), (4, 2), (5, 2), (6, 2), (7, 3), (8, 3), (9, 4), (10, 4),
         (11, 7), (12, 7), (13, 7), (14, 9), (15, 11), (16, 11)],
        "id int, parent_id int").createOrReplaceTempView("tree")
    return spark


@pytest.fixture(scope="module")
def tree(spark):
    return register_tree(spark)


def _has_recursive_ctes(spark) -> bool:
    return tuple(int(p) for p in spark.version.split(".")[:2]) >= (4, 1)


def _root_sort_keys(df) -> int:
    plan = df._jdf.queryExecution().optimizedPlan()
    sort = next(n for n in jvm_nodes(plan) if n.nodeName() == "Sort")
    return sort.order().size()


@pytest.mark.parametrize("name", list(SHAPES))
def test_the_shape_gives_plain_sparks_rows_in_plain_sparks_order(tree, name):
    check_shape(tree, name)


def check_shape(tree, name: str) -> None:
    """``SHAPES[name]`` in every mode (also run by the compat suite on every line)."""
    sql, recursive, kept = SHAPES[name]
    if recursive and not _has_recursive_ctes(tree):
        pytest.skip("recursive CTEs arrived in Spark 4.1")
    results, keys = {}, {}
    for mode, settings in MODES.items():
        with conf(tree, settings):
            df = tree.sql(sql)
            results[mode] = collect(df)
            keys[mode] = _root_sort_keys(df)
    for mode in ("on_top", "instead"):
        assert_same_rows(results["plain"], results[mode], ordered=True)
    assert keys["on_top"] == keys["instead"] == kept


# -- plans Spark makes that the JVM rejected ------------------------------------------------

REJECTED_BEFORE = {
    "grouping by an array of maps": (
        "SELECT count(*) FROM VALUES (ARRAY(MAP(1, 2, 2, 3), MAP(1, 3))), "
        "(ARRAY(MAP(2, 3), MAP(1, 3))) AS t(a) GROUP BY a"),
    "grouping by a map, with a filter": (
        "SELECT m, count(*) FROM VALUES (MAP(1, 2), 1), (MAP(1, 2), 2), (MAP(2, 1), 3) "
        "AS t(m, v) WHERE v > 0 GROUP BY m"),
    "a window over the outer query's column in a correlated scalar subquery": (
        "SELECT t1.id FROM tree t1 WHERE t1.id < (SELECT MAX(tmp.s) FROM (SELECT SUM(t2.id) "
        "OVER (PARTITION BY t2.parent_id ORDER BY t2.id) AS s FROM tree t2 "
        "WHERE t2.parent_id <= t1.parent_id) tmp)"),
    "the same in an EXISTS subquery": (
        "SELECT t1.id FROM tree t1 WHERE EXISTS (SELECT 1 FROM (SELECT SUM(t2.id) OVER "
        "(PARTITION BY t2.parent_id ORDER BY t2.id) AS s FROM tree t2 "
        "WHERE t2.parent_id <= t1.parent_id) tmp WHERE tmp.s > 10)"),
}


@pytest.mark.parametrize("name", list(REJECTED_BEFORE))
def test_a_rewrite_of_a_plan_shape_spark_makes_is_accepted(tree, name):
    check_accepted(tree, name)


def check_accepted(tree, name: str) -> None:
    """``REJECTED_BEFORE[name]`` in every mode; strict mode (the test session's) raises
    when the JVM rejects a rewrite (also run by the compat suite on every line)."""
    sql = REJECTED_BEFORE[name]
    if "map" in name and tree.version.startswith("3."):
        pytest.skip("Spark 3.5 cannot group by a map")
    if "window" in name or "the same in" in name:
        if tree.version.startswith("3."):
            pytest.skip("Spark 3.5 refuses an outer column below a window in a subquery")
    with conf(tree, MODES["plain"]):
        expected = collect(tree.sql(sql))
    for mode in ("on_top", "instead"):
        with conf(tree, MODES[mode]):
            assert_same_rows(expected, collect(tree.sql(sql)))
