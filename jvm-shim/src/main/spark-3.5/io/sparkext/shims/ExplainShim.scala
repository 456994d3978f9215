package io.sparkext.shims

import org.apache.spark.sql.internal.SQLConf

/**
 * Spark 3.5 has no extended explain hook (`spark.sql.extendedExplainProviders` is 4.0+,
 * SPARK-47289): there, what sparkext did is in `sparkext.explain(df)`, the metrics and the
 * plan change log only.
 */
object ExplainShim {
  def register(conf: SQLConf): Unit = ()
}
