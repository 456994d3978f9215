package org.apache.spark.sql.sparkext

import java.util.concurrent.ConcurrentHashMap

import org.apache.spark.SparkConf
import org.apache.spark.internal.config.{ConfigEntry, OptionalConfigEntry}
import org.apache.spark.network.util.ByteUnit
import org.apache.spark.sql.internal.SQLConf

/**
 * Every `spark.sparkext.*` key, as a SQL config entry registered with Spark the way Spark
 * registers its own (`SQLConf.buildConf`): with a type, a default and a doc, so `SET -v`
 * lists it, and `SET` / `spark.conf.set` / `--conf` refuse a bad value with Spark's own
 * error, naming the key and what it accepts.
 *
 * It lives in a package of Spark's because `ConfigBuilder` and `ConfigEntry` are
 * `private[spark]` (Delta's `DeltaSQLConf` does the same); the shim's files import it as
 * `Conf` and read the values through the readers here, never by key. It also makes
 * the warnings about keys and rule names that mean nothing. The entries register when this object
 * is first touched: `SparkextExtensions` touches it when the extension loads, before any
 * session of the extension merges its Spark conf into its SQL conf.
 *
 * A bad value is refused by Spark when it is set (`SET`, `spark.conf.set`; one given at
 * launch when the session first builds its conf), with Spark's own error naming the key
 * and what it accepts. This is the one way sparkext fails a query or a session on purpose:
 * the configuration is the user's explicit statement, and reading `enabled=maybe` as
 * false hid the mistake (docs/design.md, "Configuration").
 */
object SparkextConf {
  /** The version of sparkext that introduced the entries (`SET -v`'s version column). */
  private val Since = "0.1.0"
  val Prefix = "spark.sparkext."

  private def buildConf(name: String) = SQLConf.buildConf(Prefix + name).version(Since)
  private def buildStaticConf(name: String) = SQLConf.buildStaticConf(Prefix + name).version(Since)

  val ENABLED: ConfigEntry[Boolean] = buildConf("enabled")
    .doc("Whether the Python rules registered by sparkext.enable(spark) (or named by " +
      "spark.sparkext.rules) run in this session's optimizer. false skips them, per query.")
    .booleanConf
    .createWithDefault(true)

  val STRICT: ConfigEntry[Boolean] = buildConf("strict")
    .doc("Whether a failing, slow or rejected Python rule fails the query (true, for " +
      "tests) instead of leaving the plan unchanged with one warning (false).")
    .booleanConf
    .createWithDefault(false)

  val TIMEOUT_MS: ConfigEntry[Long] = millisConf("timeoutMs", 10000L,
    "How long, in milliseconds, the optimizer waits for Python's answer to one call " +
      "before it goes on with the plan unchanged; 0 waits without limit.")

  val COOLDOWN_MS: ConfigEntry[Long] = millisConf("cooldownMs", 60000L,
    "After a call timed out, how long, in milliseconds, the session's Python rules " +
      "are skipped; 0 skips them only for the rest of the query that timed out.")

  val FACTS_TIMEOUT_MS: ConfigEntry[Long] = millisConf("factsTimeoutMs", 5000L,
    "How long, in milliseconds, one optimizer call may spend listing files and reading " +
      "parquet footers for the rules that need files (Rule(needs=('files',))); a relation " +
      "whose files are not known by then is sent without them (what was read is cached " +
      "for the next call). 0 waits without limit.")

  private def millisConf(name: String, default: Long, doc: String,
      static: Boolean = false): ConfigEntry[Long] =
    (if (static) buildStaticConf(name) else buildConf(name)).doc(doc).longConf
      .checkValue(_ >= 0, "It must be a number of milliseconds >= 0.")
      .createWithDefault(default)

  val EXCLUDED_RULES: ConfigEntry[String] = buildConf("excludedRules")
    .doc("Comma-separated names of sparkext rules not to run in this session, like " +
      "spark.sql.optimizer.excludedRules for Catalyst's. An unknown name is warned about.")
    .stringConf
    .createWithDefault("")

  val RULES: ConfigEntry[String] = buildConf("rules")
    .doc("Comma-separated module:attribute entries (rules, rule lists or batches) that a " +
      "rule worker started by the driver runs, where no PySpark driver calls " +
      "sparkext.enable (spark-sql, Spark Connect, the Thrift server); read once, when the " +
      "application starts. Empty: no worker.")
    .stringConf
    .createWithDefault("")

