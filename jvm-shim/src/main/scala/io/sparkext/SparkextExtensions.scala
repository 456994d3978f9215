package io.sparkext

import org.apache.spark.sql.{SparkSession, SparkSessionExtensions}
import org.apache.spark.sql.sparkext.SparkextConf

/**
 * The class users name in `spark.sql.extensions`. It injects the bridge twice: once per
 * query (`injectPreCBORule`, where sparkext's own rules run their batches to a fixed point in
 * one call) and inside Catalyst's fixed-point operator-optimization batches
 * (`injectOptimizerRule`) for rules that must interleave with Catalyst's. Both stay dormant
 * until `sparkext.enable(spark)` registers Python rules for the session.
 *
 * It also injects the table functions `sparkext_metrics()` and `sparkext_reset_metrics()`
 * ([[MetricsTable]]): the counters for clients without py4j, such as Spark Connect; and the
 * guards' planner strategy ([[GuardStrategy]]), which judges every query when the launch
 * configuration names guards (`spark.sparkext.guards`, docs/guards.md) and does nothing
 * otherwise. A strategy, not an optimizer rule: no session setting can take it out.
 *
 * Loading it registers the `spark.sparkext.*` config entries ([[SparkextConf]]).
 */
class SparkextExtensions extends (SparkSessionExtensions => Unit) {
  override def apply(ext: SparkSessionExtensions): Unit = {
    // Registers the spark.sparkext.* entries before a session of the extension copies its
    // Spark conf into its SQL conf, so a bad --conf value is refused there, by Spark.
    SparkextConf.register()
    ext.injectPreCBORule((session: SparkSession) => new PythonRules(session, Position.Once))
    ext.injectOptimizerRule((session: SparkSession) => new PythonRules(session, Position.FixedPoint))
    MetricsTable.functions.foreach(ext.injectTableFunction)
    ext.injectPlannerStrategy((session: SparkSession) => new GuardStrategy(session))
  }
}
