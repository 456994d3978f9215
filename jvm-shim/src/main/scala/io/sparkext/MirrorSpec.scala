package io.sparkext

import java.lang.reflect.{Constructor, Modifier}

import scala.collection.mutable
import scala.jdk.CollectionConverters._
import scala.language.existentials
import scala.util.control.NonFatal

import com.fasterxml.jackson.core.JsonGenerator
import com.fasterxml.jackson.databind.JsonNode

import org.apache.spark.sql.catalyst.AliasIdentifier
import org.apache.spark.sql.catalyst.expressions.{Ascending, Attribute, Descending, Expression, NullOrdering, NullsFirst, NullsLast, SortDirection}
import org.apache.spark.sql.catalyst.plans.{ExistenceJoin, JoinType}
import org.apache.spark.sql.catalyst.plans.logical.{JoinHint, LogicalPlan}
import org.apache.spark.sql.types.DataType

/**
 * The item-level writes an argument [[Kind]] is made of; [[PlanEncoder]] implements them
 * for one call. A kind composes them with its shape (one, option, sequence...).
 */
trait KindWriter {
  def gen: JsonGenerator
  def expr(e: Expression): Unit
  def node(p: LogicalPlan): Unit
  /** The index of a type in the call's type table. */
  def typeId(t: DataType): Int
  /** A value kept on the JVM, sent as a handle and its text. */
  def opaqueValue(x: AnyRef): Unit
}

/** The item-level reads an argument [[Kind]] is made of; [[PlanRebuilder]] implements them. */
trait KindReader {
  def expr(j: JsonNode): Expression
  def node(j: JsonNode): LogicalPlan
  def dataType(j: JsonNode): DataType
  /** The object of a handle this call encoded. */
  def ref(j: JsonNode): AnyRef
  def fail(msg: String): Nothing
}

/**
 * What one argument kind carries, without its shape: how one value is written and read.
 * Mirrors `sparkext/kinds.py`, where a kind is likewise a shape around an item.
 */
sealed abstract class Item {
  def write(w: KindWriter, v: Any): Unit
  def read(r: KindReader, j: JsonNode): AnyRef
}

object Item {
  /** One of two Catalyst singletons, each travelling as its name. */
  sealed abstract class OneOfTwo(what: String, a: AnyRef, aName: String, b: AnyRef, bName: String)
      extends Item {
    def write(w: KindWriter, v: Any): Unit = w.gen.writeString(if (v == a) aName else bName)
    def read(r: KindReader, j: JsonNode): AnyRef = {
      val name = j.asText()
      if (name == aName) a else if (name == bName) b else r.fail(s"unknown $what $name")
    }
  }

