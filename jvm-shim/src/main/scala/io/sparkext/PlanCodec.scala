package io.sparkext

import java.io.ByteArrayOutputStream
import java.util.{Base64, IdentityHashMap}
import java.util.concurrent.ConcurrentHashMap

import scala.collection.mutable.ArrayBuffer
import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import com.fasterxml.jackson.core.{JsonEncoding, JsonFactory, JsonFactoryBuilder, JsonGenerator, StreamReadConstraints, StreamWriteConstraints}
import com.fasterxml.jackson.core.io.SerializedString
import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}

import org.apache.spark.sql.catalyst.{AliasIdentifier, InternalRow}
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.plans._
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, Project}
import org.apache.spark.sql.catalyst.util.{ArrayBasedMapData, ArrayData, GenericArrayData, MapData}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.{CalendarInterval, UTF8String, VariantVal}

/**
 * The wire format, version [[PlanCodec.Version]] (docs/wire-format.md is the reference;
 * `sparkext/codec.py` is the other half, and `sparkext/wire.py` holds the constants both
 * sides share, compared at registration by the [[Handshake]]). A plan travels as one JSON document; every node, expression and opaque
 * value carries an integer handle into the per-call table `handles`, so Python can answer
 * `{"ref": h}` for anything it did not change.
 */
object PlanCodec {
  val Version = 2
  /**
   * Plans nest deeply (a `withColumn` loop of 250 steps is one expression 750 levels deep
   * once Catalyst collapses the projections, and every level is two JSON levels):
   * Jackson's default depth limit of 1000 would turn such a query into an encode error.
   * Catalyst's own recursion is the real limit.
   */
  val MaxNesting = 100000
  private[sparkext] val factory: JsonFactory = {
    val b = new JsonFactoryBuilder()
    b.streamReadConstraints(StreamReadConstraints.builder().maxNestingDepth(MaxNesting).build())
    b.streamWriteConstraints(StreamWriteConstraints.builder().maxNestingDepth(MaxNesting).build())
    b.build()
  }
  private[sparkext] val mapper = new ObjectMapper(factory)

  // DataType.fromJson goes through json4s: worth caching, the set of types is small.
  private val typeCache = new ConcurrentHashMap[String, DataType]()

  def parseType(json: String): DataType = {
    var t = typeCache.get(json)
    if (t == null) {
      t = DataType.fromJson(json)
      typeCache.put(json, t)
    }
    t
  }

  // DataType.json renders through json4s too (tens of microseconds a type, every call).
  private val typeJsonCache = new ConcurrentHashMap[DataType, String]()

  def typeJson(t: DataType): String = {
    var j = typeJsonCache.get(t)
    if (j == null) {
      j = t.json
      typeJsonCache.put(t, j)
    }
    j
  }

  /**
   * Expression classes whose constructor refuses a placeholder child (AggregateExpression
   * wants an AggregateFunction): their shell is their whole canonical form (`shellId`).
   */
  private[sparkext] val noPlaceholders = ConcurrentHashMap.newKeySet[Class[_]]()

  private val simpleNames = new ConcurrentHashMap[Class[_], String]()

  def simpleName(c: Class[_]): String = {
    var n = simpleNames.get(c)
    if (n == null) {
      n = c.getName.substring(c.getName.lastIndexOf('.') + 1).stripSuffix("$")
      simpleNames.put(c, n)
    }
    n
  }

  val joinTypes: Map[String, JoinType] = Map(
    "Inner" -> Inner, "Cross" -> Cross, "LeftOuter" -> LeftOuter, "RightOuter" -> RightOuter,
    "FullOuter" -> FullOuter, "LeftSemi" -> LeftSemi, "LeftAnti" -> LeftAnti,
    "LeftSingle" -> LeftSingle)
}

/**
 * Reads JSON scalars without Jackson's lenient conversions (`intValue` of 3000000000 wraps,
 * of 1.5 truncates, `booleanValue` of 1 is false): a value that does not fit its type is an
 * error, so a rule's wrong constant rejects the rewrite instead of changing the query.
 */
object StrictJson {
  private def bad(j: JsonNode, what: String): Nothing =
    throw new IllegalArgumentException(s"$j is not a valid $what value")

