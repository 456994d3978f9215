package io.sparkext.shims

import org.apache.spark.sql.types.DataType

/** Spark 4.0 has no TIME type (it arrived in 4.1): no value is a TIME. */
private[sparkext] object TimeShim {
  def isTime(dt: DataType): Boolean = false
}