  object Expr extends Item {
    def write(w: KindWriter, v: Any): Unit = w.expr(v.asInstanceOf[Expression])
    def read(r: KindReader, j: JsonNode): AnyRef = r.expr(j)
  }
  object Plan extends Item {
    def write(w: KindWriter, v: Any): Unit = w.node(v.asInstanceOf[LogicalPlan])
    def read(r: KindReader, j: JsonNode): AnyRef = r.node(j)
  }
  object Type extends Item {
    def write(w: KindWriter, v: Any): Unit = w.gen.writeNumber(w.typeId(v.asInstanceOf[DataType]))
    def read(r: KindReader, j: JsonNode): AnyRef = r.dataType(j)
  }
  object Str extends Item {
    def write(w: KindWriter, v: Any): Unit = w.gen.writeString(v.asInstanceOf[String])
    def read(r: KindReader, j: JsonNode): AnyRef = j.asText()
  }
  object IntI extends Item {
    def write(w: KindWriter, v: Any): Unit = w.gen.writeNumber(v.asInstanceOf[Int])
    def read(r: KindReader, j: JsonNode): AnyRef = Int.box(StrictJson.int(j, "int"))
  }
  object LongI extends Item {
    def write(w: KindWriter, v: Any): Unit = w.gen.writeNumber(v.asInstanceOf[Long])
    def read(r: KindReader, j: JsonNode): AnyRef = Long.box(StrictJson.long(j, "long"))
  }
  object DoubleI extends Item {
    def write(w: KindWriter, v: Any): Unit = w.gen.writeNumber(v.asInstanceOf[Double])
    def read(r: KindReader, j: JsonNode): AnyRef = Double.box(StrictJson.number(j, "double"))
  }
  object BoolI extends Item {
    def write(w: KindWriter, v: Any): Unit = w.gen.writeBoolean(v.asInstanceOf[Boolean])
    def read(r: KindReader, j: JsonNode): AnyRef = Boolean.box(StrictJson.bool(j, "boolean"))
  }
  object CharI extends Item {
    def write(w: KindWriter, v: Any): Unit = w.gen.writeString(v.asInstanceOf[Char].toString)
    def read(r: KindReader, j: JsonNode): AnyRef = Char.box(j.asText().charAt(0))
  }
  object Value extends Item {
    def write(w: KindWriter, v: Any): Unit = w.opaqueValue(v.asInstanceOf[AnyRef])
    def read(r: KindReader, j: JsonNode): AnyRef = r.ref(j.get("v"))
  }
  /** A join type by name; ExistenceJoin carries its attribute; any other travels by handle. */
  object Join extends Item {
    def write(w: KindWriter, v: Any): Unit = v match {
      case ExistenceJoin(exists) =>
        val g = w.gen
        g.writeStartObject(); g.writeFieldName("ExistenceJoin"); w.expr(exists); g.writeEndObject()
      case jt: JoinType if PlanCodec.joinTypes.get(PlanCodec.simpleName(jt.getClass)).contains(jt) =>
        w.gen.writeString(PlanCodec.simpleName(jt.getClass))
      case other => w.opaqueValue(other.asInstanceOf[AnyRef])
    }
    def read(r: KindReader, j: JsonNode): AnyRef =
      if (j.isTextual) PlanCodec.joinTypes.getOrElse(j.asText(), r.fail(s"unknown join type ${j.asText()}"))
      else if (j.has("ExistenceJoin")) ExistenceJoin(r.expr(j.get("ExistenceJoin")).asInstanceOf[Attribute])
      else r.ref(j.get("v"))
  }
  object Direction extends OneOfTwo("sort direction", Ascending, "ASC", Descending, "DESC")
  object Nulls extends OneOfTwo("null ordering", NullsFirst, "FIRST", NullsLast, "LAST")
  object AliasId extends Item {
    def write(w: KindWriter, v: Any): Unit = {
      val a = v.asInstanceOf[AliasIdentifier]
      val g = w.gen
      g.writeStartArray(); g.writeString(a.name)
      g.writeStartArray(); a.qualifier.foreach(g.writeString); g.writeEndArray()
      g.writeEndArray()
    }
    def read(r: KindReader, j: JsonNode): AnyRef =
      AliasIdentifier(j.get(0).asText(), Kind.many(r, j.get(1), Str))
  }
}

/**
 * The kind of one constructor argument of a mirrored Catalyst case class: how it travels on
 * the wire (docs/wire-format.md, "Argument kinds"). Python declares the kinds of every class
 * it mirrors; the codes here and in `sparkext/kinds.py` are the same strings. Each kind
 * writes and reads its own values, so adding one is one declaration below: a shape
 * ([[Kind.One]], [[Kind.Opt]], [[Kind.Many]]...) around an [[Item]].
 */
sealed abstract class Kind(val code: String, val erasure: Class[_]) {
  def write(w: KindWriter, v: Any): Unit
  def read(r: KindReader, j: JsonNode): AnyRef
}

object Kind {
  private val ExprC = classOf[Expression]
  private val PlanC = classOf[LogicalPlan]
  private val SeqC = classOf[scala.collection.Seq[_]]
  private val OptC = classOf[Option[_]]

  // ---- shapes --------------------------------------------------------------------------
  // Loops rather than foreach: the encoder is on every query's path, and a closure per
  // value would be an allocation per value.

