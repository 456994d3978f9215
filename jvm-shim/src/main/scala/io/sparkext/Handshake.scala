package io.sparkext

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}

/**
 * What the Python package and this jar must agree on, compared once when `sparkext.enable`
 * registers rules: the sparkext version both were built from, the wire version, the
 * argument kinds the reflective builders know, the request header's fields, the unchanged
 * answer's form, and the largest answer. A package and a jar from different builds then fail there, with one
 * error naming both sides' values, instead of warning on every query. The package's half
 * is `sparkext.wire.handshake()`.
 */
object Handshake {
  private val mapper = new ObjectMapper()

  /**
   * What the build wrote into the jar (tools/build_jar.py, or build.sbt):
   * `version` (of sparkext), `spark` (line), `scala`, `built_with` (Spark release).
   */
  lazy val build: Map[String, String] = {
    val props = new java.util.Properties()
    val in = getClass.getResourceAsStream("/io/sparkext/shim.properties")
    if (in != null) try props.load(in) finally in.close()
    props.asScala.toMap
  }

  /** This jar's side, in the package's field names. */
  def ours: Map[String, Any] = Map(
    "package_version" -> build.getOrElse("version", "unknown"),
    "version" -> PlanCodec.Version,
    "kinds" -> Kind.all.map(_.code).sorted,
    "header" -> PlanEncoder.HeaderFields.sorted,
    "unchanged" -> BridgeCall.UnchangedWithStats,
    "max_answer_bytes" -> PythonChannel.MaxAnswerBytes)

  /** [[ours]] as JSON (tests compare it with the package's through py4j). */
  def json: String = mapper.writeValueAsString(ours.map {
    case (k, v: Seq[_]) => k -> v.asJava
    case other => other
  }.asJava)

  /** Throws, naming both sides' values, when the package's handshake differs from ours. */
  def check(theirs: JsonNode): Unit = {
    val jar = mapper.readTree(json)
    def sorted(j: JsonNode): JsonNode =
      if (j != null && j.isArray) mapper.valueToTree(j.asScala.map(_.asText()).toSeq.sorted.asJava) else j
    val differences = ours.keys.toSeq.sorted.flatMap { field =>
      val package_ = Option(theirs).map(t => sorted(t.get(field))).orNull
      if (package_ == jar.get(field)) None
      else Some(s"$field: the package has ${Option(package_).getOrElse("nothing")}, the jar ${jar.get(field)}")
    }
    if (differences.nonEmpty) {
      throw new SparkextException(
        s"the sparkext Python package and the jar on this session's classpath differ " +
          s"(${differences.mkString("; ")}). Use the jar the package carries " +
          "(sparkext.configure(SparkSession.builder), or --jars \"$(python -m sparkext jar)\").")
    }
  }
}
