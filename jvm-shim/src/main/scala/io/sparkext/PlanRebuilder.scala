package io.sparkext

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.JsonNode

import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.plans.logical.{LocalRelation, LogicalPlan, Project}
import org.apache.spark.sql.catalyst.trees.TreeNode
import org.apache.spark.sql.execution.datasources.LogicalRelation
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types._

/**
 * Rebuilds a Catalyst plan from Python's answer, resolving `{"ref": h}` and `{"a": i}`
 * against the [[EncodedCall]] of the same call (nothing else of the encoder). New
 * attributes get fresh expression ids here, in the rebuilder's own table: Python names
 * them `{"nid": k}`, and every `k` maps to one new id.
 */
final class PlanRebuilder(spec: MirrorSpec, call: EncodedCall, types: IndexedSeq[DataType]) {
  private val fresh = new java.util.HashMap[Integer, ExprId]()

  def plan(j: JsonNode): LogicalPlan = node(j)

  private def fail(msg: String): Nothing = throw new IllegalArgumentException(msg)

  private def ref(j: JsonNode): AnyRef = {
    val h = j.asInt()
    val o = call.objectAt(h)
    if (o == null) fail(s"unknown handle $h")
    o
  }

  private def node(j: JsonNode): LogicalPlan = {
    val r = j.get("ref")
    if (r != null) return ref(r) match {
      case p: LogicalPlan => p
      case other => fail(s"handle ${r.asInt()} is a ${PlanCodec.simpleName(other.getClass)}, not a plan node")
    }
    j.get("k").asText() match {
      case "Opaque" =>
        var result = opaque[LogicalPlan](j, node)
        val xs = j.get("x")
        if (xs != null) {
          val newExprs = xs.asScala.map(expr).toIndexedSeq
          if (newExprs.length != result.expressions.length) {
            fail(s"${PlanCodec.simpleName(result.getClass)} has ${result.expressions.length} " +
              s"expressions, Python sent ${newExprs.length}")
          }
          var i = -1
          result = result.mapExpressions { _ => i += 1; newExprs(i) }
        }
        result
      case "Relation" if j.has("keep") =>
        // A relation reading only some of the files listed for it (Relation.reading_only).
        ref(j.get("src")) match {
          case l: LogicalRelation =>
            RelationFacts.restricted(l, call.listedFiles(l), j.get("keep").asScala.map(_.asText()).toSet)
          case other => fail(s"only a file source relation can read some of its files, not ${PlanCodec.simpleName(other.getClass)}")
        }
      case "Relation" =>
        fail("a Relation cannot be rebuilt with changes: return the Relation object itself")
      case "LocalRelation" =>
        // Rows a rule computed (sparkext.plan.LocalRows), each value read as its column's type.
        val output = j.get("out").asScala.toSeq.map(expr).map {
          case a: Attribute => a
          case other => fail(s"a LocalRelation's output must be attributes, not ${other.sql}")
        }
        val rows = j.get("rows").asScala.toSeq.map { r =>
          if (r.size != output.length) fail(s"a row of ${r.size} values for ${output.length} columns")
          InternalRow.fromSeq(r.asScala.toSeq.zip(output).map { case (v, a) => LiteralCodec.read(v, a.dataType) })
        }
        LocalRelation(output, rows)
      case name =>
        build(spec.forName(name), j).asInstanceOf[LogicalPlan]
    }
  }

  /** An opaque object with the children Python sent: the original itself when they are its own. */
  private def opaque[T <: TreeNode[T]](j: JsonNode, child: JsonNode => T): T = {
    val original = ref(j.get("src")).asInstanceOf[T]
    val children = j.get("c").asScala.map(child).toSeq
    if (children.corresponds(original.children)(_ eq _)) original else original.withNewChildren(children)
  }

  private def build(codec: ClassCodec, j: JsonNode): AnyRef = {
    val p = j.get("p")
    if (p == null || p.size() != codec.kinds.length) {
      fail(s"${codec.name} takes ${codec.kinds.length} arguments, got ${if (p == null) 0 else p.size()}")
    }
    val a = new Array[AnyRef](codec.kinds.length)
    var i = 0
    while (i < a.length) {
      a(i) = codec.kinds(i).read(reader, p.get(i))
      i += 1
    }
    codec.build(a)
  }

  private def opt[T](j: JsonNode)(f: JsonNode => T): Option[T] =
    if (j == null || j.isNull) None else Some(f(j))

  /** What an argument kind reads its values with: this call's tables. */
  private val reader: KindReader = new KindReader {
    def expr(j: JsonNode): Expression = PlanRebuilder.this.expr(j)
    def node(j: JsonNode): LogicalPlan = PlanRebuilder.this.node(j)
    def dataType(j: JsonNode): DataType = PlanRebuilder.this.dataType(j)
    def ref(j: JsonNode): AnyRef = PlanRebuilder.this.ref(j)
    def fail(msg: String): Nothing = PlanRebuilder.this.fail(msg)
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
      val id = call.exprId(j.asLong())
      if (id != null) id else ExprId(j.asLong())
    }
  }

  private def strings(j: JsonNode): Seq[String] = Kind.many(reader, j, Item.Str)

  def expr(j: JsonNode): Expression = {
    val a = j.get("a")
    if (a != null) return Option(call.attributeAt(a.asInt())).getOrElse(fail(s"unknown attribute ${a.asInt()}"))
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
        val rebuilt = opaque[Expression](j, expr)
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
