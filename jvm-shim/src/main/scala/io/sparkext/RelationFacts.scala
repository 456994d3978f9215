package io.sparkext

import java.util.IdentityHashMap
import java.util.concurrent.{Callable, ExecutorService, Executors, Future, ThreadFactory, TimeUnit, TimeoutException}
import java.util.concurrent.atomic.AtomicInteger

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import com.fasterxml.jackson.core.JsonGenerator
import org.apache.hadoop.fs.{FileStatus, Path}

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.catalog.HiveTableRelation
import org.apache.spark.sql.catalyst.expressions.{And, Attribute, AttributeReference, AttributeSet, Expression, IsNotNull, Literal, SubqueryExpression}
import org.apache.spark.sql.catalyst.plans.logical.{Filter, LocalRelation, LogicalPlan, OneRowRelation, Project, Range}
import org.apache.spark.sql.execution.LogicalRDD
import org.apache.spark.sql.execution.columnar.InMemoryRelation
import org.apache.spark.sql.execution.datasources.{CatalogFileIndex, FileIndex, FileStatusCache, HadoopFsRelation, InMemoryFileIndex, LogicalRelation, PartitionDirectory, PartitionPath, PartitionSpec}
import org.apache.spark.sql.connector.read.LocalScan
import org.apache.spark.sql.execution.datasources.v2.{DataSourceV2Relation, DataSourceV2ScanRelation, FileScan, FileTable}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.sparkext.{SparkextConf => Conf}
import org.apache.spark.sql.types.{DataType, StructField}

import io.sparkext.shims.SparkShim

/**
 * The facts about the data under each relation of a plan, for the rules that declare
 * them (`Rule(needs=...)`: [[Needs]]), read from Spark's own objects: `CatalogTable`,
 * `HadoopFsRelation` and its `FileIndex`, `HiveTableRelation`, `DataSourceV2Relation` and
 * its `Table`, a relation's Catalyst statistics, parquet footers ([[ParquetFooters]]).
 * Written as each relation's `facts` field (docs/wire-format.md, "Relation facts").
 *
 * Files: the ones the scan will read after partition pruning, with the deterministic
 * partition-column conjuncts of the Filters directly above the relation (through
 * Projects that pass the columns on), listed as `PruneFileSourcePartitions` and
 * `FileSourceStrategy` list them: `CatalogFileIndex.filterPartitions`, then
 * `FileIndex.listFiles`. All of a call's listings and footers run within
 * `spark.sparkext.factsTimeoutMs`, on threads of their own: a relation whose files are not
 * known by then goes without them (`nofiles` says why), and the footers read meanwhile
 * stay cached for the next call. Never a stalled query.
 */