  /** One value. */
  sealed abstract class One(code: String, item: Item, erasure: Class[_]) extends Kind(code, erasure) {
    def write(w: KindWriter, v: Any): Unit = item.write(w, v)
    def read(r: KindReader, j: JsonNode): AnyRef = item.read(r, j)
  }

  /** An Option: the value, or JSON null for None. */
  sealed abstract class Opt(code: String, item: Item) extends Kind(code, OptC) {
    def write(w: KindWriter, v: Any): Unit = v.asInstanceOf[Option[Any]] match {
      case Some(x) => item.write(w, x)
      case None => w.gen.writeNull()
    }
    def read(r: KindReader, j: JsonNode): AnyRef =
      if (j == null || j.isNull) None else Some(item.read(r, j))
  }

  /** A Seq: a JSON array of values. */
  sealed abstract class Many(code: String, item: Item) extends Kind(code, SeqC) {
    def write(w: KindWriter, v: Any): Unit = writeMany(w, v, item)
    def read(r: KindReader, j: JsonNode): AnyRef = many(r, j, item)
  }

  /** A Seq of Seqs: an array of arrays. */
  sealed abstract class Nested(code: String, item: Item) extends Kind(code, SeqC) {
    def write(w: KindWriter, v: Any): Unit = {
      val g = w.gen
      g.writeStartArray()
      val it = v.asInstanceOf[Seq[Any]].iterator
      while (it.hasNext) writeMany(w, it.next(), item)
      g.writeEndArray()
    }
    def read(r: KindReader, j: JsonNode): AnyRef = j.asScala.map(many(r, _, item)).toSeq
  }

  /** A Seq of pairs: an array of two-element arrays. */
  sealed abstract class Pairs(code: String, item: Item) extends Kind(code, SeqC) {
    def write(w: KindWriter, v: Any): Unit = {
      val g = w.gen
      g.writeStartArray()
      val it = v.asInstanceOf[Seq[(Any, Any)]].iterator
      while (it.hasNext) {
        val (a, b) = it.next()
        g.writeStartArray(); item.write(w, a); item.write(w, b); g.writeEndArray()
      }
      g.writeEndArray()
    }
    def read(r: KindReader, j: JsonNode): AnyRef =
      j.asScala.map(pair => (item.read(r, pair.get(0)), item.read(r, pair.get(1)))).toSeq
  }

  private def writeMany(w: KindWriter, v: Any, item: Item): Unit = {
    val g = w.gen
    g.writeStartArray()
    val it = v.asInstanceOf[Seq[Any]].iterator
    while (it.hasNext) item.write(w, it.next())
    g.writeEndArray()
  }

  private[sparkext] def many[T](r: KindReader, j: JsonNode, item: Item): Seq[T] =
    j.asScala.map(item.read(r, _).asInstanceOf[T]).toSeq

  // ---- the kinds -----------------------------------------------------------------------

  case object Expr extends One("e", Item.Expr, ExprC)
  case object ExprOpt extends Opt("e?", Item.Expr)
  case object Exprs extends Many("es", Item.Expr)
  case object ExprSeqs extends Nested("ess", Item.Expr)
  case object ExprPairs extends Pairs("eps", Item.Expr)
  case object Plan extends One("p", Item.Plan, PlanC)
  case object Plans extends Many("ps", Item.Plan)
  case object Type extends One("t", Item.Type, classOf[DataType])
  case object Str extends One("s", Item.Str, classOf[String])
  case object StrOpt extends Opt("s?", Item.Str)
  case object Strs extends Many("ss", Item.Str)
  case object IntK extends One("i", Item.IntI, java.lang.Integer.TYPE)
  case object IntOpt extends Opt("i?", Item.IntI)
  case object Ints extends Many("is", Item.IntI)
  case object LongK extends One("l", Item.LongI, java.lang.Long.TYPE)
  case object LongOpt extends Opt("l?", Item.LongI)
  case object DoubleK extends One("d", Item.DoubleI, java.lang.Double.TYPE)
  case object BoolK extends One("b", Item.BoolI, java.lang.Boolean.TYPE)
  case object CharK extends One("c", Item.CharI, java.lang.Character.TYPE)
  /**
   * Any other value: kept on the JVM, referenced by handle, shown to Python as text. A JSON
   * null reads as null, which [[ClassCodec.build]] takes for Catalyst's default.
   */
  case object Value extends One("x", Item.Value, classOf[Object]) {
    override def read(r: KindReader, j: JsonNode): AnyRef =
      if (j == null || j.isNull) null else super.read(r, j)
  }
  case object ValueOpt extends Opt("x?", Item.Value)
  case object Join extends One("jt", Item.Join, classOf[JoinType])
  case object Direction extends One("dir", Item.Direction, classOf[SortDirection])
  case object Nulls extends One("no", Item.Nulls, classOf[NullOrdering])
  case object AliasId extends One("aid", Item.AliasId, classOf[AliasIdentifier])

