package io.sparkext

import java.util.Base64

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.core.JsonGenerator
import com.fasterxml.jackson.databind.JsonNode

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.util.{ArrayBasedMapData, ArrayData, GenericArrayData, MapData}
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.{CalendarInterval, UTF8String}

import io.sparkext.shims.LiteralShim

/** Literal values <-> JSON. The mapping per Spark SQL type is tabled in docs/wire-format.md. */
object LiteralCodec {

  /** Whether values of this type have a JSON form (else the literal travels as opaque). */
  def supports(dt: DataType): Boolean = dt match {
    case NullType | BooleanType | ByteType | ShortType | IntegerType | LongType | FloatType |
         DoubleType | DateType | TimestampType | TimestampNTZType | BinaryType |
         CalendarIntervalType => true
    case _: StringType | _: CharType | _: VarcharType | _: DecimalType => true
    case _: YearMonthIntervalType | _: DayTimeIntervalType => true
    // TIME and VARIANT exist only on some Spark lines: guards, not type patterns.
    case t if LiteralShim.isTime(t) || LiteralShim.isVariant(t) => true
    case ArrayType(et, _) => supports(et)
    case MapType(kt, vt, _) => supports(kt) && supports(vt)
    case StructType(fields) => fields.forall(f => supports(f.dataType))
    case _ => false
  }

  /**
   * Whether `v` reads back from its JSON form as the very same value. A string that is not
   * valid UTF-8 does not (a Java string has no form for byte FF: it becomes U+FFFD), so a
   * literal holding one anywhere travels by handle only, and a rule that sends it back
   * hands Spark the original.
   */
  def exact(v: Any, dt: DataType): Boolean = v == null || (dt match {
    case _: StringType | _: CharType | _: VarcharType => LiteralShim.isValidUtf8(v.asInstanceOf[UTF8String])
    case ArrayType(et, _) => exactElements(v.asInstanceOf[ArrayData], et)
    case MapType(kt, vt, _) =>
      val m = v.asInstanceOf[MapData]
      exactElements(m.keyArray(), kt) && exactElements(m.valueArray(), vt)
    case StructType(fields) =>
      val r = v.asInstanceOf[InternalRow]
      fields.indices.forall(i => r.isNullAt(i) || exact(r.get(i, fields(i).dataType), fields(i).dataType))
    case _ => true
  })

  private def exactElements(a: ArrayData, et: DataType): Boolean =
    (0 until a.numElements()).forall(i => a.isNullAt(i) || exact(a.get(i, et), et))

  private def writeFloating(g: JsonGenerator, d: Double): Unit = {
    if (d.isNaN) g.writeString("NaN")
    else if (d.isInfinite) g.writeString(if (d > 0) "Infinity" else "-Infinity")
    else g.writeNumber(d)
  }

  def write(g: JsonGenerator, v: Any, dt: DataType): Unit = {
    if (v == null) { g.writeNull(); return }
    dt match {
      case BooleanType => g.writeBoolean(v.asInstanceOf[Boolean])
      case ByteType => g.writeNumber(v.asInstanceOf[Byte].toInt)
      case ShortType => g.writeNumber(v.asInstanceOf[Short].toInt)
      case IntegerType | DateType | _: YearMonthIntervalType => g.writeNumber(v.asInstanceOf[Int])
      case LongType | TimestampType | TimestampNTZType | _: DayTimeIntervalType =>
        g.writeNumber(v.asInstanceOf[Long])
      case t if LiteralShim.isTime(t) => g.writeNumber(v.asInstanceOf[Long])
      case FloatType =>
        val f = v.asInstanceOf[Float]
        // Float.toString is the shortest text that reads back as the same float.
        if (f.isNaN || f.isInfinite) writeFloating(g, f.toDouble) else g.writeNumber(f.toString)
      case DoubleType => writeFloating(g, v.asInstanceOf[Double])
      case _: StringType | _: CharType | _: VarcharType => g.writeString(v.toString)
      case BinaryType => g.writeString(Base64.getEncoder.encodeToString(v.asInstanceOf[Array[Byte]]))
      case _: DecimalType => g.writeString(v.asInstanceOf[Decimal].toJavaBigDecimal.toPlainString)
      case CalendarIntervalType =>
        val c = v.asInstanceOf[CalendarInterval]
        g.writeStartArray(); g.writeNumber(c.months); g.writeNumber(c.days)
        g.writeNumber(c.microseconds); g.writeEndArray()
      case t if LiteralShim.isVariant(t) =>
        val (value, metadata) = LiteralShim.variantBytes(v)
        g.writeStartArray()
        g.writeString(Base64.getEncoder.encodeToString(value))
        g.writeString(Base64.getEncoder.encodeToString(metadata))
        g.writeEndArray()
      case ArrayType(et, _) =>
        val a = v.asInstanceOf[ArrayData]
        g.writeStartArray()
        var i = 0
        while (i < a.numElements()) {
          write(g, if (a.isNullAt(i)) null else a.get(i, et), et); i += 1
        }
        g.writeEndArray()
      case MapType(kt, vt, _) =>
        val m = v.asInstanceOf[MapData]
        g.writeStartObject()
        g.writeFieldName("k"); write(g, m.keyArray(), ArrayType(kt))
        g.writeFieldName("v"); write(g, m.valueArray(), ArrayType(vt))
        g.writeEndObject()
      case StructType(fields) =>
        val r = v.asInstanceOf[InternalRow]
        g.writeStartArray()
        var i = 0
        while (i < fields.length) {
          write(g, if (r.isNullAt(i)) null else r.get(i, fields(i).dataType), fields(i).dataType)
          i += 1
        }
        g.writeEndArray()
      case NullType => g.writeNull()
      case other => throw new IllegalStateException(s"no wire form for literals of type $other")
    }
  }