  val PYTHON: ConfigEntry[String] = buildConf("python")
    .doc("The Python interpreter of the rule worker (spark.sparkext.rules); empty: " +
      "spark.pyspark.driver.python, spark.pyspark.python, PYSPARK_PYTHON, else python3. " +
      "Read once, when the application starts.")
    .stringConf
    .createWithDefault("")

  // ---- guards (docs/guards.md) ---------------------------------------------------------------
  //
  // Static: a platform team sets them at launch (--conf, spark-defaults.conf, the builder
  // before the context starts), and a session can neither set nor unset them
  // (CANNOT_MODIFY_STATIC_CONFIG). sparkext reads them once per SparkContext, from its
  // SparkConf, never from a session's conf (`guardSettings`).

  val GUARDS: ConfigEntry[String] = buildStaticConf("guards")
    .doc("Comma-separated module:attribute entries naming guards (sparkext.guard), guard " +
      "lists, or both: Python checks that may refuse a query. They run in a Python process " +
      "the driver starts, on every query of every session; no session setting removes " +
      "them. Static: set at launch.")
    .stringConf
    .createWithDefault("")

  val GUARDS_TIMEOUT_MS: ConfigEntry[Long] = millisConf("guards.timeoutMs", 30000L,
    "How long, in milliseconds, a query waits for the guards' verdict; a query not judged " +
      "by then is refused, and the guard process restarted. 0 waits without limit. Static: " +
      "set at launch.", static = true)

  private def modeConf(guard: String): ConfigEntry[String] = buildStaticConf(s"guards.$guard.mode")
    .doc(s"What the $guard guard does with a query it would refuse: refuse it, or warn " +
      "(one log line per query, and an audit record) and let it run. Static: set at launch.")
    .stringConf
    .transform(_.trim.toLowerCase(java.util.Locale.ROOT))
    .checkValues(Set("refuse", "warn"))
    .createWithDefault("refuse")

  val PARTITION_FILTER_TABLES: ConfigEntry[String] = buildStaticConf("guards.partitionFilter.tables")
    .doc("Partitioned tables a query may read only with a filter on their partition " +
      "columns: * for every partitioned relation (path reads included), or comma-separated " +
      "table names (a name matches a table whose qualified name ends with it). Empty: the " +
      "guard is off. Static: set at launch.")
    .stringConf
    .createWithDefault("")

  val PARTITION_FILTER_ALLOW: ConfigEntry[String] = buildStaticConf("guards.partitionFilter.allow")
    .doc("Comma-separated table names the partitionFilter guard lets through without a " +
      "partition filter. Static: set at launch.")
    .stringConf
    .createWithDefault("")

  val PARTITION_FILTER_MODE: ConfigEntry[String] = modeConf("partitionFilter")

  /** An optional limit: a size (`bytes`, with units: 100g) or a count. */
  private def limitConf(name: String, bytes: Boolean, doc: String): OptionalConfigEntry[Long] = {
    val b = buildStaticConf(name).doc(doc + " Static: set at launch.")
    (if (bytes) b.bytesConf(ByteUnit.BYTE) else b.longConf)
      .checkValue(_ >= 0, "It must be a number >= 0.")
      .createOptional
  }

  val MAX_SCAN_BYTES: OptionalConfigEntry[Long] = limitConf("guards.maxScan.bytes", bytes = true,
    "The most bytes of files one query's scans may read after partition pruning (its " +
      "subqueries included), e.g. 100g. Unset: no limit.")

  val MAX_SCAN_FILES: OptionalConfigEntry[Long] = limitConf("guards.maxScan.files", bytes = false,
    "The most files one query's scans may read after partition pruning. Unset: no limit.")

  val MAX_SCAN_PARTITIONS: OptionalConfigEntry[Long] = limitConf("guards.maxScan.partitions",
    bytes = false, "The most partitions one query's scans may read after partition pruning. " +
      "Unset: no limit.")

  val MAX_SCAN_MODE: ConfigEntry[String] = modeConf("maxScan")