  val all: Seq[Kind] = Seq(Expr, ExprOpt, Exprs, ExprSeqs, ExprPairs, Plan, Plans, Type, Str,
    StrOpt, Strs, IntK, IntOpt, Ints, LongK, LongOpt, DoubleK, BoolK, CharK, Value, ValueOpt,
    Join, Direction, Nulls, AliasId)
  private val byCode = all.map(k => k.code -> k).toMap

  def parse(code: String): Kind = byCode.getOrElse(code,
    throw new IllegalArgumentException(s"unknown argument kind '$code'"))

  /** Whether a constructor parameter of type `param` can take arguments of this kind. */
  def fits(k: Kind, param: Class[_]): Boolean = k match {
    // Scala traits over Expression (Generator, NamedExpression...) are JVM interfaces.
    case Expr => ExprC.isAssignableFrom(param) || param.isAssignableFrom(ExprC) || param.isInterface
    case Plan => PlanC.isAssignableFrom(param) || param.isAssignableFrom(PlanC) || param.isInterface
    case Value => true
    case _ => param.isAssignableFrom(k.erasure) || k.erasure.isAssignableFrom(param)
  }
}

/** How to build one mirrored case class from its arguments. */
final class ClassCodec(val name: String, val clazz: Class[_], val kinds: Array[Kind]) {
  private val arity = kinds.length

  private val constructors: Map[Int, Constructor[_]] =
    clazz.getConstructors.toSeq.groupBy(_.getParameterCount).map { case (n, cs) =>
      // Several constructors of one arity: take the one whose parameters fit the kinds.
      val chosen: Constructor[_] = cs.find(c => n != arity || c.getParameterTypes.zip(kinds).forall {
        case (p, k) => Kind.fits(k, p)
      }).getOrElse(cs.head)
      n -> chosen
    }.toMap // Scala 2.12: mapping a Map with a case-lambda yields an Iterable

  private val full: Constructor[_] = constructors.getOrElse(arity, null)

  /**
   * The default of argument N: Scala's static `$lessinit$greater$default$N`, or the empty
   * value of a type Catalyst builds without one (a join without hints).
   */
  private val defaults: Array[() => AnyRef] = Array.tabulate(arity) { i =>
    val byType: () => AnyRef =
      if (full != null && full.getParameterTypes()(i) == classOf[JoinHint]) () => JoinHint.NONE
      else null
    try {
      val m = clazz.getMethod("$lessinit$greater$default$" + (i + 1))
      if (Modifier.isStatic(m.getModifiers)) () => m.invoke(null) else byType
    } catch { case _: NoSuchMethodException => byType }
  }

  /** Why this class cannot be mirrored on this Spark, or null when it can. */
  def problem: String = {
    if (full == null) {
      s"$clazz has no public constructor with $arity arguments " +
        s"(it has ${constructors.keys.toSeq.sorted.mkString(", ")})"
    } else {
      val bad = full.getParameterTypes.zip(kinds).zipWithIndex.collect {
        case ((p, k), i) if !Kind.fits(k, p) => s"argument ${i + 1} is ${p.getName}, not '${k.code}'"
      }
      if (bad.isEmpty) null else bad.mkString("; ")
    }
  }