  private def floating(j: JsonNode, what: String): Double = if (j.isTextual) j.asText() match {
    case "NaN" => Double.NaN
    case "Infinity" => Double.PositiveInfinity
    case "-Infinity" => Double.NegativeInfinity
    case _ => StrictJson.number(j, what)
  } else StrictJson.number(j, what)

  /** A decimal of exactly this type: no digit rounded away, no precision overflow. */
  private def decimal(j: JsonNode, d: DecimalType): Decimal = {
    val bd = try new java.math.BigDecimal(StrictJson.text(j, d.simpleString)) catch {
      case _: NumberFormatException => throw new IllegalArgumentException(s"$j is not a valid ${d.simpleString} value")
    }
    val exact = bd.stripTrailingZeros()
    // Zero has no integer digit, though BigDecimal gives it a precision of 1.
    val integerDigits = if (exact.signum == 0) 0 else exact.precision - exact.scale
    if (exact.scale > d.scale || integerDigits > d.precision - d.scale) {
      throw new IllegalArgumentException(s"$j does not fit ${d.simpleString}")
    }
    Decimal(bd, d.precision, d.scale)
  }

  def read(j: JsonNode, dt: DataType): Any = {
    if (j == null || j.isNull) return null
    val what = dt.simpleString
    dt match {
      case BooleanType => StrictJson.bool(j, what)
      case ByteType => StrictJson.long(j, what, Byte.MinValue, Byte.MaxValue).toByte
      case ShortType => StrictJson.long(j, what, Short.MinValue, Short.MaxValue).toShort
      case IntegerType | DateType | _: YearMonthIntervalType => StrictJson.int(j, what)
      case LongType | TimestampType | TimestampNTZType | _: DayTimeIntervalType =>
        StrictJson.long(j, what)
      case t if LiteralShim.isTime(t) => StrictJson.long(j, what)
      case FloatType => floating(j, what).toFloat
      case DoubleType => floating(j, what)
      case _: StringType | _: CharType | _: VarcharType => UTF8String.fromString(StrictJson.text(j, what))
      case BinaryType => Base64.getDecoder.decode(StrictJson.text(j, what))
      case d: DecimalType => decimal(j, d)
      case CalendarIntervalType =>
        new CalendarInterval(StrictJson.int(j.get(0), what), StrictJson.int(j.get(1), what),
          StrictJson.long(j.get(2), what))
      case t if LiteralShim.isVariant(t) =>
        LiteralShim.variant(Base64.getDecoder.decode(StrictJson.text(j.get(0), what)),
          Base64.getDecoder.decode(StrictJson.text(j.get(1), what)))
      case ArrayType(et, _) =>
        new GenericArrayData(j.asScala.map(read(_, et)).toArray)
      case MapType(kt, vt, _) =>
        new ArrayBasedMapData(read(j.get("k"), ArrayType(kt)).asInstanceOf[ArrayData],
          read(j.get("v"), ArrayType(vt)).asInstanceOf[ArrayData])
      case StructType(fields) =>
        InternalRow.fromSeq(fields.indices.map(i => read(j.get(i), fields(i).dataType)))
      case NullType => null
      case other => throw new IllegalArgumentException(s"no wire form for literals of type $other")
    }
  }
}
