package io.sparkext.shims

import org.apache.spark.sql.types.{DataType, VariantType}
import org.apache.spark.unsafe.types.{UTF8String, VariantVal}

/** Literal types that exist only on some lines: VARIANT (4.0+) and TIME (4.1+, [[TimeShim]]). */
private[sparkext] object LiteralShim {
  /** Whether the bytes are well-formed UTF-8 (UTF8String.isValid arrived in 4.0). */
  def isValidUtf8(s: UTF8String): Boolean = s.isValid
  def isTime(dt: DataType): Boolean = TimeShim.isTime(dt)
  def isVariant(dt: DataType): Boolean = dt == VariantType
  def variantBytes(v: Any): (Array[Byte], Array[Byte]) = {
    val vv = v.asInstanceOf[VariantVal]
    (vv.getValue, vv.getMetadata)
  }
  def variant(value: Array[Byte], metadata: Array[Byte]): Any = new VariantVal(value, metadata)
}