  /**
   * Builds an instance. A null for a `Value` argument means "Catalyst's default": the
   * constructor's default value, or else the constructor without that trailing argument
   * (Scala auxiliary constructors read such defaults from SQLConf, as Catalyst does).
   */
  def build(args: Array[AnyRef]): AnyRef = {
    val firstMissing = (0 until arity).indexWhere { i =>
      args(i) == null && kinds(i) == Kind.Value && defaults(i) == null
    }
    val upTo = if (firstMissing < 0) arity else firstMissing
    for (i <- 0 until upTo if args(i) == null && kinds(i) == Kind.Value) {
      args(i) = defaults(i)()
    }
    val (ctor, used): (Constructor[_], Array[AnyRef]) = if (firstMissing < 0) (full, args) else {
      val shorter = constructors.getOrElse(firstMissing, null)
      if (shorter == null || args.drop(firstMissing).exists(_ != null)) {
        throw new IllegalArgumentException(
          s"$name needs a value for argument ${firstMissing + 1}: Catalyst has no default for it")
      }
      (shorter, args.take(firstMissing))
    }
    try ctor.newInstance(used: _*).asInstanceOf[AnyRef] catch {
      case e: java.lang.reflect.InvocationTargetException if e.getCause != null =>
        throw new IllegalArgumentException(s"cannot build $name: ${e.getCause.getMessage}", e.getCause)
    }
  }
}

/** The Catalyst classes Python mirrors, by class (for encoding) and by wire name (for rebuilding). */
final class MirrorSpec(codecs: Seq[ClassCodec], val special: Set[String]) {
  private val byClass: java.util.HashMap[Class[_], ClassCodec] = {
    val m = new java.util.HashMap[Class[_], ClassCodec]()
    codecs.foreach(c => m.put(c.clazz, c))
    m
  }
  private val byName: Map[String, ClassCodec] = codecs.map(c => c.name -> c).toMap

  def forClass(c: Class[_]): ClassCodec = byClass.get(c)

  def forName(name: String): ClassCodec = byName.getOrElse(name,
    throw new IllegalArgumentException(s"'$name' is not a Catalyst class sparkext can build"))

  def names: Set[String] = byName.keySet ++ special
}

object MirrorSpec {
  /**
   * Compiles the mirror Python declares. Classes missing from this Spark, or whose
   * constructor no longer matches, are dropped (they then travel as opaque nodes) and
   * reported back with the reason.
   */
  def compile(spec: JsonNode): (MirrorSpec, Seq[(String, String)]) = {
    val codecs = mutable.ArrayBuffer[ClassCodec]()
    val dropped = mutable.ArrayBuffer[(String, String)]()
    val special = mutable.Set[String]()
    if (spec != null) spec.forEach { entry =>
      val name = entry.get("name").asText()
      val kindsNode = entry.get("kinds")
      // No kinds: a class whose wire form is written by hand on both sides
      // (attributes, literals, aliases, InSet, relations, opaque nodes).
      if (kindsNode == null || kindsNode.isNull) {
        special += name
      } else try {
        val clazz = Class.forName(entry.get("cls").asText(), false, loader)
        val kinds = Array.newBuilder[Kind]
        kindsNode.forEach(k => kinds += Kind.parse(k.asText()))
        val codec = new ClassCodec(name, clazz, kinds.result())
        val problem = codec.problem
        if (problem == null) codecs += codec else dropped += (name -> problem)
      } catch {
        case _: ClassNotFoundException =>
          dropped += (name -> s"${entry.get("cls").asText()} is not in this Spark")
        case NonFatal(e) => dropped += (name -> e.toString)
      }
    }
    (new MirrorSpec(codecs.toSeq, special.toSet), dropped.toSeq)
  }

  private def loader: ClassLoader = {
    val l = Thread.currentThread().getContextClassLoader
    if (l != null) l else getClass.getClassLoader
  }
}
