package io.sparkext

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.catalog.CatalogStatistics

import io.sparkext.shims.SparkShim

/** Helpers for `sparkext.testing` that py4j cannot express (Scala BigInt, Option). */
object TestingSupport {

  /** Injects catalog statistics into `table` (`db.name`), as Spark's PlanStabilitySuite. */
  def setTableStats(session: SparkSession, table: String, rows: Long, sizeInBytes: Long): Unit = {
    val ident = SparkShim.sqlParser(session).parseTableIdentifier(table)
    SparkShim.catalog(session).alterTableStats(ident, Some(CatalogStatistics(BigInt(sizeInBytes), Some(BigInt(rows)))))
  }
}