  def long(j: JsonNode, what: String, min: Long = Long.MinValue, max: Long = Long.MaxValue): Long = {
    if (j == null || !j.isIntegralNumber || !j.canConvertToLong) bad(j, what)
    val v = j.longValue()
    if (v < min || v > max) bad(j, what)
    v
  }

  def int(j: JsonNode, what: String): Int = long(j, what, Int.MinValue, Int.MaxValue).toInt

  def bool(j: JsonNode, what: String): Boolean = {
    if (j == null || !j.isBoolean) bad(j, what)
    j.booleanValue()
  }

  def number(j: JsonNode, what: String): Double = {
    if (j == null || !j.isNumber) bad(j, what)
    j.doubleValue()
  }

  def text(j: JsonNode, what: String): String = {
    if (j == null || !j.isTextual) bad(j, what)
    j.asText()
  }
}

/** Literal values <-> JSON. The mapping per Spark SQL type is tabled in docs/wire-format.md. */
object LiteralCodec {

  /** Whether values of this type have a JSON form (else the literal travels as opaque). */
  def supports(dt: DataType): Boolean = dt match {
    case NullType | BooleanType | ByteType | ShortType | IntegerType | LongType | FloatType |
         DoubleType | DateType | TimestampType | TimestampNTZType | BinaryType |
         CalendarIntervalType | VariantType => true
    case _: StringType | _: CharType | _: VarcharType | _: DecimalType => true
    case _: YearMonthIntervalType | _: DayTimeIntervalType | _: TimeType => true
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
    case _: StringType | _: CharType | _: VarcharType => v.asInstanceOf[UTF8String].isValid
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
      case LongType | TimestampType | TimestampNTZType | _: DayTimeIntervalType | _: TimeType =>
        g.writeNumber(v.asInstanceOf[Long])
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
      case VariantType =>
        val vv = v.asInstanceOf[VariantVal]
        g.writeStartArray()
        g.writeString(Base64.getEncoder.encodeToString(vv.getValue))
        g.writeString(Base64.getEncoder.encodeToString(vv.getMetadata))
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
      case LongType | TimestampType | TimestampNTZType | _: DayTimeIntervalType | _: TimeType =>
        StrictJson.long(j, what)
      case FloatType => floating(j, what).toFloat
      case DoubleType => floating(j, what)
      case _: StringType | _: CharType | _: VarcharType => UTF8String.fromString(StrictJson.text(j, what))
      case BinaryType => Base64.getDecoder.decode(StrictJson.text(j, what))
      case d: DecimalType => decimal(j, d)
      case CalendarIntervalType =>
        new CalendarInterval(StrictJson.int(j.get(0), what), StrictJson.int(j.get(1), what),
          StrictJson.long(j.get(2), what))
      case VariantType =>
        new VariantVal(Base64.getDecoder.decode(StrictJson.text(j.get(0), what)),
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

/**
 * Encodes one plan for one call. Not thread-safe: one encoder per call. After `encode`,
 * `handles` and `attributes` are the tables the [[PlanRebuilder]] resolves references with.
 */
final class PlanEncoder(spec: MirrorSpec) {
  val handles = new ArrayBuffer[AnyRef](256)
  val attributes = new ArrayBuffer[AttributeReference](64)
  /** Every ExprId seen, by id: Python sends back ids, the rebuilder needs the full ExprId. */
  val exprIds = new java.util.HashMap[java.lang.Long, ExprId]()
  // Equal attributes share one table entry. Most repeats are the very same object, and an
  // AttributeReference's hashCode hashes its name, type, metadata and qualifier every time
  // (a tenth of an encode): the identity map answers those first.
  private val attrIndex = new java.util.HashMap[AttributeReference, Integer]()
  private val attrByIdentity = new IdentityHashMap[AttributeReference, Integer]()
  private val types = new ArrayBuffer[DataType]()
  private val typeIndex = new java.util.HashMap[DataType, Integer]()
  // UTF-8 bytes, as the channel sends them: Jackson's byte generator is the faster one.
  private val out = new ByteArrayOutputStream(8192)
  private val g = PlanCodec.factory.createGenerator(out, JsonEncoding.UTF8)
  g.setRootValueSeparator(new SerializedString("\n"))

  /**
   * Writes the request: the header object (`header` adds the call's fields), a newline,
   * then the body object (plan, attribute and type tables). Python parses the body only
   * when a rule first reads the plan; the header names the root node's kind so that
   * Python can hand rules a root of the right class before that.
   */
  def encode(plan: LogicalPlan, header: JsonGenerator => Unit): Array[Byte] = {
    g.writeStartObject()
    g.writeNumberField("v", PlanCodec.Version)
    header(g)
    // The session's time zone and what its rules can reverse: the ordering analysis needs
    // them before it calls to_date or date_trunc monotonic.
    val zone = SQLConf.get.sessionLocalTimeZone
    g.writeStringField("tz", zone)
    val breaks = ZoneFacts.breaks(zone)
    if (breaks.nonEmpty) {
      g.writeArrayFieldStart("tz_breaks"); breaks.foreach(g.writeString); g.writeEndArray()
    }
    g.writeObjectFieldStart("root")
    g.writeStringField("k", nodeKind(plan, codecOf(plan)))
    g.writeNumberField("h", handles.length) // the handle node(plan) gives it
    g.writeEndObject()
    g.writeEndObject()

    g.writeStartObject() // after the root-value separator: a newline
    g.writeFieldName("plan")
    node(plan)
    g.writeArrayFieldStart("attrs")
    attributes.foreach { a =>
      g.writeStartArray()
      g.writeString(a.name)
      g.writeNumber(a.exprId.id)
      g.writeNumber(typeId(a.dataType))
      g.writeBoolean(a.nullable)
      g.writeStartArray(); a.qualifier.foreach(g.writeString); g.writeEndArray()
      if (a.metadata != Metadata.empty) g.writeString(a.metadata.json)
      g.writeEndArray()
    }
    g.writeEndArray()
    g.writeArrayFieldStart("types")
    types.foreach(t => g.writeString(PlanCodec.typeJson(t)))
    g.writeEndArray()
    g.writeEndObject()
    g.flush()
    out.toByteArray
  }

  private def handle(o: AnyRef): Int = {
    val h = handles.length
    handles += o
    h
  }

  private def typeId(t: DataType): Int = {
    var i = typeIndex.get(t)
    if (i == null) {
      i = types.length
      types += t
      typeIndex.put(t, i)
    }
    i
  }

  private def attrId(a: AttributeReference): Int = {
    var i = attrByIdentity.get(a)
    if (i == null) {
      i = attrIndex.get(a)
      if (i == null) {
        i = attributes.length
        attributes += a
        attrIndex.put(a, i)
        exprIds.put(a.exprId.id, a.exprId)
      }
      attrByIdentity.put(a, i)
    }
    i
  }

  private def mirrored(p: Product, codec: ClassCodec): Boolean =
    codec != null && p.productArity == codec.kinds.length

  // ---- plans -------------------------------------------------------------------------------

  /** The mirror class of a node, or null: it travels as a relation or an opaque node. */
  private def codecOf(p: LogicalPlan): ClassCodec = {
    val codec = spec.forClass(p.getClass)
    if (mirrored(p, codec)) codec else null
  }

  private def nodeKind(p: LogicalPlan, codec: ClassCodec): String =
    if (codec != null) codec.name else if (p.children.isEmpty) "Relation" else "Opaque"

  private def node(p: LogicalPlan): Unit = {
    val h = handle(p)
    g.writeStartObject()
    g.writeNumberField("h", h)
    val codec = codecOf(p)
    val kind = nodeKind(p, codec)
    g.writeStringField("k", kind)
    if (codec != null) {
      args(p, codec)
    } else if (kind == "Relation") {
      g.writeStringField("cls", PlanCodec.simpleName(p.getClass))
      val name = Relations.name(p)
      if (name != null) g.writeStringField("name", name)
      output(p)
      val ordering = p.outputOrdering
      if (ordering.nonEmpty) {
        g.writeArrayFieldStart("ord"); ordering.foreach(expr); g.writeEndArray()
        if (Relations.orderingIsGlobal(p, ordering)) g.writeBooleanField("glob", true)
      }
    } else {
      g.writeStringField("cls", PlanCodec.simpleName(p.getClass))
      output(p)
      g.writeArrayFieldStart("c"); p.children.foreach(node); g.writeEndArray()
      val xs = p.expressions
      if (xs.nonEmpty) { g.writeArrayFieldStart("x"); xs.foreach(expr); g.writeEndArray() }
    }
    g.writeEndObject()
  }

  private def output(p: LogicalPlan): Unit = {
    g.writeArrayFieldStart("out")
    p.output.foreach(expr)
    g.writeEndArray()
  }

  private def args(p: Product, codec: ClassCodec): Unit = {
    g.writeArrayFieldStart("p")
    var i = 0
    while (i < codec.kinds.length) {
      value(p.productElement(i), codec.kinds(i))
      i += 1
    }
    g.writeEndArray()
  }

  private def value(v: Any, kind: Kind): Unit = kind match {
    case Kind.Expr => expr(v.asInstanceOf[Expression])
    case Kind.ExprOpt => v.asInstanceOf[Option[Expression]] match {
      case Some(e) => expr(e)
      case None => g.writeNull()
    }
    case Kind.Exprs => exprs(v.asInstanceOf[Seq[Expression]])
    case Kind.ExprSeqs =>
      g.writeStartArray(); v.asInstanceOf[Seq[Seq[Expression]]].foreach(exprs); g.writeEndArray()
    case Kind.ExprPairs =>
      g.writeStartArray()
      v.asInstanceOf[Seq[(Expression, Expression)]].foreach { case (a, b) =>
        g.writeStartArray(); expr(a); expr(b); g.writeEndArray()
      }
      g.writeEndArray()
    case Kind.Plan => node(v.asInstanceOf[LogicalPlan])
    case Kind.Plans =>
      g.writeStartArray(); v.asInstanceOf[Seq[LogicalPlan]].foreach(node); g.writeEndArray()
    case Kind.Type => g.writeNumber(typeId(v.asInstanceOf[DataType]))
    case Kind.Str => g.writeString(v.asInstanceOf[String])
    case Kind.StrOpt => v.asInstanceOf[Option[String]] match {
      case Some(s) => g.writeString(s)
      case None => g.writeNull()
    }
    case Kind.Strs =>
      g.writeStartArray(); v.asInstanceOf[Seq[String]].foreach(g.writeString); g.writeEndArray()
    case Kind.IntK => g.writeNumber(v.asInstanceOf[Int])
    case Kind.IntOpt => v.asInstanceOf[Option[Any]] match {
      case Some(i) => g.writeNumber(i.asInstanceOf[Int])
      case None => g.writeNull()
    }
    case Kind.Ints =>
      g.writeStartArray(); v.asInstanceOf[Seq[Any]].foreach(i => g.writeNumber(i.asInstanceOf[Int]))
      g.writeEndArray()
    case Kind.LongK => g.writeNumber(v.asInstanceOf[Long])
    case Kind.LongOpt => v.asInstanceOf[Option[Any]] match {
      case Some(l) => g.writeNumber(l.asInstanceOf[Long])
      case None => g.writeNull()
    }
    case Kind.DoubleK => g.writeNumber(v.asInstanceOf[Double])
    case Kind.BoolK => g.writeBoolean(v.asInstanceOf[Boolean])
    case Kind.CharK => g.writeString(v.asInstanceOf[Char].toString)
    case Kind.Value => opaqueValue(v.asInstanceOf[AnyRef])
    case Kind.ValueOpt => v.asInstanceOf[Option[AnyRef]] match {
      case Some(x) => opaqueValue(x)
      case None => g.writeNull()
    }
    case Kind.Join => v match {
      case ExistenceJoin(exists) =>
        g.writeStartObject(); g.writeFieldName("ExistenceJoin"); expr(exists); g.writeEndObject()
      case jt: JoinType if PlanCodec.joinTypes.get(PlanCodec.simpleName(jt.getClass)).contains(jt) =>
        g.writeString(PlanCodec.simpleName(jt.getClass))
      case other => opaqueValue(other.asInstanceOf[AnyRef])
    }
    case Kind.Direction => g.writeString(if (v == Ascending) "ASC" else "DESC")
    case Kind.Nulls => g.writeString(if (v == NullsFirst) "FIRST" else "LAST")
    case Kind.AliasId =>
      val a = v.asInstanceOf[AliasIdentifier]
      g.writeStartArray(); g.writeString(a.name)
      g.writeStartArray(); a.qualifier.foreach(g.writeString); g.writeEndArray()
      g.writeEndArray()
  }

  private def opaqueValue(x: AnyRef): Unit = {
    g.writeStartObject()
    g.writeNumberField("v", handle(x))
    val s = String.valueOf(x)
    g.writeStringField("s", if (s.length > 200) s.substring(0, 200) + "..." else s)
    g.writeEndObject()
  }

  // ---- expressions -------------------------------------------------------------------------

  private def exprs(es: Seq[Expression]): Unit = {
    g.writeStartArray(); es.foreach(expr); g.writeEndArray()
  }

  private def expr(e: Expression): Unit = e match {
    case a: AttributeReference =>
      g.writeStartObject(); g.writeNumberField("a", attrId(a)); g.writeEndObject()
    case l: Literal if LiteralCodec.supports(l.dataType) && LiteralCodec.exact(l.value, l.dataType) =>
      g.writeStartObject()
      g.writeNumberField("h", handle(l))
      g.writeStringField("k", "Literal")
      g.writeFieldName("v"); LiteralCodec.write(g, l.value, l.dataType)
      g.writeNumberField("t", typeId(l.dataType))
      g.writeEndObject()
    case a: Alias =>
      exprIds.put(a.exprId.id, a.exprId)
      g.writeStartObject()
      g.writeNumberField("h", handle(a))
      g.writeStringField("k", "Alias")
      g.writeArrayFieldStart("p")
      expr(a.child)
      g.writeString(a.name)
      g.writeNumber(a.exprId.id)
      g.writeStartArray(); a.qualifier.foreach(g.writeString); g.writeEndArray()
      a.explicitMetadata match {
        case Some(m) => g.writeString(m.json)
        case None => g.writeNull()
      }
      g.writeStartArray(); a.nonInheritableMetadataKeys.foreach(g.writeString); g.writeEndArray()
      g.writeEndArray()
      typeAndNullability(a)
      g.writeEndObject()
    case s: InSet if LiteralCodec.supports(s.child.dataType) &&
        s.hset.forall(LiteralCodec.exact(_, s.child.dataType)) =>
      g.writeStartObject()
      g.writeNumberField("h", handle(s))
      g.writeStringField("k", "InSet")
      g.writeArrayFieldStart("p")
      expr(s.child)
      g.writeStartArray()
      s.hset.foreach(v => LiteralCodec.write(g, v, s.child.dataType))
      g.writeEndArray()
      g.writeEndArray()
      typeAndNullability(s)
      g.writeEndObject()
    case _ =>
      val codec = spec.forClass(e.getClass)
      g.writeStartObject()
      g.writeNumberField("h", handle(e))
      if (mirrored(e, codec)) {
        g.writeStringField("k", codec.name)
        args(e, codec)
      } else {
        g.writeStringField("k", "Opaque")
        g.writeStringField("cls", PlanCodec.simpleName(e.getClass))
        val shell = shellId(e)
        if (shell >= 0) g.writeNumberField("sh", shell)
        g.writeArrayFieldStart("c"); e.children.foreach(expr); g.writeEndArray()
        if (!e.deterministic) g.writeBooleanField("d", false)
        if (e.foldable) g.writeBooleanField("f", true)
        // Subquery expressions and outer references do not reference what their children do.
        val refs = e.references
        if (refs != AttributeSet(e.children.flatMap(_.references))) {
          g.writeArrayFieldStart("r"); refs.toSeq.foreach(expr); g.writeEndArray()
        }
        e match {
          case s: SubqueryExpression =>
            // The subquery plan's own output: rules must not move a subquery next to
            // attributes of the same ids, and may narrow an EXISTS plan to what it needs.
            g.writeArrayFieldStart("so"); s.plan.output.foreach(expr); g.writeEndArray()
          case _ =>
        }
      }
      typeAndNullability(e)
      g.writeEndObject()
  }

  private val shells = new java.util.HashMap[Expression, Integer]()

  /**
   * One number per meaning of an opaque expression apart from its children: two
   * expressions with the same shell and semantically equal children are semantically
   * equal (Python compares their children itself). Computed on the canonical form with
   * every child replaced by a placeholder of its type (subquery children stay: some
   * expressions insist on them), so two copies of one subquery, or one aggregate over
   * different columns, share a shell. Where placeholders do not fit, the whole canonical
   * form (a finer shell: equal ones still compare equal). -1 when neither can be built.
   */
  private def shellId(e: Expression): Int = try {
    val shell = if (e.children.isEmpty || PlanCodec.noPlaceholders.contains(e.getClass)) {
      e.canonicalized
    } else {
      try {
        e.withNewChildren(e.children.zipWithIndex.map {
          case (s: SubqueryExpression, _) => s
          case (c, i) => BoundReference(i, c.dataType, c.nullable)
        }).canonicalized
      } catch { case NonFatal(_) =>
        // Once per class: the failed copy throws from deep in the optimizer's stack, and
        // filling in that stack trace cost 0.2 ms per AggregateExpression, every call.
        PlanCodec.noPlaceholders.add(e.getClass)
        e.canonicalized
      }
    }
    var id = shells.get(shell)
    if (id == null) {
      id = shells.size
      shells.put(shell, id)
    }
    id
  } catch { case NonFatal(_) => -1 }

  private def typeAndNullability(e: Expression): Unit = {
    // Some expressions cannot tell their type (generators, unevaluable markers): leave it out.
    try g.writeNumberField("t", typeId(e.dataType)) catch { case NonFatal(_) => }
    try g.writeBooleanField("n", e.nullable) catch { case NonFatal(_) => }
    if (e.nullIntolerant) g.writeBooleanField("ni", true)
  }
}

/** Best-effort names of leaf relations, for plan text and for rule authors. */
private[sparkext] object Relations {
  import org.apache.spark.sql.catalyst.plans.physical.{Partitioning, RangePartitioning, SinglePartition}
  import org.apache.spark.sql.execution.{LogicalRDD, SparkPlan}
  import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanExec
  import org.apache.spark.sql.execution.columnar.InMemoryRelation
  import org.apache.spark.sql.execution.datasources.LogicalRelation
  import org.apache.spark.sql.execution.datasources.v2.{DataSourceV2Relation, DataSourceV2ScanRelation}
  import org.apache.spark.sql.catalyst.catalog.HiveTableRelation

  /**
   * Whether the leaf's `outputOrdering` holds across partitions, not only within each:
   * Catalyst's logical ordering does not say. Provable for a Range, and for a cached or
   * checkpointed plan whose partitioning is a single partition or a range partitioning
   * that agrees with the ordering.
   */
  def orderingIsGlobal(p: LogicalPlan, ordering: Seq[SortOrder]): Boolean = try {
    p match {
      case _: org.apache.spark.sql.catalyst.plans.logical.Range => true
      case r: InMemoryRelation => provable(physical(r.cacheBuilder.cachedPlan).outputPartitioning, ordering)
      case r: LogicalRDD => provable(r.outputPartitioning, ordering)
      case _ => false
    }
  } catch { case NonFatal(_) => false }

  /** An adaptive plan says nothing of its partitioning; the plan it settled on does. */
  private def physical(plan: SparkPlan): SparkPlan = plan match {
    case a: AdaptiveSparkPlanExec => a.executedPlan
    case other => other
  }

  private def provable(partitioning: Partitioning, ordering: Seq[SortOrder]): Boolean =
    partitioning match {
      case SinglePartition => true
      case RangePartitioning(keys, _) =>
        keys.nonEmpty && keys.zip(ordering).forall { case (k, o) => k.semanticEquals(o) }
      case other => other.numPartitions == 1
    }

  def name(p: LogicalPlan): String = try {
    p match {
      case r: LogicalRelation => r.catalogTable.map(_.identifier.unquotedString)
        .getOrElse(r.relation.toString)
      case r: DataSourceV2Relation => r.name
      case r: DataSourceV2ScanRelation => r.relation.name
      case r: InMemoryRelation => r.cacheBuilder.tableName.orNull
      case r: HiveTableRelation => r.tableMeta.identifier.unquotedString
      case _ => null
    }
  } catch { case NonFatal(_) => null }
}

/**
 * Rebuilds a Catalyst plan from Python's answer, resolving `{"ref": h}` and `{"a": i}`
 * against the tables of the [[PlanEncoder]] of the same call. New attributes get fresh
 * expression ids here: Python names them `{"nid": k}`, and every `k` maps to one new id.
 */
final class PlanRebuilder(spec: MirrorSpec, enc: PlanEncoder, types: IndexedSeq[DataType]) {
  private val fresh = new java.util.HashMap[Integer, ExprId]()

  def plan(j: JsonNode): LogicalPlan = node(j)

  private def fail(msg: String): Nothing = throw new IllegalArgumentException(msg)

  private def ref(j: JsonNode): AnyRef = {
    val h = j.asInt()
    if (h < 0 || h >= enc.handles.length) fail(s"unknown handle $h")
    enc.handles(h)
  }

  private def node(j: JsonNode): LogicalPlan = {
    val r = j.get("ref")
    if (r != null) return ref(r) match {
      case p: LogicalPlan => p
      case other => fail(s"handle ${r.asInt()} is a ${PlanCodec.simpleName(other.getClass)}, not a plan node")
    }
    j.get("k").asText() match {
      case "Opaque" =>
        val original = ref(j.get("src")).asInstanceOf[LogicalPlan]
        val children = j.get("c").asScala.map(node).toSeq
        var result =
          if (children.corresponds(original.children)(_ eq _)) original
          else original.withNewChildren(children)
        val xs = j.get("x")
        if (xs != null) {
          val newExprs = xs.asScala.map(expr).toIndexedSeq
          if (newExprs.length != original.expressions.length) {
            fail(s"${PlanCodec.simpleName(original.getClass)} has ${original.expressions.length} " +
              s"expressions, Python sent ${newExprs.length}")
          }
          var i = -1
          result = result.mapExpressions { _ => i += 1; newExprs(i) }
        }
        result
      case "Relation" =>
        fail("a Relation cannot be rebuilt with changes: return the Relation object itself")
      case name =>
        build(spec.forName(name), j).asInstanceOf[LogicalPlan]
    }
  }

  private def build(codec: ClassCodec, j: JsonNode): AnyRef = {
    val p = j.get("p")
    if (p == null || p.size() != codec.kinds.length) {
      fail(s"${codec.name} takes ${codec.kinds.length} arguments, got ${if (p == null) 0 else p.size()}")
    }
    val a = new Array[AnyRef](codec.kinds.length)
    var i = 0
    while (i < a.length) {
      a(i) = value(p.get(i), codec.kinds(i))
      i += 1
    }
    codec.build(a)
  }

  private def opt[T](j: JsonNode)(f: JsonNode => T): Option[T] =
    if (j == null || j.isNull) None else Some(f(j))

  private def seq[T](j: JsonNode)(f: JsonNode => T): Seq[T] = j.asScala.map(f).toSeq

  private def value(j: JsonNode, kind: Kind): AnyRef = kind match {
    case Kind.Expr => expr(j)
    case Kind.ExprOpt => opt(j)(expr)
    case Kind.Exprs => seq(j)(expr)
    case Kind.ExprSeqs => seq(j)(seq(_)(expr))
    case Kind.ExprPairs => seq(j)(pair => (expr(pair.get(0)), expr(pair.get(1))))
    case Kind.Plan => node(j)
    case Kind.Plans => seq(j)(node)
    case Kind.Type => dataType(j)
    case Kind.Str => j.asText()
    case Kind.StrOpt => opt(j)(_.asText())
    case Kind.Strs => seq(j)(_.asText())
    case Kind.IntK => Int.box(StrictJson.int(j, "int"))
    case Kind.IntOpt => opt(j)(StrictJson.int(_, "int"))
    case Kind.Ints => seq(j)(StrictJson.int(_, "int"))
    case Kind.LongK => Long.box(StrictJson.long(j, "long"))
    case Kind.LongOpt => opt(j)(StrictJson.long(_, "long"))
    case Kind.DoubleK => Double.box(StrictJson.number(j, "double"))
    case Kind.BoolK => Boolean.box(StrictJson.bool(j, "boolean"))
    case Kind.CharK => Char.box(j.asText().charAt(0))
    case Kind.Value => if (j == null || j.isNull) null else ref(j.get("v"))
    case Kind.ValueOpt => opt(j)(v => ref(v.get("v")))
    case Kind.Join =>
      if (j.isTextual) PlanCodec.joinTypes.getOrElse(j.asText(), fail(s"unknown join type ${j.asText()}"))
      else if (j.has("ExistenceJoin")) ExistenceJoin(expr(j.get("ExistenceJoin")).asInstanceOf[Attribute])
      else ref(j.get("v"))
    case Kind.Direction => j.asText() match {
      case "ASC" => Ascending
      case "DESC" => Descending
      case other => fail(s"unknown sort direction $other")
    }
    case Kind.Nulls => j.asText() match {
      case "FIRST" => NullsFirst
      case "LAST" => NullsLast
      case other => fail(s"unknown null ordering $other")
    }
    case Kind.AliasId => AliasIdentifier(j.get(0).asText(), seq(j.get(1))(_.asText()))
  }

  private def dataType(j: JsonNode): DataType = {
    val i = j.asInt()
    if (i < 0 || i >= types.length) fail(s"unknown type index $i")
    types(i)
  }

  private def exprId(j: JsonNode): ExprId = {
    if (j.isObject) {
      val k = Int.box(j.get("nid").asInt())
      var id = fresh.get(k)
      if (id == null) {
        id = NamedExpression.newExprId
        fresh.put(k, id)
      }
      id
    } else {
      val id = enc.exprIds.get(j.asLong())
      if (id != null) id else ExprId(j.asLong())
    }
  }

  private def strings(j: JsonNode): Seq[String] = seq(j)(_.asText())

  def expr(j: JsonNode): Expression = {
    val a = j.get("a")
    if (a != null) return enc.attributes(a.asInt())
    val r = j.get("ref")
    if (r != null) return ref(r) match {
      case e: Expression => e
      case other => fail(s"handle ${r.asInt()} is a ${PlanCodec.simpleName(other.getClass)}, not an expression")
    }
    val p = j.get("p")
    j.get("k").asText() match {
      case "AttributeReference" =>
        AttributeReference(p.get(0).asText(), dataType(p.get(1)), p.get(2).booleanValue(),
          if (p.get(3).isNull) Metadata.empty else Metadata.fromJson(p.get(3).asText()))(
          exprId(p.get(4)), strings(p.get(5)))
      case "Alias" =>
        Alias(expr(p.get(0)), p.get(1).asText())(exprId(p.get(2)), strings(p.get(3)),
          opt(p.get(4))(m => Metadata.fromJson(m.asText())), strings(p.get(5)))
      case "Literal" =>
        val dt = dataType(j.get("t"))
        Literal(LiteralCodec.read(j.get("v"), dt), dt)
      case "InSet" =>
        val child = expr(p.get(0))
        InSet(child, p.get(1).asScala.map(LiteralCodec.read(_, child.dataType)).toSet)
      case "Opaque" =>
        val original = ref(j.get("src")).asInstanceOf[Expression]
        val children = j.get("c").asScala.map(expr).toSeq
        val rebuilt =
          if (children.corresponds(original.children)(_ eq _)) original
          else original.withNewChildren(children)
        val keep = j.get("keep")
        if (keep == null) rebuilt else rebuilt match {
          case s: SubqueryExpression =>
            val ids = keep.asScala.map(_.asLong()).toSet
            s.withNewPlan(Project(s.plan.output.filter(a => ids.contains(a.exprId.id)), s.plan))
          case other => fail(s"only a subquery's plan can be narrowed, not ${PlanCodec.simpleName(other.getClass)}")
        }
      case name =>
        build(spec.forName(name), j) match {
          // A new Cast (or other time-zone-aware expression) from Python names no zone; the
          // analyzer's ResolveTimeZone has run already, so it gets the session's, as
          // Catalyst's own optimizer rules do when they build one.
          case t: TimeZoneAwareExpression if t.timeZoneId.isEmpty =>
            t.withTimeZone(SQLConf.get.sessionLocalTimeZone)
          case e => e.asInstanceOf[Expression]
        }
    }
  }
}

object PlanRebuilder {
  def types(j: JsonNode): IndexedSeq[DataType] =
    if (j == null) IndexedSeq.empty else j.asScala.map(t => PlanCodec.parseType(t.asText())).toIndexedSeq
}