  val CARTESIAN_BYTES: OptionalConfigEntry[Long] = limitConf("guards.cartesian.bytes", bytes = true,
    "A join without an equality between its two sides (a cartesian product or a non-equi " +
      "join) is refused when Catalyst estimates both sides larger than this, e.g. 1g. " +
      "Unset: the guard is off.")

  val CARTESIAN_MODE: ConfigEntry[String] = modeConf("cartesian")

  val guardEntries: Seq[ConfigEntry[_]] = Seq(GUARDS, GUARDS_TIMEOUT_MS, PARTITION_FILTER_TABLES,
    PARTITION_FILTER_ALLOW, PARTITION_FILTER_MODE, MAX_SCAN_BYTES, MAX_SCAN_FILES,
    MAX_SCAN_PARTITIONS, MAX_SCAN_MODE, CARTESIAN_BYTES, CARTESIAN_MODE)

  val entries: Seq[ConfigEntry[_]] =
    Seq(ENABLED, STRICT, TIMEOUT_MS, COOLDOWN_MS, FACTS_TIMEOUT_MS, EXCLUDED_RULES, RULES,
      PYTHON) ++ guardEntries

  val Enabled: String = ENABLED.key
  val Strict: String = STRICT.key
  val TimeoutMs: String = TIMEOUT_MS.key
  /** After a timeout, how long a registration's rules are skipped (0: only in that query). */
  val CooldownMs: String = COOLDOWN_MS.key
  /** How long one call may spend on the files the rules need. */
  val FactsTimeoutMs: String = FACTS_TIMEOUT_MS.key
  val ExcludedRules: String = EXCLUDED_RULES.key
  val Rules: String = RULES.key
  val Python: String = PYTHON.key
  val Guards: String = GUARDS.key

  /** Every key, sorted. */
  val keys: Seq[String] = entries.map(_.key).sorted

  /** Registers the entries with Spark (idempotent: the object initialises once). */
  def register(): Unit = ()

  /**
   * Whether sparkext runs in `conf`'s session. This, [[excludedRules]] and
   * [[catalystExcludedRules]] are read on every optimizer invocation, most of which make no
   * call, so they read the value as set: `getConf` converts it (and, for a key not set,
   * looks up its entry) every time, and that was most of what such an invocation cost
   * (docs/performance.md). Values other than `true` and `false` go through Spark's own
   * conversion, and its error.
   */
  def enabled(conf: SQLConf): Boolean = setting(conf, Enabled) match {
    case null | "true" => true
    case "false" => false
    case _ => conf.getConf(ENABLED)
  }
  def strict(conf: SQLConf): Boolean = conf.getConf(STRICT)
  def timeoutMs(conf: SQLConf): Long = conf.getConf(TIMEOUT_MS)
  def cooldownMs(conf: SQLConf): Long = conf.getConf(COOLDOWN_MS)
  def factsTimeoutMs(conf: SQLConf): Long = conf.getConf(FACTS_TIMEOUT_MS)

  /** `spark.sparkext.excludedRules` as it is set ("" when not), `${...}` substituted. */
  def excludedRules(conf: SQLConf): String =
    ruleList(conf, ExcludedRules, conf.getConf(EXCLUDED_RULES))

  /** `spark.sql.optimizer.excludedRules` as Catalyst's optimizer reads it ("" when not set). */
  def catalystExcludedRules(conf: SQLConf): String =
    ruleList(conf, SQLConf.OPTIMIZER_EXCLUDED_RULES.key, conf.optimizerExcludedRules.getOrElse(""))

  /**
   * A list of rule names as set under `key`, read on every optimizer invocation: the text
   * itself, "" when unset, and Spark's conversion (`converted`) only for a `${...}`
   * reference, which Spark substitutes.
   */
  private def ruleList(conf: SQLConf, key: String, converted: => String): String =
    setting(conf, key) match {
      case null => ""
      case v if v.contains("${") => converted
      case v => v
    }

  /** The value of `key` as set in `conf`, or null when it is not set. */
  private def setting(conf: SQLConf, key: String): String = conf.getConfString(key, null)

  /** The names in a comma-separated list of rule names, in order, without repeats. */
  def namesIn(text: String): Seq[String] =
    if (text.isEmpty) Nil else text.split(",").toSeq.map(_.trim).filter(_.nonEmpty).distinct

