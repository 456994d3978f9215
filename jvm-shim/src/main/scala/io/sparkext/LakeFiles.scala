package io.sparkext

import java.lang.reflect.{Field, Method, Modifier}
import java.nio.ByteBuffer
import java.util.concurrent.ConcurrentHashMap

import scala.collection.mutable
import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import com.fasterxml.jackson.databind.{DeserializationFeature, JsonNode, ObjectMapper}

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference, AttributeSet, Expression}
import org.apache.spark.sql.connector.expressions.filter.Predicate
import org.apache.spark.sql.execution.datasources.{HadoopFsRelation, LogicalRelation}
import org.apache.spark.sql.execution.datasources.v2.{DataSourceV2Relation, DataSourceV2ScanRelation}
import org.apache.spark.sql.functions.col
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

import io.sparkext.ParquetFooters.ColumnStats
import io.sparkext.RelationFacts.{DataFile, Listing}

/**
 * The files of Delta and Iceberg relations, with what each table's own log or manifests
 * say of them exactly ([[RelationFacts]] asks here for those two formats). The shim is
 * compiled against plain Spark: Delta's and Iceberg's objects are reached by reflection
 * only, through the public methods of their public classes and interfaces (an
 * implementation class may be package-private, and calls through it are refused). A method
 * missing, a value of an unexpected class, a table state not understood: each throws, and
 * the relation goes without files (`nofiles` says why); a statistic is given only where it
 * is exact, never a bound that merely holds.
 */
