"""sparkext's built-in rules: one module per rule, each exporting one function of the
same name. ``BATCHES`` is the order they run in when ``sparkext.enable(spark)`` is called
without rules; each runs once per query, to its own fixed point, inside one call. Where no
PySpark driver calls ``enable`` (``spark-sql``, Spark Connect, the Thrift server),
``--conf spark.sparkext.rules=sparkext.rules:BATCHES`` runs them in the driver's rule
worker (:mod:`sparkext.worker`).

1. push down filters (fixed point)
2. infer filters (once: what constraints imply and is not there yet)
3. push down the inferred filters (fixed point)
4. prune columns (fixed point; below EXISTS/IN filters too when Catalyst's ColumnPruning is off)
5. simplify sort keys, eliminate sorts (fixed point)
6. answer global min, max and count from file statistics; bound top-Ks by them (once)

Steps 1 to 4 duplicate Catalyst rules: each runs only while one of those is switched off
(``Rule.only_when_catalyst_excludes``). With Catalyst's rules all on, ``enable(spark)``
runs steps 5 and 6 only.
"""

from __future__ import annotations

from functools import partial

from sparkext.optimizer import Batch, FixedPoint, Once, Rule
from sparkext.plan import Aggregate, Filter, Generate, GlobalLimit, Join, Project, Sort
from sparkext.rules.answer_from_statistics import answer_from_statistics
from sparkext.rules.bound_top_k import bound_top_k
from sparkext.rules.eliminate_sorts import eliminate_sorts
from sparkext.rules.infer_filters import infer_filters
from sparkext.rules.prune_columns import prune_columns
from sparkext.rules.push_down_filters import push_down_filters
from sparkext.rules.simplify_sort_keys import simplify_sort_keys

# Each rule names the Catalyst rules it duplicates (only_when_catalyst_excludes): while
# all of those are active, Catalyst has done the rule's work before sparkext runs, and the
# rule is skipped (tests/test_nothing_to_add.py checks that it would change nothing). Then
# only what Catalyst lacks runs: the ordering rules.
# InferFiltersFromConstraints is among pushdown's: with it off, infer_filters runs after
# Catalyst's pushdown, and only push_down_filters moves what it adds.
# The rules declared idempotent finish their work in one pass (push_down_filters moves each
# filter at its position until it stays, then descends into what it built; the pruners
# carry the needed set from the root to every leaf; the sort rules rewrite every Sort from
# the facts below it): the executor runs none of them again on its own result. Under
# pytest and the fuzzer the executor checks it (sparkext.optimizer.CHECK_CLAIMS_ENV).
PUSH_DOWN_FILTERS = Rule("push_down_filters", push_down_filters, matches=(Filter, Join),
                         idempotent=True,
                         only_when_catalyst_excludes=(
                             "PushDownPredicates", "PushPredicateThroughJoin",
                             "PushPredicateThroughNonJoin", "PushExtraPredicateThroughJoin",
                             "InferFiltersFromConstraints"))
INFER_FILTERS = Rule("infer_filters", infer_filters, matches=(Filter, Join),
                     only_when_catalyst_excludes=("InferFiltersFromConstraints",))
# What prune_columns can change sits below a node whose output drops columns its input
# has: a Project, an Aggregate, a semi or anti Join, a Generate (the root keeps its whole
# output). Expand (no tree pattern of its own) narrows too, but before the pre-CBO batch
# it comes only from grouping sets, always under an Aggregate.
PRUNE_COLUMNS = Rule("prune_columns", prune_columns, idempotent=True,
                     matches=(Project, Aggregate, Join, Generate),
                     only_when_catalyst_excludes=("ColumnPruning", "PushProjectionThroughUnion"))
