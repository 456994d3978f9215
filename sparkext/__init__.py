"""sparkext: Catalyst optimizer rules written in Python.

    import sparkext
    from pyspark.sql import SparkSession

    spark = sparkext.configure(SparkSession.builder).getOrCreate()
    sparkext.enable(spark)
"""

from sparkext.explain import Explanation, explain
from sparkext.guards import Guard, Query, guard, refuse
from sparkext.optimizer import Batch, FixedPoint, Once, Rule, RuleExecutor, because, rule
from sparkext.session import (
    EXTENSION_CLASS,
    Enabled,
    SparkextError,
    configure,
    connect_server_args,
    disable,
    enable,
    jar_path,
    metrics,
    reset_metrics,
)

__version__ = "0.1.0"

__all__ = [
    "Batch", "EXTENSION_CLASS", "Enabled", "Explanation", "FixedPoint", "Guard", "Once",
    "Query", "Rule", "RuleExecutor", "SparkextError", "because", "configure",
    "connect_server_args", "disable", "enable", "explain", "guard", "jar_path", "metrics",
    "refuse", "reset_metrics", "rule",
]