  /**
   * Converts each `spark.sparkext.*` value of `settings` as Spark does when one is set, so
   * that a bad value that reached a conf unchecked (set before the extension loaded) fails
   * with Spark's own error, naming the key and what it accepts.
   */
  def validate(settings: Map[String, String]): Unit =
    entries.foreach(e => settings.get(e.key).foreach(v => e.valueConverter(v)))

  /** key, default, doc of each entry, in order (README's table is tested against it). */
  def describe: Seq[(String, String, String)] =
    entries.map(e => (e.key, if (e.defaultValue.isEmpty) "" else e.defaultValueString, e.doc))

  /** What was warned about already in this JVM: each unknown key or rule name warns once. */
  private val warned = ConcurrentHashMap.newKeySet[String]()

  private def firstTime(what: String): Boolean = warned.add(what)

  /**
   * The warnings `settings` (a session's conf) earns that were not given yet in this JVM:
   * each `spark.sparkext.*` key that is no entry, and each name in
   * `spark.sparkext.excludedRules` that none of `ruleNames` (the registered rules) has.
   * A bad value of a known key raises instead, with Spark's error.
   */
  def check(settings: Map[String, String], ruleNames: Seq[String]): Seq[String] = {
    validate(settings)
    val unknownKeys = settings.keys.toSeq.sorted
      .filter(k => k.startsWith(Prefix) && !keys.contains(k))
      .filter(k => firstTime("key " + k))
      .map(k => s"sparkext: $k is not a sparkext configuration key, and is ignored; the " +
        s"keys are ${keys.mkString(", ")}")
    unknownKeys ++ unknownRules(settings.get(ExcludedRules).toSeq.flatMap(namesIn).toSet,
      ruleNames)
  }

  /** The warnings for names in `excluded` that no registered rule has, not given yet. */
  def unknownRules(excluded: Set[String], ruleNames: Seq[String]): Seq[String] = {
    val known = ruleNames.distinct
    excluded.toSeq.sorted.filterNot(known.contains).filter(n => firstTime("rule " + n)).map(n =>
      s"sparkext: $ExcludedRules names '$n', which no registered rule has, and is ignored; " +
        s"the registered rules are ${known.mkString(", ")}")
  }

  /**
   * The guards as the application's launch configuration names them (`conf`: the
   * SparkContext's), read through the entries, so a bad value fails as Spark fails its own
   * (the caller refuses every query with that error: guards fail closed).
   */
  def guardSettings(conf: SparkConf): GuardSettings = {
    def names(entry: ConfigEntry[String]): Seq[String] = namesIn(conf.get(entry))
    GuardSettings(
      entries = conf.get(GUARDS).trim,
      timeoutMs = conf.get(GUARDS_TIMEOUT_MS),
      partitionFilter = Some(names(PARTITION_FILTER_TABLES)).filter(_.nonEmpty)
        .map(t => PartitionFilterSettings(t, names(PARTITION_FILTER_ALLOW), conf.get(PARTITION_FILTER_MODE))),
      maxScan = Some(MaxScanSettings(conf.get(MAX_SCAN_BYTES), conf.get(MAX_SCAN_FILES),
        conf.get(MAX_SCAN_PARTITIONS), conf.get(MAX_SCAN_MODE))).filter(_.limited),
      cartesian = conf.get(CARTESIAN_BYTES).map(b => CartesianSettings(b, conf.get(CARTESIAN_MODE))))
  }
}

/** The launch configuration's guards: the modules named, and the built-in guards set up. */
final case class GuardSettings(entries: String, timeoutMs: Long,
    partitionFilter: Option[PartitionFilterSettings], maxScan: Option[MaxScanSettings],
    cartesian: Option[CartesianSettings]) {
  /** Whether any guard runs. */
  def any: Boolean = entries.nonEmpty || partitionFilter.nonEmpty || maxScan.nonEmpty || cartesian.nonEmpty
}

final case class PartitionFilterSettings(tables: Seq[String], allow: Seq[String], mode: String)

final case class MaxScanSettings(bytes: Option[Long], files: Option[Long], partitions: Option[Long],
    mode: String) {
  def limited: Boolean = bytes.nonEmpty || files.nonEmpty || partitions.nonEmpty
}

final case class CartesianSettings(bytes: Long, mode: String)
