"""Names of Catalyst classes sparkext does not mirror but must recognise.

Expressions arrive as :class:`sparkext.expressions.OpaqueExpression`, plan nodes as
:class:`sparkext.plan.Opaque`, with ``cls`` set to the Catalyst class's simple name; the
analyses compare ``cls`` with these constants, never with a string of their own.
"""

from __future__ import annotations

from types import MappingProxyType

#: Every aggregate function call (pandas grouped-aggregate UDFs included) sits inside one.
AGGREGATE_EXPRESSION = "AggregateExpression"
WINDOW_EXPRESSION = "WindowExpression"
#: ``EXISTS (subquery)`` and ``x IN (subquery)``: Spark turns them into joins after
#: sparkext has run.
EXISTS = "Exists"
LIST_QUERY = "ListQuery"
#: ``arr.f``: a field of every struct in an array.
GET_ARRAY_STRUCT_FIELDS = "GetArrayStructFields"

PREDICATE_SUBQUERIES = frozenset({EXISTS, LIST_QUERY})
#: Expressions whose value depends on many rows, not on the row at hand.
MANY_ROWS = frozenset({AGGREGATE_EXPRESSION, WINDOW_EXPRESSION})
#: Window functions whose value never decreases along the rows of a partition in its
#: window's order, and is never NULL: ``row_number`` (strictly), ``rank``, ``dense_rank``,
#: ``ntile``, ``percent_rank``, ``cume_dist``.
NONDECREASING_WINDOW_FUNCTIONS = frozenset({
    "RowNumber", "Rank", "DenseRank", "NTile", "PercentRank", "CumeDist"})
#: Aggregate functions over a frame that grows from the partition's first row, by whether
#: they only decrease: ``count`` (never NULL) and ``max`` never decrease, ``min`` never
#: increases (both NULL, first, until a value comes).
RUNNING_MONOTONIC_AGGREGATES = MappingProxyType({"Count": False, "Max": False, "Min": True})
COUNT = "Count"
SPECIFIED_WINDOW_FRAME = "SpecifiedWindowFrame"
UNBOUNDED_PRECEDING = "UnboundedPreceding"
#: Of those window functions, the one no two rows of a partition share a value of (the
#: partition keys and it are a unique key).
DISTINCT_IN_PARTITION_WINDOW_FUNCTIONS = frozenset({"RowNumber"})

#: What the JVM's "ordering" pre-check (jvm-shim Prechecks.scala) is told of the window
#: functions the ordering and uniqueness analyses read, in the registration document: the
#: sets above themselves, so the JVM never keeps a list of its own. An analysis reads
#: window functions only through ``Window.columns_of`` with one of these sets
#: (tests/test_precheck_vocabulary.py fails for a set not here).
ORDERING_PRECHECK = MappingProxyType({
    "nondecreasing_window_functions": NONDECREASING_WINDOW_FUNCTIONS,
    "running_monotonic_aggregates": frozenset(RUNNING_MONOTONIC_AGGREGATES),
    "numbering_window_functions": DISTINCT_IN_PARTITION_WINDOW_FUNCTIONS,
})

#: Aggregate functions whose result does not depend on the order of their input.
ORDER_INSENSITIVE_AGGREGATES = frozenset({
    "Min", "Max", "Count", "BitAndAgg", "BitOrAgg", "BitXorAgg", "HyperLogLogPlusPlus"})
#: Aggregate functions exact in any order unless they add floating-point values (addition
#: of doubles is not associative).
ORDER_INSENSITIVE_UNLESS_FLOATING = frozenset({
    "Sum", "Average", "StddevSamp", "StddevPop", "VarianceSamp", "VariancePop", "Skewness",
    "Kurtosis"})
#: Catalyst's UserDefinedExpression classes (Scala, Python and Hive functions).
USER_DEFINED = frozenset({
    "ScalaUDF", "ScalaUDAF", "ScalaAggregator", "PythonUDF", "PythonUDAF", "PythonUDTF",
    "HiveSimpleUDF", "HiveGenericUDF", "HiveGenericUDTF", "HiveUDAFFunction"})

# -- plan nodes

#: ``Offset(offsetExpr, child)``: the rows of its child after the first ``offsetExpr``
#: (:attr:`sparkext.plan.Opaque.offset_expr` reads it).
OFFSET = "Offset"
