package io.sparkext

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.catalog.CatalogStatistics

import io.sparkext.shims.SparkShim

/** Helpers for `sparkext.testing` that py4j cannot express (Scala BigInt, Option). */
object TestingSupport {

  /** Footers read from storage (not from the cache) since this JVM started. */
  def footerReads(): Long = ParquetFooters.reads.get

  /** Empties the footer cache and the Delta listings kept: the next query on a table reads
   *  its footers (its Delta log) again. */
  def clearFooterCache(): Unit = { ParquetFooters.clear(); LakeFiles.clear() }

  /** Delta listings made (not found kept) since this JVM started. */
  def deltaListingsMade(): Long = LakeFiles.deltaListingsMade.get


  /** Injects catalog statistics into `table` (`db.name`), as Spark's PlanStabilitySuite. */
  def setTableStats(session: SparkSession, table: String, rows: Long, sizeInBytes: Long): Unit = {
    val ident = SparkShim.sqlParser(session).parseTableIdentifier(table)
    SparkShim.catalog(session).alterTableStats(ident, Some(CatalogStatistics(BigInt(sizeInBytes), Some(BigInt(rows)))))
  }
}