private[sparkext] object RelationFacts {
  /**
   * What a rule may need: the relations' facts; those and the files the scans read
   * (`listing`: path, size, modification time, partition values); or those files with what
   * their formats know exactly of them (`files`: row counts, column statistics, row groups,
   * which for parquet means reading each footer).
   */
  val Needs: Seq[String] = Seq("relation", "listing", "files")

  private val pool: ExecutorService = Executors.newCachedThreadPool(new ThreadFactory {
    private val n = new AtomicInteger()
    override def newThread(r: Runnable): Thread = {
      val t = new Thread(r, s"sparkext-facts-${n.incrementAndGet()}")
      t.setDaemon(true)
      t
    }
  })

  /**
   * One file the scan reads: its partition values (in `partitionTypes` order), and what
   * its format knows exactly (None / absent: unknown): its rows, its columns' statistics
   * (by the relation's column index) and, for parquet, per row group. `partitionKey` names
   * its partition where the partition values do not say it all (Iceberg's hidden
   * partitions, a scan that pruned a partition column from its output).
   */
  final case class DataFile(path: String, size: Long, modified: Long, partition: Seq[Any],
      rows: Option[Long], columns: Map[Int, ParquetFooters.ColumnStats],
      rowGroups: Option[IndexedSeq[ParquetFooters.RowGroup]], status: Option[FileStatus] = None,
      partitionKey: Option[String] = None)

  object DataFile {
    /** A listed file, with its parquet footer's statistics when it has one. */
    def apply(status: FileStatus, partition: Seq[Any], footer: Option[ParquetFooters.Footer]): DataFile =
      DataFile(status.getPath.toString, status.getLen, status.getModificationTime, partition,
        footer.map(_.rows), footer.map(f => f.columns.flatMap(i => f.column(i).map(i -> _)).toMap).getOrElse(Map.empty),
        footer.map(_.rowGroups), Some(status))
  }

  /**
   * `l` reading only the files of `keep` (paths among those listed for it in this call):
   * its `HadoopFsRelation` over an `InMemoryFileIndex` of exactly those files, with their
   * listed statuses and partition values (nothing is listed again), all else unchanged.
   * For a rule that proved the other files hold no row the query can return
   * (`Relation.reading_only` in Python). Not for Delta (deletion vectors travel with its
   * own index's files) nor any index but a file system's.
   */
  def restricted(l: LogicalRelation, listed: Option[Listing], keep: Set[String]): LogicalRelation = {
    val fs = fileSource(l).map(_._2).filter(fs => !isDelta(fs.location))
      .getOrElse(throw new IllegalArgumentException(s"only a file source relation can read some of its files, not ${l.relation}"))
    val files = listed.getOrElse(throw new IllegalArgumentException("no files were listed for this relation"))
      .files.filter(f => keep.contains(f.path))
    if (files.length != keep.size) throw new IllegalArgumentException("a file to keep is not among the listed ones")
    val statuses = files.map(_.status.getOrElse(throw new IllegalArgumentException(s"no status for ${files.head.path}")))
    val byPath = statuses.map(s => s.getPath -> Array(s)).toMap
    val cache = new FileStatusCache {
      override def getLeafFiles(path: Path): Option[Array[FileStatus]] = byPath.get(path)
      override def putLeafFiles(path: Path, leafFiles: Array[FileStatus]): Unit = ()
      override def invalidateAll(): Unit = ()
    }
    val partitions = files.zip(statuses).map { case (f, s) =>
      PartitionPath(InternalRow.fromSeq(f.partition), s.getPath.getParent)
    }.distinct
    val index = new InMemoryFileIndex(fs.sparkSession, statuses.map(_.getPath), fs.options,
      Some(fs.partitionSchema), cache, Some(PartitionSpec(fs.partitionSchema, partitions)), None)
    l.copy(relation = fs.copy(location = index)(fs.sparkSession))
  }

  /** Files of one relation with the types of their partition values, or why not known. */
  final case class Listing(partitionTypes: Seq[DataType], files: Seq[DataFile])

  /** Files of one relation, or why they are not known. */
  type Files = Either[String, Listing]

  /** The facts of `plan`'s relations for `needs`, computed now (files within the time box). */
  def forPlan(plan: LogicalPlan, needs: Set[String], conf: SQLConf): ForPlan =
    forPlans(Seq(plan), needs, conf)

  /** The facts of the relations of several plans (a query and its subqueries) at once. */
  def forPlans(plans: Seq[LogicalPlan], needs: Set[String], conf: SQLConf): ForPlan = {
    val files = new IdentityHashMap[LogicalPlan, Files]()
    val wantFiles = needs.contains("files")
    if (wantFiles || needs.contains("listing")) {
      val above = new IdentityHashMap[LogicalPlan, Seq[Expression]]()
      plans.foreach(filtersAbove(_, Nil, above))
      val tasks = above.asScala.toSeq.flatMap { case (leaf, filters) =>
        lister(leaf, filters, conf, wantFiles).map(l => leaf -> pool.submit(new Callable[Files] { def call(): Files = l() }))
      }
      val timeout = Conf.factsTimeoutMs(conf)
      val deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeout)
      tasks.foreach { case (leaf, task) => files.put(leaf, await(task, deadline, timeout)) }
    }
    new ForPlan(needs, files, conf)
  }

  private def await(task: Future[Files], deadline: Long, timeoutMs: Long): Files = try {
    if (timeoutMs == 0) task.get() else task.get(math.max(0L, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)
  } catch {
    case _: TimeoutException => Left(s"listing the files and reading their footers took longer than " +
      s"${Conf.FactsTimeoutMs}=$timeoutMs ms (what was read is cached for the next query)")
    case e: java.util.concurrent.ExecutionException => Left(s"could not list the files: ${e.getCause}")
    case NonFatal(e) => Left(s"could not list the files: $e")
  }

  /**
   * Each leaf under a chain of Filters (and Projects passing its columns on) gets the
   * deterministic conjuncts of those Filters that read only its own columns: what
   * `PhysicalOperation` gives `PruneFileSourcePartitions`.
   */
  private def filtersAbove(p: LogicalPlan, above: Seq[Expression],
      out: IdentityHashMap[LogicalPlan, Seq[Expression]]): Unit = p match {
    case Filter(cond, child) =>
      filtersAbove(child, above ++ splitConjuncts(cond).filter(usable), out)
    case Project(list, child) if list.forall(_.deterministic) =>
      val passed = AttributeSet(list.collect { case a: Attribute => a })
      filtersAbove(child, above.filter(_.references.subsetOf(passed)), out)
    case leaf if leaf.children.isEmpty =>
      out.put(leaf, above.filter(_.references.subsetOf(leaf.outputSet)))
    case other => other.children.foreach(filtersAbove(_, Nil, out))
  }

  private def splitConjuncts(e: Expression): Seq[Expression] = e match {
    case And(l, r) => splitConjuncts(l) ++ splitConjuncts(r)
    case other => Seq(other)
  }

  /** What Spark's partition pruning takes: deterministic, no subquery, no Python UDF. */
  private def usable(e: Expression): Boolean = e.deterministic &&
    !SubqueryExpression.hasSubquery(e) && !e.exists(x => x.getClass.getSimpleName == "PythonUDF")

  /**
   * A task listing a leaf's files, for the leaves that have files to list; with `footers`,
   * parquet files come with what their footers say.
   */
  private def lister(leaf: LogicalPlan, filters: Seq[Expression], conf: SQLConf,
      footers: Boolean): Option[() => Files] =
    leaf match {
      case l: LogicalRelation => l.relation match {
        case fs: HadoopFsRelation if !isDelta(fs.location) =>
          Some(() => SQLConf.withExistingConf(conf)(Right(Listing(
            fs.partitionSchema.fields.toSeq.map(_.dataType), fileSystemFiles(l, fs, filters, conf, footers)))))
        // Delta's log: its files and their stats, partition values in partitionSchema order.
        case fs: HadoopFsRelation => Some(() => SQLConf.withExistingConf(conf)(Right(LakeFiles.delta(l, fs, filters, conf))))
        case _ => None
      }
      // Iceberg's manifests, partition values in the order partitionColumns gives.
      case r: DataSourceV2Relation if isIceberg(r) =>
        Some(() => SQLConf.withExistingConf(conf)(Right(LakeFiles.iceberg(r, filters, conf))))
      // A scan Spark built (V2ScanRelationPushDown): what the scan itself will read.
      case s: DataSourceV2ScanRelation => s.scan match {
        case f: FileScan => Some(() => SQLConf.withExistingConf(conf)(Right(fileScanFiles(s, f, conf))))
        case _ if isIceberg(s.relation) => Some(() => SQLConf.withExistingConf(conf)(Right(LakeFiles.icebergScan(s, conf))))
        case _ => None
      }
      case _ => None
    }

  private def isIceberg(r: DataSourceV2Relation): Boolean = r.table.getClass.getName.startsWith("org.apache.iceberg.")

  /**
   * The files a DSv2 file source's scan reads: `FileScan.partitions` lists them from its
   * index with the partition and data filters the scan took. No footers are read (the
   * scan's own reader skips row groups). Partition values when the scan's output keeps
   * every partition column; each file's partition named in any case.
   */
  private def fileScanFiles(s: DataSourceV2ScanRelation, f: FileScan, conf: SQLConf): Listing = {
    val schema = f.fileIndex.partitionSchema
    val kept = positions(s.output, schema.fieldNames.toSeq, conf).isDefined
    val files = f.fileIndex.listFiles(f.partitionFilters, f.dataFilters).flatMap { d =>
      val values = schema.fields.toSeq.zipWithIndex.map { case (field, i) => d.values.get(i, field.dataType) }
      val key = if (schema.isEmpty) None else Some(schema.fields.toSeq.zip(values)
        .map { case (field, v) => s"${field.name}=${Literal(v, field.dataType)}" }.mkString("/"))
      d.files.map(file => DataFile(file.fileStatus, if (kept) values else Nil, None).copy(partitionKey = key))
    }
    Listing(if (kept) schema.fields.toSeq.map(_.dataType) else Nil, files)
  }

  def isDelta(index: FileIndex): Boolean = extendsClass(index.getClass, "org.apache.spark.sql.delta.files.TahoeFileIndex")

  private def extendsClass(c: Class[_], name: String): Boolean =
    c != null && (c.getName == name || extendsClass(c.getSuperclass, name))

  /** The relation's output positions of `names`, by Spark's resolver (None: one is missing). */
  private def positions(output: Seq[Attribute], names: Seq[String], conf: SQLConf): Option[Seq[Int]] = {
    val found = names.map(n => output.indexWhere(a => conf.resolver(a.name, n)))
    if (found.contains(-1)) None else Some(found)
  }

  private def fileSystemFiles(l: LogicalRelation, fs: HadoopFsRelation, filters: Seq[Expression],
      conf: SQLConf, footers: Boolean): Seq[DataFile] = {
    val partitionAt = positions(l.output, fs.partitionSchema.fieldNames.toSeq, conf)
      .getOrElse(throw new IllegalStateException("partition columns not in the relation's output"))
    val partitionSet = AttributeSet(partitionAt.map(l.output))
    // Spark's FileIndex matches partition columns by their exact name: the relation's own.
    val byId = l.output.map(a => a.exprId -> a.name).toMap
    val partitionFilters = filters.filter(f => f.references.nonEmpty && f.references.subsetOf(partitionSet))
      .map(_.transform { case a: AttributeReference => a.withName(byId.getOrElse(a.exprId, a.name)) })
    val directories: Seq[PartitionDirectory] = fs.location match {
      case c: CatalogFileIndex => c.filterPartitions(partitionFilters).listFiles(Nil, Nil)
      case index => index.listFiles(partitionFilters, Nil)
    }
    val parquet = footers && fs.fileFormat.getClass.getName.endsWith(".ParquetFileFormat")
    val dataColumns = l.output.zipWithIndex.filterNot { case (_, i) => partitionAt.contains(i) }
      .map { case (a, i) => i -> StructField(a.name, a.dataType, a.nullable, a.metadata) }
    lazy val hadoopConf = SparkShim.hadoopConf(fs.sparkSession, fs.options)
    directories.flatMap { d =>
      val values = fs.partitionSchema.fields.toSeq.zipWithIndex.map { case (f, i) => d.values.get(i, f.dataType) }
      d.files.map { f =>
        val status = f.fileStatus
        val footer = if (!parquet) None else Some(ParquetFooters.footer(status, hadoopConf, dataColumns,
          conf.caseSensitiveAnalysis, fieldIdsRead(conf), legacyRebaseInRead(conf)))
        DataFile(status, values, footer)
      }
    }
  }

  private def fieldIdsRead(conf: SQLConf): Boolean =
    conf.getConfString("spark.sql.parquet.fieldId.read.enabled", "false").equalsIgnoreCase("true")

  private def legacyRebaseInRead(conf: SQLConf): Boolean =
    conf.getConfString("spark.sql.parquet.datetimeRebaseModeInRead", "CORRECTED").equalsIgnoreCase("LEGACY")

  /** The facts of one plan's relations, written as each relation is encoded. */
  final class ForPlan(needs: Set[String], files: IdentityHashMap[LogicalPlan, Files], conf: SQLConf) {
    private val wantFiles = needs.contains("files") || needs.contains("listing")

    /** The files listed for `leaf` in this call, if they are known. */
    def listed(leaf: LogicalPlan): Option[Listing] = Option(files.get(leaf)).flatMap(_.toOption)

    def write(g: JsonGenerator, p: LogicalPlan): Unit = {
      g.writeObjectFieldStart("facts")
      try writeFacts(g, p) catch {
        // A relation Spark cannot describe (a broken catalog entry): its format only.
        case NonFatal(e) => g.writeStringField("error", e.toString)
      }
      g.writeEndObject()
    }

    private def writeFacts(g: JsonGenerator, p: LogicalPlan): Unit = {
      val output = p.output
      def indices(name: String, names: Seq[String]): Unit = positions(output, names, conf).foreach { is =>
        g.writeArrayFieldStart(name); is.foreach(g.writeNumber); g.writeEndArray()
      }
      format(p) match {
        case Left(name) => g.writeStringField("fmt", name)
        case Right(cls) => g.writeObjectFieldStart("fmt"); g.writeStringField("other", cls); g.writeEndObject()
      }
      table(p).foreach { case (catalog, namespace, name) =>
        g.writeArrayFieldStart("tbl")
        if (catalog == null) g.writeNull() else g.writeString(catalog)
        g.writeStartArray(); namespace.foreach(g.writeString); g.writeEndArray()
        g.writeString(name)
        g.writeEndArray()
      }
      val loc = location(p)
      if (loc.nonEmpty) { g.writeArrayFieldStart("loc"); loc.foreach(g.writeString); g.writeEndArray() }
      indices("part", partitionColumns(p))
      val partitioned = partitioning(p)
      if (partitioned.nonEmpty) { g.writeArrayFieldStart("ptn"); partitioned.foreach(g.writeString); g.writeEndArray() }
      pushed(p).foreach {
        case Right(filters) =>
          g.writeArrayFieldStart("pushed")
          filters.foreach { case (text, prunes) => g.writeStartArray(); g.writeString(text); g.writeBoolean(prunes); g.writeEndArray() }
          g.writeEndArray()
        case Left(why) => g.writeStringField("nopushed", why)
      }
      bucketing(p).foreach { case (n, cols, sorts) =>
        positions(output, cols, conf).foreach { c =>
          g.writeArrayFieldStart("bkt")
          g.writeNumber(n)
          g.writeStartArray(); c.foreach(g.writeNumber); g.writeEndArray()
          g.writeStartArray(); positions(output, sorts, conf).getOrElse(Nil).foreach(g.writeNumber); g.writeEndArray()
          g.writeEndArray()
        }
      }
      val props = properties(p)
      if (props.nonEmpty) {
        g.writeObjectFieldStart("props")
        props.toSeq.sortBy(_._1).foreach { case (k, v) => g.writeStringField(k, v) }
        g.writeEndObject()
      }
      statistics(p).foreach { case (size, rows) =>
        size.foreach(s => g.writeNumberField("size", s.bigInteger))
        rows.foreach(r => g.writeNumberField("rows", r.bigInteger))
      }
      if (wantFiles) files.get(p) match {
        case null => g.writeStringField("nofiles", s"${describeFormat(p)} relations have no files sparkext can list")
        case Left(why) => g.writeStringField("nofiles", why)
        case Right(listing) => writeFiles(g, p, listing)
      }
    }

    private def writeFiles(g: JsonGenerator, p: LogicalPlan, listing: Listing): Unit = {
      val output = p.output
      val partitionTypes = listing.partitionTypes
      def stats(columns: Map[Int, ParquetFooters.ColumnStats]): Unit = {
        g.writeStartObject()
        columns.toSeq.sortBy(_._1).foreach { case (i, s) =>
          val dt = output(i).dataType
          if (LiteralCodec.supports(dt)) {
            g.writeArrayFieldStart(i.toString)
            LiteralCodec.write(g, s.min, dt)
            LiteralCodec.write(g, s.max, dt)
            if (s.nulls == null) g.writeNull() else g.writeNumber(s.nulls.longValue)
            g.writeEndArray()
          }
        }
        g.writeEndObject()
      }
      g.writeArrayFieldStart("files")
      listing.files.foreach { f =>
        g.writeStartArray()
        g.writeString(f.path)
        g.writeNumber(f.size)
        g.writeNumber(f.modified)
        g.writeStartArray()
        f.partition.zip(partitionTypes).foreach { case (v, dt) => LiteralCodec.write(g, v, dt) }
        g.writeEndArray()
        f.rows match { case Some(r) => g.writeNumber(r) case None => g.writeNull() }
        stats(f.columns)
        f.rowGroups match {
          case None => g.writeNull()
          case Some(groups) =>
            g.writeStartArray()
            groups.foreach { rg => g.writeStartArray(); g.writeNumber(rg.rows); stats(rg.columns); g.writeEndArray() }
            g.writeEndArray()
        }
        f.partitionKey.foreach(g.writeString)
        g.writeEndArray()
      }
      g.writeEndArray()
    }
  }

  // ---- what each kind of relation says of itself --------------------------------------------

  /** Left: a format sparkext names (sparkext/facts.py `Format`); Right: another class. */
  def format(p: LogicalPlan): Either[String, String] = p match {
    case l: LogicalRelation => l.relation match {
      case fs: HadoopFsRelation if isDelta(fs.location) => Left("delta")
      case fs: HadoopFsRelation =>
        val cls = fs.fileFormat.getClass.getName
        FileFormats.collectFirst { case (suffix, name) if cls.endsWith(suffix) => name }.toLeft(cls)
      case r if r.getClass.getSimpleName == "JDBCRelation" => Left("jdbc")
      case r => Right(r.getClass.getName)
    }
    case _: HiveTableRelation => Left("hive")
    case r: DataSourceV2Relation => r.table match {
      case f: FileTable => FileTableFormats.get(f.formatName.toLowerCase(java.util.Locale.ROOT)).toLeft(f.getClass.getName)
      case t => t.getClass.getName match {
        case c if c.startsWith("org.apache.iceberg.") => Left("iceberg")
        case c if c.startsWith("org.apache.spark.sql.delta.") => Left("delta")
        case c => Right(c)
      }
    }
    // A scan whose rows the source computed while planning (Iceberg's count, min and max
    // from its manifests): rows held in the plan, as a LocalRelation's.
    case s: DataSourceV2ScanRelation if s.scan.isInstanceOf[LocalScan] => Left("local")
    case s: DataSourceV2ScanRelation => format(s.relation)
    case _: Range => Left("range")
    case _: LocalRelation => Left("local")
    case _: InMemoryRelation => Left("cached")
    case _: LogicalRDD => Left("rdd")
    case _: OneRowRelation => Left("one_row")
    case other => Right(other.getClass.getName)
  }

  private def describeFormat(p: LogicalPlan): String = format(p).fold(identity, identity)

  /** DSv2 file sources by `FileTable.formatName`, lower-cased. */
  private val FileTableFormats = Map("parquet" -> "parquet", "orc" -> "orc", "csv" -> "csv",
    "json" -> "json", "text" -> "text", "avro" -> "avro", "xml" -> "xml")

  private val FileFormats = Seq(".ParquetFileFormat" -> "parquet", ".OrcFileFormat" -> "orc",
    ".CSVFileFormat" -> "csv", ".JsonFileFormat" -> "json", ".TextFileFormat" -> "text",
    ".AvroFileFormat" -> "avro", ".XmlFileFormat" -> "xml", ".BinaryFileFormat" -> "binaryFile")

  /** (catalog, namespace, name) of a catalog table. */
  private def table(p: LogicalPlan): Option[(String, Seq[String], String)] = p match {
    case l: LogicalRelation => l.catalogTable.map(t =>
      (t.identifier.catalog.getOrElse(SessionCatalogName), t.identifier.database.toSeq, t.identifier.table))
    case h: HiveTableRelation => val t = h.tableMeta.identifier
      Some((t.catalog.getOrElse(SessionCatalogName), t.database.toSeq, t.table))
    case r: DataSourceV2Relation => r.identifier.map(i => (r.catalog.map(_.name).orNull, i.namespace.toSeq, i.name))
    case s: DataSourceV2ScanRelation => table(s.relation)
    case _ => None
  }

  private object FileSource {
    def unapply(p: LogicalPlan): Option[HadoopFsRelation] = fileSource(p).map(_._2)
  }

  /** A file source relation and its HadoopFsRelation (LogicalRelation's arity differs by line). */
  private def fileSource(p: LogicalPlan): Option[(LogicalRelation, HadoopFsRelation)] = p match {
    case l: LogicalRelation => l.relation match {
      case fs: HadoopFsRelation => Some((l, fs))
      case _ => None
    }
    case _ => None
  }

  private def location(p: LogicalPlan): Seq[String] = p match {
    case FileSource(fs) => fs.location.rootPaths.map(_.toString)
    case h: HiveTableRelation => h.tableMeta.storage.locationUri.map(_.toString).toSeq
    case r: DataSourceV2Relation => r.table match {
      case f: FileTable => f.fileIndex.rootPaths.map(_.toString)
      case t => Option(t.properties.get("location")).toSeq
    }
    case s: DataSourceV2ScanRelation => location(s.relation)
    case _ => Nil
  }

  /** Partition column names, as the relation names them. */
  private def partitionColumns(p: LogicalPlan): Seq[String] = p match {
    case FileSource(fs) => fs.partitionSchema.fieldNames.toSeq
    case h: HiveTableRelation => h.partitionCols.map(_.name)
    case r: DataSourceV2Relation =>
      r.table.partitioning.toSeq.filter(_.name == "identity").flatMap(_.references.map(_.fieldNames.mkString(".")))
    case s: DataSourceV2ScanRelation => s.scan match {
      case f: FileScan => f.fileIndex.partitionSchema.fieldNames.toSeq
      case _: LocalScan => Nil
      case _ => partitionColumns(s.relation)
    }
    case _ => Nil
  }

  /**
   * How the table is partitioned, as its source describes each part (`day`, `days(ts)`,
   * `bucket(16, id)`); empty when it is not. Every transform, where `partitionColumns` has
   * only the columns whose values are partition values.
   */
  private def partitioning(p: LogicalPlan): Seq[String] = p match {
    case FileSource(fs) => fs.partitionSchema.fieldNames.toSeq
    case h: HiveTableRelation => h.partitionCols.map(_.name)
    case r: DataSourceV2Relation => r.table.partitioning.toSeq.map(_.describe)
    case s: DataSourceV2ScanRelation if !s.scan.isInstanceOf[LocalScan] => partitioning(s.relation)
    case _ => Nil
  }

  /**
   * The filters a scan Spark built took in (`V2ScanRelationPushDown`, for a DSv2 relation),
   * which the Filters above it in the plan may no longer show: each as text, and whether
   * it restricts the partitions the scan reads (Right); or why sparkext cannot tell (Left:
   * a source whose scan does not say). None for every other relation, whose filters stay
   * in the plan above it.
   */
  private def pushed(p: LogicalPlan): Option[Either[String, Seq[(String, Boolean)]]] = p match {
    case s: DataSourceV2ScanRelation if !s.scan.isInstanceOf[LocalScan] => Some(s.scan match {
      // (IS NOT NULL, which Spark infers for a join on the column, and dynamic pruning's
      // marker restrict nothing for sure: as the V1 guard reads them)
      case f: FileScan => Right(f.partitionFilters.map(e => (e.sql, !inferred(e))) ++
        f.dataFilters.map(e => (e.sql, false)))
      case scan if isIceberg(s.relation) =>
        try Right(LakeFiles.icebergPushed(scan))
        catch { case NonFatal(e) => Left(s"could not read the filters of the Iceberg scan: $e") }
      case scan => Left(s"a ${scan.getClass.getName} scan does not say which filters it took")
    })
    case _ => None
  }

  /** A partition filter Spark adds by itself: `IS NOT NULL`, dynamic partition pruning's. */
  private def inferred(e: Expression): Boolean = e.isInstanceOf[IsNotNull] ||
    e.exists(x => x.getClass.getSimpleName.startsWith("DynamicPruning"))

  private def bucketing(p: LogicalPlan): Option[(Int, Seq[String], Seq[String])] = p match {
    case FileSource(fs) =>
      fs.bucketSpec.map(b => (b.numBuckets, b.bucketColumnNames.toSeq, b.sortColumnNames.toSeq))
    case h: HiveTableRelation =>
      h.tableMeta.bucketSpec.map(b => (b.numBuckets, b.bucketColumnNames.toSeq, b.sortColumnNames.toSeq))
    case _ => None
  }

  private def properties(p: LogicalPlan): Map[String, String] = p match {
    case l: LogicalRelation => l.catalogTable.map(_.properties).getOrElse(Map.empty)
    case h: HiveTableRelation => h.tableMeta.properties
    case r: DataSourceV2Relation => r.table.properties.asScala.toMap
    case s: DataSourceV2ScanRelation => properties(s.relation)
    case _ => Map.empty
  }

  /**
   * Catalyst's size and row count of the relation. Not for a DSv2 relation: its `stats`
   * builds a scan (and throws under Spark's own test mode) before the push-down batch.
   * A size that is `spark.sql.defaultSizeInBytes` says only that Spark does not know.
   */
  private def statistics(p: LogicalPlan): Option[(Option[BigInt], Option[BigInt])] = p match {
    case _: DataSourceV2Relation => None
    case l: LocalRelation => Some((None, Some(BigInt(l.data.length))))
    case _ => try {
      val s = p.stats
      Some((Some(s.sizeInBytes).filter(_ != BigInt(conf.defaultSizeInBytes)), s.rowCount))
    } catch { case NonFatal(_) => None }
  }

  private def conf: SQLConf = SQLConf.get

  /** The name of Spark's own catalog (`CatalogManager.SESSION_CATALOG_NAME`). */
  private val SessionCatalogName = "spark_catalog"
}
