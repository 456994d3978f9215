"""TPC-H table sizes at scale factor 1 (rows, bytes): the statistics injected into the
empty tables of the plan tests, as Spark's PlanStabilitySuite does for TPC-DS."""

STATS = {
    "lineitem": (6_001_215, 760_000_000),
    "orders": (1_500_000, 170_000_000),
    "partsupp": (800_000, 120_000_000),
    "part": (200_000, 24_000_000),
    "customer": (150_000, 24_000_000),
    "supplier": (10_000, 1_400_000),
    "nation": (25, 2_200),
    "region": (5, 400),
}
