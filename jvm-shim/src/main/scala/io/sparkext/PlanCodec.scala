package io.sparkext

import java.util.concurrent.ConcurrentHashMap

import com.fasterxml.jackson.core.{JsonFactory, JsonFactoryBuilder, StreamReadConstraints}
import com.fasterxml.jackson.databind.ObjectMapper

import org.apache.spark.sql.catalyst.plans._
import org.apache.spark.sql.types.DataType

import io.sparkext.shims.SparkShim

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
    // Strings up to a whole answer: Jackson's default of 20 MB would refuse a rule's long
    // literal that Spark itself holds without complaint.
    b.streamReadConstraints(StreamReadConstraints.builder().maxNestingDepth(MaxNesting)
      .maxStringLength(PythonChannel.MaxAnswerBytes).build())
    SparkShim.limitWriteNesting(b, MaxNesting)
    b.build()
  }
  private[sparkext] val mapper = new ObjectMapper(factory)

  /** Entries per cache of types (and of class names); past it a cache starts afresh. */
  val TypeCacheSize = 4096

  // DataType.fromJson and DataType.json go through json4s (tens of microseconds a type,
  // every call): worth caching. Bounded: a long-lived driver can meet any number of
  // distinct struct types.
  private val parsedTypes = new BoundedCache[String, DataType](TypeCacheSize, DataType.fromJson)
  private val typeJsons = new BoundedCache[DataType, String](TypeCacheSize, _.json)

  def parseType(json: String): DataType = parsedTypes(json)

  def typeJson(t: DataType): String = typeJsons(t)

  /** Entries in the larger of the two type caches (for tests). */
  def cachedTypes: Int = math.max(parsedTypes.size, typeJsons.size)

  /**
   * Expression classes whose constructor refuses a placeholder child (AggregateExpression
   * wants an AggregateFunction): their shell is their whole canonical form (`shellId`).
   */
  private[sparkext] val noPlaceholders = ConcurrentHashMap.newKeySet[Class[_]]()

  private val simpleNames = new BoundedCache[Class[_], String](TypeCacheSize, c =>
    c.getName.substring(c.getName.lastIndexOf('.') + 1).stripSuffix("$"))

  def simpleName(c: Class[_]): String = simpleNames(c)

  val joinTypes: Map[String, JoinType] = Map(
    "Inner" -> Inner, "Cross" -> Cross, "LeftOuter" -> LeftOuter, "RightOuter" -> RightOuter,
    "FullOuter" -> FullOuter, "LeftSemi" -> LeftSemi, "LeftAnti" -> LeftAnti) ++
    SparkShim.extraJoinTypes
}

/**
 * A cache that computes missing entries and starts afresh past `max` entries: lock-free
 * reads like the unbounded map it replaces, and no growth without limit.
 */
final class BoundedCache[K, V <: AnyRef](max: Int, compute: K => V) {
  private val map = new ConcurrentHashMap[K, V]()

  def apply(k: K): V = {
    var v = map.get(k)
    if (v == null) {
      v = compute(k)
      if (map.size >= max) map.clear()
      map.put(k, v)
    }
    v
  }

  def size: Int = map.size
}
