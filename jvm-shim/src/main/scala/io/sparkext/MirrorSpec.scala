package io.sparkext

import java.lang.reflect.{Constructor, Modifier}

import scala.collection.mutable
import scala.language.existentials
import scala.util.control.NonFatal

import com.fasterxml.jackson.databind.JsonNode

import org.apache.spark.sql.catalyst.AliasIdentifier
import org.apache.spark.sql.catalyst.expressions.{Expression, NullOrdering, SortDirection}
import org.apache.spark.sql.catalyst.plans.JoinType
import org.apache.spark.sql.catalyst.plans.logical.{JoinHint, LogicalPlan}
import org.apache.spark.sql.types.DataType

/**
 * The kind of one constructor argument of a mirrored Catalyst case class: how it travels on
 * the wire (docs/wire-format.md, "Argument kinds"). Python declares the kinds of every class
 * it mirrors; the codes here and in `sparkext/codec.py` are the same strings.
 */
sealed abstract class Kind(val code: String, val erasure: Class[_])

object Kind {
  private val ExprC = classOf[Expression]
  private val PlanC = classOf[LogicalPlan]
  private val SeqC = classOf[scala.collection.Seq[_]]
  private val OptC = classOf[Option[_]]

  case object Expr extends Kind("e", ExprC)
  case object ExprOpt extends Kind("e?", OptC)
  case object Exprs extends Kind("es", SeqC)
  case object ExprSeqs extends Kind("ess", SeqC)
  case object ExprPairs extends Kind("eps", SeqC)
  case object Plan extends Kind("p", PlanC)
  case object Plans extends Kind("ps", SeqC)
  case object Type extends Kind("t", classOf[DataType])
  case object Str extends Kind("s", classOf[String])
  case object StrOpt extends Kind("s?", OptC)
  case object Strs extends Kind("ss", SeqC)
  case object IntK extends Kind("i", java.lang.Integer.TYPE)
  case object IntOpt extends Kind("i?", OptC)
  case object Ints extends Kind("is", SeqC)
  case object LongK extends Kind("l", java.lang.Long.TYPE)
  case object LongOpt extends Kind("l?", OptC)
  case object DoubleK extends Kind("d", java.lang.Double.TYPE)
  case object BoolK extends Kind("b", java.lang.Boolean.TYPE)
  case object CharK extends Kind("c", java.lang.Character.TYPE)
  /** Any other value: kept on the JVM, referenced by handle, shown to Python as text. */
  case object Value extends Kind("x", classOf[Object])
  case object ValueOpt extends Kind("x?", OptC)
  case object Join extends Kind("jt", classOf[JoinType])
  case object Direction extends Kind("dir", classOf[SortDirection])
  case object Nulls extends Kind("no", classOf[NullOrdering])
  case object AliasId extends Kind("aid", classOf[AliasIdentifier])

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
      n -> cs.find(c => n != arity || c.getParameterTypes.zip(kinds).forall {
        case (p, k) => Kind.fits(k, p)
      }).getOrElse(cs.head)
    }

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