private[sparkext] object LakeFiles {

  // ---- Delta -----------------------------------------------------------------------------

  /** The file indexes a Delta query's scan reads through (the others serve Delta's own commands). */
  private val DeltaIndexes = Set(
    "org.apache.spark.sql.delta.files.TahoeLogFileIndex",
    "org.apache.spark.sql.delta.stats.PreparedDeltaFileIndex")

  private val PhysicalNameKey = "delta.columnMapping.physicalName"
  private val TypeChangesKey = "delta.typeChanges"

  /**
   * The files of a Delta table the scan reads after partition pruning, from Delta's log:
   * `TahoeFileIndex.listPartitionsAsAddFiles(partitionFilters, Nil)`, which is
   * `matchingFiles` (what `listFiles` gives the scan) with each file's partition values as
   * Delta itself converts them for the scan (`getPartitionValuesRow`: the value stored
   * under the column's physical name, cast to its type in the session time zone, NULL
   * staying NULL). Each file's size and modification time are the log's; its rows and
   * columns' statistics come from the `stats` JSON Delta keeps with each file in its log
   * (read from the snapshot's `allFiles`: [[loggedStats]]), keyed by physical column name
   * (column mapping) like the partition values.
   *
   * Given, and only for a file without a deletion vector whose bounds Delta calls tight
   * (with a deletion vector the stats describe the rows before deletion: `numRecords`
   * counts the deleted rows, `nullCount` may, and `tightBounds=false` says min and max are
   * only bounds):
   *  - the row count (`numRecords`);
   *  - each column's NULL count (`nullCount`; Delta counts every row of a column the file
   *    lacks, which Spark reads as NULL);
   *  - min and max of integral, date and float/double columns: Spark's own `min`/`max`
   *    aggregates over the file at write, written whole in JSON.
   * Left out, each for its reason:
   *  - strings: Delta keeps a prefix (`spark.databricks.io.skipping.stringPrefixLength`,
   *    32) of the min, and of the max a prefix plus a tie-breaking character;
   *  - timestamps: written with millisecond precision, the min truncated, and Delta's
   *    reader adds 1 ms to the max;
   *  - decimals: JSON numbers, which lose digits past a double's precision;
   *  - floats and doubles holding NaN (Spark's `max` is then NaN, `min` too when only NaN),
   *    or whose type was widened (`delta.typeChanges`: a float file's bounds are float
   *    text, not the double Spark reads);
   *  - dates outside 1583-9999: written through Spark's date formatter, whose legacy
   *    parser policy formats older dates in the hybrid Julian calendar;
   *  - binary, boolean and nested columns: Delta keeps no bounds for them (a boolean's,
   *    were a writer to keep one, would be Spark's min/max and is read).
   * A file without stats (`CONVERT TO DELTA`, stats collection off) has none of them.
   *
   * Listing the files and reading their stats each run a Spark job over the table's state
   * (about half a second each for a table of 200 files here): the listing of a table
   * version, for one set of partition filters and columns, is kept ([[DeltaListings]]):
   * a version's files never change.
   */
  def delta(l: LogicalRelation, fs: HadoopFsRelation, filters: Seq[Expression], conf: SQLConf): Listing = {
    val index: AnyRef = fs.location
    if (!DeltaIndexes.contains(index.getClass.getName)) {
      throw new IllegalStateException(s"a Delta relation read through ${index.getClass.getName}, " +
        "not a query's file index")
    }
    val partitionNames = fs.partitionSchema.fieldNames.toSeq
    // Delta's partition values come in the index's partition schema order: it must be the
    // relation's (the same Metadata.partitionSchema).
    if (fs.location.partitionSchema.fieldNames.toSeq != partitionNames) {
      throw new IllegalStateException(s"the Delta index partitions by " +
        s"${fs.location.partitionSchema.fieldNames.mkString(", ")}, the relation by ${partitionNames.mkString(", ")}")
    }
    val partitionAt = positions(l.output, partitionNames, conf)
      .getOrElse(throw new IllegalStateException("partition columns not in the relation's output"))
    val partitionTypes = fs.partitionSchema.fields.toSeq.map(_.dataType)
    val partitionFilters = partitionConjuncts(l.output, partitionAt, filters)

    // The table's schema with Delta's field metadata (physical names, type changes): the
    // relation's attributes go without it.
    val schema = call(call(index, "metadata"), "schema") match {
      case s: StructType => s
      case other => throw new IllegalStateException(s"Delta metadata schema is a ${className(other)}")
    }
    val columns: Seq[DeltaColumn] = l.output.zipWithIndex.collect {
      case (a, i) if !partitionAt.contains(i) => deltaField(schema, a.name, conf).map(f => DeltaColumn(i, a.dataType, f))
    }.flatten

    val snapshot = snapshotOf(index)
    val version = long(call(snapshot, "version"), "Snapshot.version")
    val key = DeltaKey(index.getClass.getName, fs.location.rootPaths.map(_.toString), version,
      partitionFilters.map(_.sql), l.output.map(a => (a.name, a.dataType)))
    val kept = deltaListings.synchronized(deltaListings.get(key))
    if (kept != null) return kept

    val listed = call(index, "listPartitionsAsAddFiles", Seq(classOf[Seq[_]], classOf[Seq[_]]),
      Seq(partitionFilters.toList, Nil))
    val groups = listed match {
      case (g: Seq[_], _) => g
      case other => throw new IllegalStateException(s"listPartitionsAsAddFiles gave a ${className(other)}")
    }
    val listedFiles: Seq[(Seq[Any], AnyRef)] = groups.flatMap {
      case (row: InternalRow, adds: Seq[_]) =>
        if (row.numFields != partitionTypes.length) {
          throw new IllegalStateException(s"a Delta partition row of ${row.numFields} values for " +
            s"${partitionTypes.length} partition columns")
        }
        val values = partitionTypes.zipWithIndex.map { case (dt, i) => if (row.isNullAt(i)) null else row.get(i, dt) }
        adds.map(add => values -> add.asInstanceOf[AnyRef])
      case other => throw new IllegalStateException(s"a Delta partition group is a ${className(other)}")
    }
    val logged = loggedStats(snapshot, listedFiles.map(_._2).filter(add => call(add, "deletionVector") == null)
      .map(add => string(call(add, "path"), "AddFile.path")))
    val listing = Listing(partitionTypes, listedFiles.map { case (values, add) => deltaFile(index, add, values, columns, logged) })
    deltaListingsMade.incrementAndGet()
    // (kept only when the index still reads the version it was keyed by)
    if (long(call(snapshotOf(index), "version"), "Snapshot.version") == version) {
      deltaListings.synchronized(deltaListings.put(key, listing))
    }
    listing
  }

  /** At most this many Delta listings are kept (the newest used). */
  val DeltaListings = 64

  /** One read of a Delta table version: its index, root, partition filters and columns. */
  private final case class DeltaKey(index: String, roots: Seq[String], version: Long,
      partitionFilters: Seq[String], columns: Seq[(String, DataType)])

  private val deltaListings = new java.util.LinkedHashMap[DeltaKey, Listing](16, 0.75f, true) {
    override def removeEldestEntry(e: java.util.Map.Entry[DeltaKey, Listing]): Boolean = size() > DeltaListings
  }

  /** Delta listings made (not found kept) since the JVM started. */
  val deltaListingsMade = new java.util.concurrent.atomic.AtomicLong()

  /** Forgets the Delta listings kept (for measuring a cold start). */
  def clear(): Unit = deltaListings.synchronized(deltaListings.clear())

  /** The snapshot a Delta file index lists (a prepared scan's, for a query Delta prepared). */
  private def snapshotOf(index: AnyRef): AnyRef = index.getClass.getName match {
    case "org.apache.spark.sql.delta.stats.PreparedDeltaFileIndex" => call(call(index, "preparedScan"), "scannedSnapshot")
    case _ => call(index, "getSnapshot")
  }

  /** What the log holds of a file without a deletion vector: its size, time and stats JSON. */
  private final case class Logged(size: Long, modified: Long, stats: String)

  /**
   * The log's entries of `paths` (AddFile paths, as the log spells them), from the snapshot
   * the index lists: the files `matchingFiles` gives have their stats dropped (Delta's
   * `DataSkippingReader` keeps at most `numRecords` for a scan), the snapshot's `allFiles`
   * keeps them. A path without a deletion vector names one immutable file, so its entry is
   * that file's in any snapshot; [[deltaFile]] checks size and time match all the same.
   */
  private def loggedStats(snapshot: AnyRef, paths: Seq[String]): Map[String, Logged] = {
    if (paths.isEmpty) return Map.empty
    val files = call(snapshot, "allFiles") match {
      case d: org.apache.spark.sql.Dataset[_] => d.toDF()
      case other => throw new IllegalStateException(s"Snapshot.allFiles is a ${className(other)}")
    }
    // The state has `spark.databricks.delta.snapshotPartitions` (50) partitions: read in as
    // many tasks as the application has cores, they cost ~40% less here (2 cores, 200 files:
    // 690 -> 280 ms) than a task each. (Delta's own planning has built and cached the state
    // by now, for the scan's snapshot; were it not, the coalesce would rebuild its
    // partitions after the shuffle in as few tasks, its reading of the log unchanged.)
    val rows = files.where(col("path").isin(paths.distinct: _*))
      .select(col("path"), col("size"), col("modificationTime"), col("stats"), col("deletionVector").isNull)
      .coalesce(files.sparkSession.sparkContext.defaultParallelism.max(1))
      .collect()
    rows.filter(_.getBoolean(4)).groupBy(_.getString(0)).map { case (path, entries) =>
      if (entries.length != 1) throw new IllegalStateException(s"the Delta log lists $path ${entries.length} times")
      val r = entries.head
      path -> Logged(r.getLong(1), r.getLong(2), if (r.isNullAt(3)) null else r.getString(3))
    }
  }

  /** A data column of a Delta relation: its output index, Spark type and field in Delta's schema. */
  private final case class DeltaColumn(index: Int, dataType: DataType, field: StructField) {
    /** The name Delta keys the column's statistics by (`DeltaColumnMapping.getPhysicalName`). */
    val physical: String =
      if (field.metadata.contains(PhysicalNameKey)) field.metadata.getString(PhysicalNameKey) else field.name
    val typeChanged: Boolean = field.metadata.contains(TypeChangesKey)
  }

  /** The field of Delta's schema an output column is: its own name, else the one the resolver matches. */
  private def deltaField(schema: StructType, name: String, conf: SQLConf): Option[StructField] =
    schema.fields.find(_.name == name).orElse {
      val matched = schema.fields.filter(f => conf.resolver(f.name, name))
      if (matched.length == 1) Some(matched.head) else None
    }

  private val json = new ObjectMapper().enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)

  private def deltaFile(index: AnyRef, add: AnyRef, partition: Seq[Any], columns: Seq[DeltaColumn],
      logged: Map[String, Logged]): DataFile = {
    val logPath = string(call(add, "path"), "AddFile.path")
    val path = call(index, "absolutePath", Seq(classOf[String]), Seq(logPath)).toString
    val size = long(call(add, "size"), "AddFile.size")
    val modified = long(call(add, "modificationTime"), "AddFile.modificationTime")
    val stats = if (call(add, "deletionVector") != null) null else logged.get(logPath) match {
      case Some(e) if e.size == size && e.modified == modified => if (e.stats == null) null else json.readTree(e.stats)
      case _ => throw new IllegalStateException(s"the Delta table changed while its files were listed ($logPath)")
    }
    val exact = stats != null && stats.isObject && {
      val tight = stats.get("tightBounds")
      tight == null || (tight.isBoolean && tight.booleanValue)
    }
    if (!exact) return DataFile(path, size, modified, partition, None, Map.empty, None)
    val rows = Option(stats.get("numRecords")).filter(count).map(_.longValue)
    val nullCounts = stats.get("nullCount")
    val mins = stats.get("minValues")
    val maxes = stats.get("maxValues")
    val stated = columns.flatMap { c =>
      val nulls = child(nullCounts, c.physical).filter(count)
        .map(n => java.lang.Long.valueOf(n.longValue)).orNull
      val bounds = for {
        lo <- child(mins, c.physical).flatMap(deltaValue(_, c))
        hi <- child(maxes, c.physical).flatMap(deltaValue(_, c))
        if !isNaN(lo) && !isNaN(hi)
      } yield (lo, hi)
      if (nulls == null && bounds.isEmpty) Nil
      else Seq(c.index -> ColumnStats(bounds.map(_._1).orNull, bounds.map(_._2).orNull, nulls))
    }
    DataFile(path, size, modified, partition, rows, stated.toMap, None)
  }

  private def count(n: JsonNode): Boolean = n.isIntegralNumber && n.canConvertToLong

  private def child(node: JsonNode, name: String): Option[JsonNode] =
    if (node == null || !node.isObject) None else Option(node.get(name)).filter(n => !n.isNull)

  private def isNaN(v: Any): Boolean = v match {
    case d: java.lang.Double => d.isNaN
    case f: java.lang.Float => f.isNaN
    case _ => false
  }

  private val EarliestDate = java.time.LocalDate.of(1583, 1, 1).toEpochDay
  private val LatestDate = java.time.LocalDate.of(9999, 12, 31).toEpochDay

  /**
   * The types whose min and max a Delta log may hold exactly (see [[delta]]; a value may
   * still be left out: NaN, a widened float, a date out of range). The statistics rules'
   * pre-checks read it too: a top-K or min/max over a Delta column of another type cannot
   * use the log's statistics, so its files are not listed ([[ScanPrechecks]]).
   */
  def deltaMayBound(dt: DataType): Boolean = dt match {
    case ByteType | ShortType | IntegerType | LongType | FloatType | DoubleType | DateType | BooleanType => true
    case _ => false
  }

  /** A Delta min or max as Catalyst's value, where it is the exact value (see [[delta]]); else None. */
  private def deltaValue(n: JsonNode, c: DeltaColumn): Option[Any] =
    if (!deltaMayBound(c.dataType)) None else c.dataType match {
    case ByteType | ShortType | IntegerType | LongType if n.isIntegralNumber && n.canConvertToLong =>
      val v = n.longValue
      c.dataType match {
        case ByteType if v == v.toByte => Some(v.toByte)
        case ShortType if v == v.toShort => Some(v.toShort)
        case IntegerType if v == v.toInt => Some(v.toInt)
        case LongType => Some(v)
        case _ => None
      }
    // Float text parsed as a float, double text as a double: the value Spark wrote, exactly.
    case FloatType if !c.typeChanged => floating(n).map(java.lang.Float.parseFloat)
    case DoubleType if !c.typeChanged => floating(n).map(java.lang.Double.parseDouble)
    case DateType if n.isTextual =>
      try {
        val day = java.time.LocalDate.parse(n.textValue).toEpochDay
        if (day >= EarliestDate && day <= LatestDate) Some(day.toInt) else None
      } catch { case NonFatal(_) => None }
    case BooleanType if n.isBoolean => Some(n.booleanValue)
    case _ => None
  }

  /** A float's text: a number, or Jackson's quoted NaN and infinities. */
  private def floating(n: JsonNode): Option[String] =
    if (n.isNumber) Some(n.decimalValue.toString)
    else if (n.isTextual && Set("NaN", "Infinity", "-Infinity").contains(n.textValue)) Some(n.textValue)
    else None

  // ---- Iceberg -----------------------------------------------------------------------------

  private val SparkTableClass = "org.apache.iceberg.spark.source.SparkTable"

  /**
   * The data files of an Iceberg table's snapshot the relation reads, planned as Iceberg
   * plans a scan: `table.newScan().useSnapshot(id).includeColumnStats()` and, when the
   * Filters above the relation have conjuncts over identity-partition columns only that
   * Spark translates to predicates (`DataSourceV2Strategy.translateFilterV2`, as
   * `V2ScanRelationPushDown` does) and Iceberg converts (`SparkV2Filters.convert`, as its
   * `SparkScanBuilder` does), `.filter(those)`: the files Iceberg's planning keeps for them
   * (the scan Spark runs pushes the data filters too, and may read fewer). A conjunct that
   * does not convert is left out: more files, never fewer.
   *
   * Per file: its location and size (no modification time: Iceberg keeps none, 0 is
   * given); the values of the identity-partition columns, in the relation's order of them
   * (`RelationFacts.partitionColumns`, from `SparkTable.partitioning`); and, only for a
   * file the scan applies no delete files to (position or equality deletes, deletion
   * vectors: Iceberg's counts and bounds describe the rows before them), its
   * `recordCount`, each column's `nullValueCounts` and, for parquet files, min and max from
   * `lowerBounds`/`upperBounds` of boolean, int, long, date, timestamp (micros, with the
   * time zone Spark's type says), decimal, and float/double columns whose `nanValueCounts`
   * is 0 (Iceberg's writers leave NaN out of the bounds and count it apart; a file with
   * no NaN count, as `add_files` imports, may hold NaN its bounds leave out). Columns are
   * matched by field id in the schema the relation was loaded with.
   * Left out, each for its reason:
   *  - strings and binary: `write.metadata.metrics.default` is `truncate(16)`, a prefix of
   *    the min and an incremented prefix of the max;
   *  - bounds of ORC and Avro files: ORC's timestamp statistics are in milliseconds (and
   *    its other bounds are not checked here), Avro files keep none;
   *  - `timestamp_ns`, time, uuid, fixed, nested and variant columns;
   *  - a column a file has no metrics for (metrics mode `none` or `counts`, a column added
   *    after the file was written, which reads as its default).
   */
  def iceberg(r: DataSourceV2Relation, filters: Seq[Expression], conf: SQLConf): Listing = {
    val t = icebergTable(r, r.output, conf)
    // Iceberg's table with no snapshot has no files.
    if (t.snapshot == null) return Listing(t.partitionTypes, Nil)

    var scan = call(t.table, "newScan")
    scan = call(scan, "useSnapshot", Seq(java.lang.Long.TYPE), Seq(call(t.snapshot, "snapshotId")))
    scan = call(scan, "caseSensitive", Seq(java.lang.Boolean.TYPE), Seq(java.lang.Boolean.TRUE))
    scan = call(scan, "includeColumnStats")
    icebergFilter(r.output, t.partitionAt, filters, t.classes).foreach { e =>
      scan = call(scan, "filter", Seq(t.classes.expression), Seq(e))
    }
    val tasks = call(scan, "planFiles")
    val files = try {
      tasks.asInstanceOf[java.lang.Iterable[AnyRef]].asScala.toList.map(t.file)
    } finally tasks.asInstanceOf[java.io.Closeable].close()
    Listing(t.partitionTypes, files)
  }

  /**
   * The data files an Iceberg scan Spark built (`DataSourceV2ScanRelation`, after
   * `V2ScanRelationPushDown`) reads: the scan's own planned tasks (`tasks()` of Iceberg's
   * `SparkPartitioningAwareScan`, which plans once and keeps them: the batch Spark runs
   * plans from the same list), so after every filter Iceberg took, data filters on column
   * bounds included. Each file as [[iceberg]] gives it, for the scan relation's columns; a
   * scan that did not ask Iceberg for column statistics has files without bounds.
   */
  def icebergScan(s: DataSourceV2ScanRelation, conf: SQLConf): Listing = {
    val t = icebergTable(s.relation, s.output, conf)
    val tasks = declaredCall(s.scan, "tasks").asInstanceOf[java.util.List[AnyRef]].asScala.toList
    // (one task per file from planFiles; kept unique in case a scan ever splits them)
    val files = tasks.map(t.file).groupBy(_.path).values.map(_.head).toList.sortBy(_.path)
    Listing(t.partitionTypes, files)
  }

  /**
   * The filters an Iceberg scan Spark built took (`filters()`, `filterExpressions()` before
   * Iceberg 1.9), each as Iceberg prints it, and whether it restricts the partitions read:
   * its inclusive projection on the table's current partition spec
   * (`Projections.inclusive(spec).project`, what Iceberg's manifest pruning evaluates) is
   * something other than "always true", and it is not `IS NOT NULL`. A filter on a column
   * the spec derives a partition from (`day`, `days(ts)`, `bucket(16, id)`) restricts; one
   * on other columns does not.
   */
  def icebergPushed(scan: AnyRef): Seq[(String, Boolean)] = {
    val iceberg = new IcebergClasses(scan.getClass.getClassLoader)
    val filters = (try declaredCall(scan, "filters") catch {
      case _: NoSuchMethodException => declaredCall(scan, "filterExpressions")
    }).asInstanceOf[java.util.List[AnyRef]].asScala.toSeq
    if (filters.isEmpty) return Nil
    val spec = call(declaredCall(scan, "table"), "spec")
    val caseSensitive = declaredCall(scan, "caseSensitive") == java.lang.Boolean.TRUE
    val projection = iceberg.inclusive(spec, caseSensitive)
    filters.map { e =>
      val projected = call(projection, "project", Seq(iceberg.expression), Seq(e))
      // (`x IS NOT NULL` is what Spark infers for a join or a comparison on x: it keeps
      // every partition but a NULL one, as the V1 guard reads it too)
      (e.toString, enumName(call(e, "op")) != "NOT_NULL" && enumName(call(projected, "op")) != "TRUE")
    }
  }

  /** What reading an Iceberg table's files for some of its relation's columns needs. */
  private final class IcebergTable(val classes: IcebergClasses, val table: AnyRef, val snapshot: AnyRef,
      output: Seq[Attribute], fields: Map[Int, (Int, AnyRef)], val partitionAt: Seq[Int]) {
    val partitionTypes: Seq[DataType] = partitionAt.map(output(_).dataType)
    def file(task: AnyRef): DataFile = icebergFile(task, output, partitionAt, fields, classes)
  }

  /**
   * The Iceberg table under `r`, the snapshot and schema it was loaded with, and `output`'s
   * columns in that schema (by name; `output` is the relation's, or a scan's subset of it).
   */
  private def icebergTable(r: DataSourceV2Relation, output: Seq[Attribute], conf: SQLConf): IcebergTable = {
    val sparkTable: AnyRef = r.table
    if (sparkTable.getClass.getName != SparkTableClass) {
      throw new IllegalStateException(s"an Iceberg relation over a ${sparkTable.getClass.getName}, not a $SparkTableClass")
    }
    val iceberg = new IcebergClasses(sparkTable.getClass.getClassLoader)
    val table = call(sparkTable, "table")
    if (iceberg.metadataTable.isInstance(table)) {
      throw new IllegalStateException(s"an Iceberg metadata table (${table.getClass.getSimpleName}) has no data files")
    }
    val (snapshot, schema) = pinned(sparkTable, table, iceberg)
    val struct = call(schema, "asStruct")
    // Each output column that is a top-level field of that schema: (output index, field id, Iceberg type).
    val fields: Map[Int, (Int, AnyRef)] = output.zipWithIndex.flatMap { case (a, i) =>
      Option(call(struct, "field", Seq(classOf[String]), Seq(a.name)))
        .map(f => i -> (int(call(f, "fieldId"), "NestedField.fieldId"), call(f, "type")))
    }.toMap

    // The identity-partition columns as RelationFacts.partitionColumns lists them; when one
    // is not a top-level column of `output` (it writes no `part` then), files carry no
    // partition values.
    val partitionNames = r.table.partitioning.toSeq.filter(_.name == "identity")
      .flatMap(_.references.map(_.fieldNames.mkString(".")))
    val partitionAt = positions(output, partitionNames, conf).getOrElse(Nil)
    partitionAt.find(i => !fields.contains(i)).foreach { i =>
      throw new IllegalStateException(s"partition column ${output(i).name} is not in the Iceberg schema")
    }
    new IcebergTable(iceberg, table, snapshot, output, fields, partitionAt)
  }

  /** The Iceberg classes and static methods used, from the loader of the relation's table. */
  private final class IcebergClasses(loader: ClassLoader) {
    private def load(name: String): Class[_] = Class.forName(name, true, loader)
    val metadataTable: Class[_] = load("org.apache.iceberg.BaseMetadataTable")
    val snapshot: Class[_] = load("org.apache.iceberg.Snapshot")
    val schema: Class[_] = load("org.apache.iceberg.Schema")
    val expression: Class[_] = load("org.apache.iceberg.expressions.Expression")
    val structLike: Class[_] = load("org.apache.iceberg.StructLike")
    private val icebergType = load("org.apache.iceberg.types.Type")
    private val convert = load("org.apache.iceberg.spark.SparkV2Filters")
      .getMethod("convert", classOf[Predicate])
    private val and = load("org.apache.iceberg.expressions.Expressions").getMethod("and", expression, expression)
    private val fromByteBuffer = load("org.apache.iceberg.types.Conversions")
      .getMethod("fromByteBuffer", icebergType, classOf[ByteBuffer])
    private val inclusiveProjection = load("org.apache.iceberg.expressions.Projections")
      .getMethod("inclusive", load("org.apache.iceberg.PartitionSpec"), java.lang.Boolean.TYPE)

    /** Iceberg's expression for a Spark predicate, or null when it has none. */
    def toExpression(p: Predicate): AnyRef = convert.invoke(null, p)
    def both(a: AnyRef, b: AnyRef): AnyRef = and.invoke(null, a, b)
    def decode(t: AnyRef, b: ByteBuffer): AnyRef = fromByteBuffer.invoke(null, t, b)
    /** `Projections.inclusive(spec, caseSensitive)`: a filter's partition filter under `spec`. */
    def inclusive(spec: AnyRef, caseSensitive: Boolean): AnyRef =
      inclusiveProjection.invoke(null, spec, java.lang.Boolean.valueOf(caseSensitive))
  }

  /**
   * The snapshot (null: the table has none) and schema a SparkTable was loaded with. Since
   * Iceberg 1.11 it pins both at load (fields `snapshot` and `schema`: for a branch, a time
   * travel or the main branch's head); before, `snapshotId()` is set only when time
   * travelling, the scan otherwise reading the branch's head or the current snapshot, and
   * the schema is the private `snapshotSchema()`.
   */
  private def pinned(sparkTable: AnyRef, table: AnyRef, iceberg: IcebergClasses): (AnyRef, AnyRef) = {
    val cls = sparkTable.getClass
    declaredField(cls, "snapshot").filter(f => iceberg.snapshot.isAssignableFrom(f.getType)) match {
      case Some(snapshotField) =>
        val schemaField = declaredField(cls, "schema").filter(f => iceberg.schema.isAssignableFrom(f.getType))
          .getOrElse(throw new IllegalStateException(s"$SparkTableClass pins a snapshot but no schema"))
        (snapshotField.get(sparkTable), schemaField.get(sparkTable))
      case None =>
        val id = call(sparkTable, "snapshotId")
        val branch = call(sparkTable, "branch")
        val snapshot =
          if (id != null) call(table, "snapshot", Seq(java.lang.Long.TYPE), Seq(id))
          else if (branch != null) call(table, "snapshot", Seq(classOf[String]), Seq(branch))
          else call(table, "currentSnapshot")
        if (id != null && snapshot == null) throw new IllegalStateException(s"Iceberg snapshot $id not found")
        val m = cls.getDeclaredMethod("snapshotSchema")
        m.setAccessible(true)
        (snapshot, m.invoke(sparkTable))
    }
  }

  private def declaredField(cls: Class[_], name: String): Option[Field] =
    try {
      val f = cls.getDeclaredField(name)
      f.setAccessible(true)
      Some(f)
    } catch { case _: NoSuchFieldException => None }

  /**
   * The Iceberg filter of the conjuncts over partition columns only, each converted alone:
   * one Spark cannot translate or Iceberg cannot convert is left out (the filter only
   * narrows less). None: no conjunct converts.
   */
  private def icebergFilter(output: Seq[Attribute], partitionAt: Seq[Int], filters: Seq[Expression],
      iceberg: IcebergClasses): Option[AnyRef] = {
    val converted = partitionConjuncts(output, partitionAt, filters)
      // A name with a dot or backtick is quoted by Spark and split into a path by Iceberg.
      .filter(_.references.forall(a => !a.name.contains(".") && !a.name.contains("`")))
      .flatMap { e =>
        try translateFilterV2(e).flatMap(p => Option(iceberg.toExpression(p)))
        catch { case NonFatal(_) => None }  // SparkV2Filters refuses some (x = NULL)
      }
    converted.reduceOption((a, b) => iceberg.both(a, b))
  }

  /**
   * `DataSourceV2Strategy.translateFilterV2(e)`: the predicate `V2ScanRelationPushDown`
   * hands a source for `e`. The object is `private[sql]` (public in the bytecode, the
   * same signature on every line), hence called by reflection.
   */
  private lazy val (v2Strategy: AnyRef, translateFilterV2Method: Method) = {
    val module = Class.forName("org.apache.spark.sql.execution.datasources.v2.DataSourceV2Strategy$")
    (module.getField("MODULE$").get(null), module.getMethod("translateFilterV2", classOf[Expression]))
  }

  private def translateFilterV2(e: Expression): Option[Predicate] =
    translateFilterV2Method.invoke(v2Strategy, e) match {
      case o: Option[_] => o.collect { case p: Predicate => p }
      case other => throw new IllegalStateException(s"translateFilterV2 gave a ${className(other)}")
    }

  private def icebergFile(task: AnyRef, output: Seq[Attribute], partitionAt: Seq[Int],
      fields: Map[Int, (Int, AnyRef)], iceberg: IcebergClasses): DataFile = {
    val file = call(task, "file")
    val path = (try call(file, "location") catch { case _: NoSuchMethodException => call(file, "path") }).toString
    val size = long(call(file, "fileSizeInBytes"), "DataFile.fileSizeInBytes")

    // Identity-partition values from the file's own spec (specs evolve: an older file may
    // not partition by the column, and its value is then not known).
    val spec = call(task, "spec")
    val specFields = call(spec, "fields").asInstanceOf[java.util.List[AnyRef]].asScala.toIndexedSeq
    val partitionData = call(file, "partition")
    val partition = partitionAt.map { i =>
      val (id, icebergType) = fields(i)
      val at = specFields.indexWhere(pf => int(call(pf, "sourceId"), "PartitionField.sourceId") == id &&
        call(call(pf, "transform"), "isIdentity") == java.lang.Boolean.TRUE)
      if (at < 0) {
        throw new IllegalStateException(s"$path was written under partition spec ${call(spec, "specId")}, " +
          s"which does not partition by identity(${output(i).name})")
      }
      val v = call(partitionData, "get", Seq(Integer.TYPE, classOf[Class[_]]), Seq(Integer.valueOf(at), classOf[AnyRef]))
      icebergValue(icebergType, v, output(i).dataType)
        .getOrElse(throw new IllegalStateException(s"an Iceberg $icebergType partition " +
          s"value (${className(v)}) for a ${output(i).dataType.simpleString} column"))
    }

    // The file's partition, all of its spec's fields (days(ts) too), for counting partitions.
    val key = if (specFields.isEmpty) None
      else Some(s"${call(spec, "specId")}/${call(spec, "partitionToPath", Seq(iceberg.structLike), Seq(partitionData))}")

    val deletes = call(task, "deletes").asInstanceOf[java.util.List[_]]
    if (deletes != null && !deletes.isEmpty) {
      return DataFile(path, size, 0L, partition, None, Map.empty, None, partitionKey = key)
    }
    val rows = long(call(file, "recordCount"), "DataFile.recordCount")
    val parquet = enumName(call(file, "format")) == "PARQUET"
    def counts(name: String): java.util.Map[Integer, java.lang.Long] =
      Option(call(file, name).asInstanceOf[java.util.Map[Integer, java.lang.Long]]).getOrElse(java.util.Collections.emptyMap())
    def bounds(name: String): java.util.Map[Integer, ByteBuffer] =
      Option(call(file, name).asInstanceOf[java.util.Map[Integer, ByteBuffer]]).getOrElse(java.util.Collections.emptyMap())
    val nullCounts = counts("nullValueCounts")
    val nanCounts = counts("nanValueCounts")
    val lower = if (parquet) bounds("lowerBounds") else java.util.Collections.emptyMap[Integer, ByteBuffer]()
    val upper = if (parquet) bounds("upperBounds") else java.util.Collections.emptyMap[Integer, ByteBuffer]()
    val columns = fields.toSeq.flatMap { case (i, (id, icebergType)) =>
      val key = Integer.valueOf(id)
      val nulls = nullCounts.get(key)
      val dt = output(i).dataType
      val typeId = enumName(call(icebergType, "typeId"))
      val nanFree = !(typeId == "FLOAT" || typeId == "DOUBLE") ||
        Option(nanCounts.get(key)).exists(_.longValue == 0L)
      val range = if (!nanFree || !BoundTypes.contains(typeId)) None else for {
        lo <- Option(lower.get(key)).flatMap(b => icebergValue(icebergType, iceberg.decode(icebergType, b), dt))
        hi <- Option(upper.get(key)).flatMap(b => icebergValue(icebergType, iceberg.decode(icebergType, b), dt))
      } yield (lo, hi)
      if (nulls == null && range.isEmpty) Nil
      else Seq(i -> ColumnStats(range.map(_._1).orNull, range.map(_._2).orNull, nulls))
    }
    DataFile(path, size, 0L, partition, Some(rows), columns.toMap, None, partitionKey = key)
  }

  /** The Iceberg types whose parquet bounds are the exact min and max (strings: truncated). */
  private val BoundTypes = Set("BOOLEAN", "INTEGER", "LONG", "FLOAT", "DOUBLE", "DATE", "TIMESTAMP", "DECIMAL")

  /**
   * An Iceberg value (a partition value or a decoded bound, in Iceberg's representation)
   * as Catalyst's value of `dt`, when the Iceberg type is the one Spark reads as `dt`; else
   * None. Dates are days and timestamps microseconds in both.
   */
  private def icebergValue(icebergType: AnyRef, v: Any, dt: DataType): Option[Any] = {
    if (v == null) return Some(null)
    val typeId = enumName(call(icebergType, "typeId"))
    def utc: Boolean = call(icebergType, "shouldAdjustToUTC") == java.lang.Boolean.TRUE
    (typeId, v, dt) match {
      case ("BOOLEAN", b: java.lang.Boolean, BooleanType) => Some(b)
      case ("INTEGER", n: java.lang.Integer, IntegerType) => Some(n)
      // Partition data and bounds of a column promoted from int keep the int.
      case ("LONG", n: java.lang.Integer, LongType) => Some(n.longValue)
      case ("LONG", n: java.lang.Long, LongType) => Some(n)
      case ("FLOAT", n: java.lang.Float, FloatType) => Some(n)
      case ("DOUBLE", n: java.lang.Float, DoubleType) => Some(n.doubleValue)
      case ("DOUBLE", n: java.lang.Double, DoubleType) => Some(n)
      case ("DATE", n: java.lang.Integer, DateType) => Some(n)
      case ("TIMESTAMP", n: java.lang.Long, TimestampType) if utc => Some(n)
      case ("TIMESTAMP", n: java.lang.Long, TimestampNTZType) if !utc => Some(n)
      case ("DECIMAL", d: java.math.BigDecimal, t: DecimalType) =>
        val out = Decimal(d)
        if (d.scale == t.scale && out.changePrecision(t.precision, t.scale)) Some(out) else None
      case ("STRING", s: CharSequence, _: StringType) => Some(UTF8String.fromString(s.toString))
      case ("UUID", u: java.util.UUID, _: StringType) => Some(UTF8String.fromString(u.toString))
      case ("BINARY" | "FIXED", b: ByteBuffer, BinaryType) =>
        val bytes = new Array[Byte](b.remaining)
        b.duplicate().get(bytes)
        Some(bytes)
      case ("BINARY" | "FIXED", b: Array[Byte], BinaryType) => Some(b)
      case _ => None
    }
  }

  // ---- shared --------------------------------------------------------------------------------

  /** The relation's output positions of `names`, by Spark's resolver (None: one is missing). */
  private def positions(output: Seq[Attribute], names: Seq[String], conf: SQLConf): Option[Seq[Int]] = {
    val found = names.map(n => output.indexWhere(a => conf.resolver(a.name, n)))
    if (found.contains(-1)) None else Some(found)
  }

  /**
   * The conjuncts over partition columns only, their attributes named as the relation
   * names them (the normalisation RelationFacts.fileSystemFiles applies, as Spark's
   * `PruneFileSourcePartitions` and `V2ScanRelationPushDown` do before the source sees them).
   */
  private def partitionConjuncts(output: Seq[Attribute], partitionAt: Seq[Int], filters: Seq[Expression]): Seq[Expression] = {
    val partitionSet = AttributeSet(partitionAt.map(output))
    val byId = output.map(a => a.exprId -> a.name).toMap
    filters.filter(f => f.references.nonEmpty && f.references.subsetOf(partitionSet))
      .map(_.transform { case a: AttributeReference => a.withName(byId.getOrElse(a.exprId, a.name)) })
  }

  private def enumName(v: AnyRef): String = v match {
    case e: java.lang.Enum[_] => e.name
    case other => throw new IllegalStateException(s"expected an enum, got a ${className(other)}")
  }

  private def className(v: Any): String = if (v == null) "null" else v.getClass.getName

  private def long(v: Any, what: String): Long = v match {
    case n: java.lang.Long => n.longValue
    case n: java.lang.Integer => n.longValue
    case other => throw new IllegalStateException(s"$what is a ${className(other)}")
  }

  private def string(v: Any, what: String): String = v match {
    case s: String => s
    case other => throw new IllegalStateException(s"$what is a ${className(other)}")
  }

  private def int(v: Any, what: String): Int = v match {
    case n: java.lang.Integer => n.intValue
    case other => throw new IllegalStateException(s"$what is a ${className(other)}")
  }

  private final case class MethodKey(cls: Class[_], name: String, params: Seq[Class[_]])

  private val methods = new ConcurrentHashMap[MethodKey, Method]()

  /** `target.name(args)` through the public class or interface that declares the method. */
  private def call(target: AnyRef, name: String, params: Seq[Class[_]] = Nil, args: Seq[AnyRef] = Nil): AnyRef = {
    if (target == null) throw new IllegalStateException(s"$name() called on null")
    val key = MethodKey(target.getClass, name, params)
    var m = methods.get(key)
    if (m == null) {
      m = publicMethod(target.getClass, name, params)
      methods.put(key, m)
    }
    try m.invoke(target, args: _*)
    catch { case e: java.lang.reflect.InvocationTargetException if e.getCause != null => throw e.getCause }
  }

  /**
   * `target.name()` for a method of no arguments its class or a superclass declares, of any
   * visibility: for the protected accessors of Iceberg's scans (`tasks()`, `filters()`),
   * which Spark's interfaces do not expose. NoSuchMethodException when none declares it.
   */
  private def declaredCall(target: AnyRef, name: String): AnyRef = {
    def find(c: Class[_]): Method =
      if (c == null) throw new NoSuchMethodException(s"${target.getClass.getName}.$name()")
      else try c.getDeclaredMethod(name) catch { case _: NoSuchMethodException => find(c.getSuperclass) }
    val m = find(target.getClass)
    m.setAccessible(true)
    try m.invoke(target)
    catch { case e: java.lang.reflect.InvocationTargetException if e.getCause != null => throw e.getCause }
  }

  private def publicMethod(cls: Class[_], name: String, params: Seq[Class[_]]): Method = {
    val types = mutable.LinkedHashSet[Class[_]]()
    def walk(c: Class[_]): Unit = if (c != null && types.add(c)) {
      walk(c.getSuperclass)
      c.getInterfaces.foreach(walk)
    }
    walk(cls)
    def declared(c: Class[_]): Method =
      try {
        val m = c.getMethod(name, params: _*)
        if (Modifier.isPublic(m.getDeclaringClass.getModifiers)) m else null
      } catch { case _: NoSuchMethodException => null }
    types.iterator.filter(c => Modifier.isPublic(c.getModifiers)).map(declared).find(_ != null)
      .getOrElse(throw new NoSuchMethodException(s"${cls.getName}.$name(${params.map(_.getName).mkString(", ")})"))
  }
}
