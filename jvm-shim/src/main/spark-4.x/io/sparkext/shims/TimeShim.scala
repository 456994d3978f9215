package io.sparkext.shims

import org.apache.spark.sql.types.{DataType, TimeType}

/** The TIME type (Spark 4.1+); spark-4.0/ shadows this file. */
private[sparkext] object TimeShim {
  def isTime(dt: DataType): Boolean = dt.isInstanceOf[TimeType]
}
