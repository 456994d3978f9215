package io.sparkext.shims

import java.nio.ByteBuffer
import java.nio.charset.{CharacterCodingException, CodingErrorAction, StandardCharsets}

import org.apache.spark.sql.types.DataType
import org.apache.spark.unsafe.types.UTF8String

/** Spark 3.5 has neither VARIANT nor TIME: no literal of either type can occur. */
private[sparkext] object LiteralShim {
  /** Whether the bytes are well-formed UTF-8 (3.5's UTF8String has no isValid). */
  def isValidUtf8(s: UTF8String): Boolean =
    try {
      StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
        .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(s.getBytes))
      true
    } catch { case _: CharacterCodingException => false }
  def isTime(dt: DataType): Boolean = false
  def isVariant(dt: DataType): Boolean = false
  def variantBytes(v: Any): (Array[Byte], Array[Byte]) =
    throw new IllegalStateException("Spark 3.5 has no VARIANT type")
  def variant(value: Array[Byte], metadata: Array[Byte]): Any =
    throw new IllegalStateException("Spark 3.5 has no VARIANT type")
}