# With Catalyst's ColumnPruning switched off, nothing prunes below the joins Spark makes of
# EXISTS and IN subqueries after sparkext has run: do it in advance (predicate subqueries
# sit in Filters, and in Projects and Aggregates since Spark 3.4). It prunes everything
# prune_columns does (the two differ only at those filters and EXISTS plans), so where it
# is active prune_columns is not run after it (subsumes).
PRUNE_SUBQUERY_INPUTS = Rule("prune_subquery_inputs",
                             partial(prune_columns, before_subquery_rewrite=True),
                             idempotent=True, subsumes=("prune_columns",),
                             matches=(Project, Aggregate, Join, Generate, Filter),
                             only_when_catalyst_excludes=("ColumnPruning",))
# Catalyst has no counterpart of simplify_sort_keys; its EliminateSorts does a part of
# what eliminate_sorts does (sparkext.analysis.ordering): both always run. The JVM's "ordering"
# pre-check (Prechecks.scala) skips the call for a plan whose one Sort neither rule can
# change: nothing below it makes an order but Windows, whose order the first key is not
# (or the Sort is a top-K's, under a limit: eliminate_sorts then removes it only when every
# key is constant, and simplify_sort_keys reads no order), and no key can be constant or
# follow a unique key. It over-approximates sparkext.analysis.ordering and .uniqueness: a
# node kind that makes orderings, constants or unique keys there must be admitted by the
# pre-check too (tests/test_prechecks.py checks the two agree on TPC-H, TPC-DS and the
# corpus); the window functions they read travel in the registration
# (catalyst_names.ORDERING_PRECHECK).
SIMPLIFY_SORT_KEYS = Rule("simplify_sort_keys", simplify_sort_keys, matches=(Sort,),
                          jvm_precheck="ordering", idempotent=True)
ELIMINATE_SORTS = Rule("eliminate_sorts", eliminate_sorts, matches=(Sort,),
                       jvm_precheck="ordering", idempotent=True)

# The statistics rules read the files under a relation (needs=("files",)): the JVM lists
# them and reads their parquet footers only for a plan its pre-check says they may act on
# (a limit over a sorted scan; an aggregate without grouping over a scan), so other plans
# cost what they did. Catalyst has neither.
BOUND_TOP_K = Rule("bound_top_k", bound_top_k, matches=(GlobalLimit,), needs=("files",),
                   jvm_precheck="top_k_scan", idempotent=True)
ANSWER_FROM_STATISTICS = Rule("answer_from_statistics", answer_from_statistics,
                              matches=(Aggregate,), needs=("files",),
                              jvm_precheck="global_aggregate_scan", idempotent=True)

BATCHES: tuple[Batch, ...] = (
    Batch("push down filters", FixedPoint(100), (PUSH_DOWN_FILTERS,)),
    Batch("infer filters", Once(), (INFER_FILTERS,)),
    Batch("push down inferred filters", FixedPoint(100), (PUSH_DOWN_FILTERS,)),
    Batch("prune columns", FixedPoint(100), (PRUNE_COLUMNS, PRUNE_SUBQUERY_INPUTS)),
    Batch("sorts", FixedPoint(100), (SIMPLIFY_SORT_KEYS, ELIMINATE_SORTS)),
    Batch("statistics", Once(), (ANSWER_FROM_STATISTICS, BOUND_TOP_K)),
)


def builtin_batches() -> tuple[Batch, ...]:
    """sparkext's own rules, in the order they run: what ``sparkext.enable(spark)`` runs.
    (Here, not in sparkext.optimizer: the rules build on the optimizer, never the reverse.)"""
    return BATCHES

__all__ = ["ANSWER_FROM_STATISTICS", "BATCHES", "BOUND_TOP_K", "ELIMINATE_SORTS",
           "INFER_FILTERS", "PRUNE_COLUMNS", "PRUNE_SUBQUERY_INPUTS", "PUSH_DOWN_FILTERS",
           "SIMPLIFY_SORT_KEYS", "answer_from_statistics", "bound_top_k", "builtin_batches",
           "eliminate_sorts", "infer_filters", "prune_columns", "push_down_filters",
           "simplify_sort_keys"]
