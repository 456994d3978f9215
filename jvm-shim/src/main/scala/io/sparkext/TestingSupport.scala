package io.sparkext

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.catalog.CatalogStatistics

/** Helpers for `sparkext.testing` that py4j cannot express (Scala BigInt, Option). */
object TestingSupport {

  /** Injects catalog statistics into `table` (`db.name`), as Spark's PlanStabilitySuite. */
  def setTableStats(session: SparkSession, table: String, rows: Long, sizeInBytes: Long): Unit = {
    val state = session.asInstanceOf[org.apache.spark.sql.classic.SparkSession].sessionState
    val ident = state.sqlParser.parseTableIdentifier(table)
    state.catalog.alterTableStats(ident, Some(CatalogStatistics(BigInt(sizeInBytes), Some(BigInt(rows)))))
  }
}
