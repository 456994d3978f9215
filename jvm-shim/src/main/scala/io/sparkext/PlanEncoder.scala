package io.sparkext

import java.io.ByteArrayOutputStream
import java.util.IdentityHashMap

import scala.collection.mutable.ArrayBuffer
import scala.util.control.NonFatal

import com.fasterxml.jackson.core.{JsonEncoding, JsonGenerator}
import com.fasterxml.jackson.core.io.SerializedString

import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types._

import io.sparkext.shims.SparkShim

/**
 * What a [[PlanRebuilder]] may read of one call's encoding: the objects Python refers to
 * by handle (`{"ref": h}`), the attribute table (`{"a": i}`) and the expression ids seen.
 */
trait EncodedCall {
  /** The object encoded under handle `h`, or null. */
  def objectAt(h: Int): AnyRef
  /** Entry `i` of the attribute table, or null. */
  def attributeAt(i: Int): AttributeReference
  /** The plan's ExprId of this number (Python sends numbers back), or null. */
  def exprId(id: Long): ExprId
  /** The files listed for a relation of the plan in this call (rules that needed files). */
  def listedFiles(leaf: LogicalPlan): Option[RelationFacts.Listing] = None
}

object PlanEncoder {
  /**
   * Every field a request's header may have: `encode` writes `v`, `tz`, `tz_breaks`,
   * `topk` and `root`, its caller the call's own (PythonRules: `id`, `pos`, `excluded`,
   * `catalyst_excluded`, `trace`; Guards: `id`, `pos`). The package declares the same
   * (sparkext/wire.py `HEADER_FIELDS`): the handshake compares them, and the package
   * refuses a request whose header has another.
   */
  val HeaderFields: Seq[String] = Seq("v", "id", "pos", "tz", "tz_breaks", "topk", "root",
    "excluded", "catalyst_excluded", "trace")
}

/**
 * Encodes one plan for one call. Not thread-safe: one encoder per call, with its own
 * handle table; after `encode`, [[call]] is what the rebuilder resolves references with.
 * `facts`: the relations' facts, for calls whose rules declared needs ([[RelationFacts]]).
 */
final class PlanEncoder(spec: MirrorSpec, facts: RelationFacts.ForPlan = null) {
  private val handles = new ArrayBuffer[AnyRef](256)
  private val attributes = new ArrayBuffer[AttributeReference](64)
  private val exprIds = new java.util.HashMap[java.lang.Long, ExprId]()

  val call: EncodedCall = new EncodedCall {
    def objectAt(h: Int): AnyRef = if (h >= 0 && h < handles.length) handles(h) else null
    def attributeAt(i: Int): AttributeReference =
      if (i >= 0 && i < attributes.length) attributes(i) else null
    def exprId(id: Long): ExprId = exprIds.get(id)
    override def listedFiles(leaf: LogicalPlan): Option[RelationFacts.Listing] =
      if (facts == null) None else facts.listed(leaf)
  }
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
   * Python can hand rules a root of the right class before that. `more`, when given, writes
   * fields of its own into the body after `plan` (with [[writePlan]] for more plans), before
   * the attribute and type tables, which then hold what it wrote too.
   */
  def encode(plan: LogicalPlan, header: JsonGenerator => Unit,
      more: JsonGenerator => Unit = null): Array[Byte] = {
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
    // The limit below which Spark's planner (SpecialLimits) makes a Limit over a global
    // Sort one TakeOrderedAndProjectExec, whose single partition is in the sort's order:
    // the ordering analysis calls such a limit order-keeping only below it.
    g.writeNumberField("topk", SQLConf.get.topKSortFallbackThreshold)
    g.writeObjectFieldStart("root")
    g.writeStringField("k", nodeKind(plan, codecOf(plan)))
    g.writeNumberField("h", handles.length) // the handle node(plan) gives it
    g.writeEndObject()
    g.writeEndObject()

    g.writeStartObject() // after the root-value separator: a newline
    g.writeFieldName("plan")
    node(plan)
    if (more != null) more(g)
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

  /** Writes another plan into the body, in the same tables (for `encode`'s `more`). */
  def writePlan(p: LogicalPlan): Unit = node(p)

  /** Handles given so far: objects `0 until handleCount` are `call.objectAt`. */
  def handleCount: Int = handles.length

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

  /** What an argument kind writes its values with: this call's generator and tables. */
  private val writer: KindWriter = new KindWriter {
    def gen: JsonGenerator = g
    def expr(e: Expression): Unit = PlanEncoder.this.expr(e)
    def node(p: LogicalPlan): Unit = PlanEncoder.this.node(p)
    def typeId(t: DataType): Int = PlanEncoder.this.typeId(t)
    def opaqueValue(x: AnyRef): Unit = PlanEncoder.this.opaqueValue(x)
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
      // Only where a rule of the call declared needs: otherwise encoded as ever.
      if (facts != null) facts.write(g, p)
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
      codec.kinds(i).write(writer, p.productElement(i))
      i += 1
    }
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
        e match {
          case a: org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression if a.isDistinct =>
            g.writeBooleanField("dist", true)  // count(DISTINCT x) is not count(x)
          case _ =>
        }
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
    if (SparkShim.nullIntolerant(e)) g.writeBooleanField("ni", true)
  }
}
