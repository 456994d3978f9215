package io.sparkext

import java.math.BigInteger

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.FileStatus
import org.apache.parquet.HadoopReadOptions
import org.apache.parquet.column.statistics.Statistics
import org.apache.parquet.hadoop.ParquetFileReader
import org.apache.parquet.hadoop.metadata.ParquetMetadata
import org.apache.parquet.hadoop.util.HadoopInputFile
import org.apache.parquet.io.api.Binary
import org.apache.parquet.schema.{LogicalTypeAnnotation, PrimitiveType, Type}
import org.apache.parquet.schema.LogicalTypeAnnotation._
import org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName

import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

import io.sparkext.shims.SparkShim

/**
 * Exact column statistics of parquet files, from their footers, read on the driver with
 * parquet-java (the `parquet-hadoop` every Spark line ships; `ParquetFileReader.open`
 * applies parquet-java's own rules on which statistics to trust: PARQUET-251's corrupt
 * binary statistics of old writers, the sort order a column's type defines, min/max
 * dropped when they hold NaN).
 *
 * Footers are kept by file identity (path, length, modification time): a file rewritten
 * in place has another length or time and is read again; at most [[Capacity]] files are
 * kept, the least recently used going first.
 *
 * A statistic is given only where it is exact and means what Spark's comparison means.
 * Left out, each for its reason:
 *  - INT96 timestamps (Spark's default `outputTimestampType`): parquet defines no order for
 *    them, and writers keep no statistics;
 *  - float and double from writers other than parquet-java: parquet-java writes NaN into
 *    a chunk's max and its reader then drops min and max, but other writers (Arrow) leave
 *    NaN out of min and max, where Spark orders NaN above everything;
 *  - strings under a collation other than UTF8_BINARY, which compare otherwise than bytes;
 *  - dates and timestamps written with the legacy hybrid calendar (Spark before 3.0, or
 *    `LEGACY` rebase), whose stored values are not the values Spark reads;
 *  - unsigned integers, time, intervals, nested and repeated columns, and any column whose
 *    parquet type is not the one Spark reads it as;
 *  - columns matched by field id (`spark.sql.parquet.fieldId.read.enabled`), and names that
 *    match more than one field without case sensitivity;
 *  - a statistic over 4 KiB, which parquet-java does not write.
 * Strings and binary are written whole by parquet-java, parquet-cpp and Spark (the footer
 * truncation `parquet.statistics.truncate.length` is off unless a writer sets it, and a
 * footer does not say it was set): from other writers they are left out.
 */
private[sparkext] object ParquetFooters {

  /** One column's exact statistics in a row group or file; null fields are unknown. */
  final case class ColumnStats(min: Any, max: Any, nulls: java.lang.Long)

  /** A row group: its rows and its columns' statistics, by the relation's column index. */
  final case class RowGroup(rows: Long, columns: Map[Int, ColumnStats])

  /**
   * What a footer says of the relation's columns, per row group; `columns`: the relation's
   * columns it can speak of (the others are left out, each for its reason below).
   */
  final case class Footer(rowGroups: IndexedSeq[RowGroup], columns: Seq[Int]) {
    def rows: Long = rowGroups.iterator.map(_.rows).sum

    /** The file's statistics of column `i`: exact only where every row group's are. */
    def column(i: Int): Option[ColumnStats] = {
      val per = rowGroups.map(g => (g.rows, g.columns.get(i)))
      if (per.isEmpty) return Some(ColumnStats(null, null, 0L))
      if (per.exists(_._2.isEmpty)) return None
      val stats = per.map(_._2.get)
      val nulls = if (stats.forall(_.nulls != null)) java.lang.Long.valueOf(stats.map(_.nulls.longValue).sum) else null
      // A row group with values must know its bounds for the file's to be known.
      val withValues = per.collect { case (rows, Some(s)) if s.nulls == null || s.nulls < rows => s }
      if (withValues.exists(s => s.min == null || s.max == null)) return Some(ColumnStats(null, null, nulls))
      Some(ColumnStats(
        withValues.map(_.min).reduceOption((a, b) => if (compare(a, b) <= 0) a else b).orNull,
        withValues.map(_.max).reduceOption((a, b) => if (compare(a, b) >= 0) a else b).orNull,
        nulls))
    }
  }

  /** At most this many footers are kept (what one is: a few longs per row group and column). */
  val Capacity = 20000

  private final case class Key(path: String, length: Long, modified: Long, columns: Seq[StructField])

  private val cache = new java.util.LinkedHashMap[Key, Footer](1024, 0.75f, true) {
    override def removeEldestEntry(e: java.util.Map.Entry[Key, Footer]): Boolean = size() > Capacity
  }

  /** Footers read from storage since the JVM started (the rest came from the cache). */
  val reads = new java.util.concurrent.atomic.AtomicLong()

  /** Forgets every footer (for measuring a cold start). */
  def clear(): Unit = cache.synchronized(cache.clear())

  /**
   * The statistics of `columns` (the relation's data columns, by index into its output)
   * in the file `status`. Throws when the footer cannot be read.
   */
  def footer(status: FileStatus, conf: Configuration, columns: Seq[(Int, StructField)],
      caseSensitive: Boolean, fieldIds: Boolean, legacyRebaseInRead: Boolean): Footer = {
    val key = Key(status.getPath.toString, status.getLen, status.getModificationTime, columns.map(_._2))
    val hit = cache.synchronized(cache.get(key))
    if (hit != null) return hit
    val meta = read(status, conf)
    reads.incrementAndGet()
    val footer = summarize(meta, columns, caseSensitive, fieldIds, legacyRebaseInRead)
    cache.synchronized(cache.put(key, footer))
    footer
  }

  private def read(status: FileStatus, conf: Configuration): ParquetMetadata = {
    val options = HadoopReadOptions.builder(conf, status.getPath).build()
    val reader = ParquetFileReader.open(HadoopInputFile.fromStatus(status, conf), options)
    try reader.getFooter finally reader.close()
  }

  private def summarize(meta: ParquetMetadata, columns: Seq[(Int, StructField)],
      caseSensitive: Boolean, fieldIds: Boolean, legacyRebaseInRead: Boolean): Footer = {
    val file = meta.getFileMetaData
    val schema = file.getSchema
    val createdBy = Option(file.getCreatedBy).getOrElse("")
    val kv = Option(file.getKeyValueMetaData).map(_.asScala.toMap).getOrElse(Map.empty[String, String])
    // Dates and timestamps in the hybrid Julian calendar: written LEGACY, by Spark 2, or
    // by another writer read under LEGACY (DataSourceUtils.getRebaseSpec's cases).
    val legacyCalendar = kv.contains("org.apache.spark.legacyDateTime") ||
      (kv.get("org.apache.spark.version") match {
        case Some(v) => majorVersion(v) < 3
        case None => legacyRebaseInRead
      })
    val floatsTrusted = createdBy.startsWith("parquet-mr") || createdBy.startsWith("parquet-java")
    val binaryTrusted = floatsTrusted || createdBy.startsWith("parquet-cpp")
    val fields = schema.getFields.asScala.toIndexedSeq

    // Spark column index -> (top-level parquet field position, its type) or None: missing.
    val matched: Seq[(Int, StructField, Option[Type])] = columns.flatMap { case (i, f) =>
      if (fieldIds && f.metadata.contains("parquet.field.id")) Nil
      else {
        val same = fields.filter(t => if (caseSensitive) t.getName == f.name else t.getName.equalsIgnoreCase(f.name))
        if (same.length > 1) Nil else Seq((i, f, same.headOption))
      }
    }
    val rowGroups = meta.getBlocks.asScala.toIndexedSeq.map { block =>
      val chunks = block.getColumns.asScala.map(c => c.getPath.toDotString -> c).toMap
      val rows = block.getRowCount
      val stats = matched.flatMap { case (i, f, field) =>
        field match {
          case None => Seq(i -> ColumnStats(null, null, rows))  // read as NULL on every row
          case Some(t) if t.isPrimitive && t.getRepetition != Type.Repetition.REPEATED =>
            chunks.get(t.getName).toSeq.flatMap { c =>
              columnStats(c.getStatistics, t.asPrimitiveType, f.dataType, rows,
                floatsTrusted, binaryTrusted, legacyCalendar).map(i -> _)
            }
          case _ => Nil
        }
      }
      RowGroup(rows, stats.toMap)
    }
    // A file without row groups has no rows: its columns are known, all empty.
    val known = if (rowGroups.isEmpty) matched.map(_._1) else rowGroups.flatMap(_.columns.keys).distinct
    Footer(rowGroups, known)
  }

  private def majorVersion(v: String): Int =
    try v.takeWhile(_ != '.').toInt catch { case NonFatal(_) => 0 }

  private def columnStats(s: Statistics[_], t: PrimitiveType, dt: DataType, rows: Long,
      floatsTrusted: Boolean, binaryTrusted: Boolean, legacyCalendar: Boolean): Option[ColumnStats] = {
    if (s == null || s.isEmpty) return None
    val nulls = if (s.isNumNullsSet) java.lang.Long.valueOf(s.getNumNulls) else null
    if (!s.hasNonNullValue) {
      // No value but NULLs: exact when the NULLs are all the rows.
      return Some(ColumnStats(null, null, nulls)).filter(_ => nulls != null && nulls == rows)
    }
    val convert = converter(t, dt, floatsTrusted, binaryTrusted, legacyCalendar)
    if (convert == null) return Some(ColumnStats(null, null, nulls))
    try Some(ColumnStats(convert(s.genericGetMin), convert(s.genericGetMax), nulls))
    catch { case NonFatal(_) => Some(ColumnStats(null, null, nulls)) }
  }

  /** Parquet's statistic value -> Catalyst's value of `dt`, or null when not exact. */
  private def converter(t: PrimitiveType, dt: DataType, floatsTrusted: Boolean,
      binaryTrusted: Boolean, legacyCalendar: Boolean): Any => Any = {
    val ann: LogicalTypeAnnotation = t.getLogicalTypeAnnotation
    val signedInt = ann match {
      case null => true
      case i: IntLogicalTypeAnnotation => i.isSigned
      case _ => false
    }
    (t.getPrimitiveTypeName, dt) match {
      case (PrimitiveTypeName.BOOLEAN, BooleanType) => v => v
      case (PrimitiveTypeName.INT32, ByteType) if signedInt => v => v.asInstanceOf[Integer].byteValue
      case (PrimitiveTypeName.INT32, ShortType) if signedInt => v => v.asInstanceOf[Integer].shortValue
      case (PrimitiveTypeName.INT32, IntegerType) if signedInt => v => v
      case (PrimitiveTypeName.INT32, LongType) if signedInt => v => v.asInstanceOf[Integer].longValue
      case (PrimitiveTypeName.INT64, LongType) if signedInt => v => v
      case (PrimitiveTypeName.FLOAT, FloatType) if floatsTrusted => v => v
      case (PrimitiveTypeName.DOUBLE, DoubleType) if floatsTrusted => v => v
      case (PrimitiveTypeName.INT32, DateType) if ann.isInstanceOf[DateLogicalTypeAnnotation] && !legacyCalendar => v => v
      case (PrimitiveTypeName.INT64, TimestampType | TimestampNTZType) if !legacyCalendar => ann match {
        case ts: TimestampLogicalTypeAnnotation if ts.isAdjustedToUTC == (dt == TimestampType) =>
          ts.getUnit match {
            case TimeUnit.MICROS => v => v
            case TimeUnit.MILLIS => v => Math.multiplyExact(v.asInstanceOf[java.lang.Long].longValue, 1000L)
            case _ => null
          }
        case _ => null
      }
      case (_, d: DecimalType) => ann match {
        case a: DecimalLogicalTypeAnnotation if a.getScale == d.scale => t.getPrimitiveTypeName match {
          case PrimitiveTypeName.INT32 | PrimitiveTypeName.INT64 =>
            v => decimal(java.math.BigDecimal.valueOf(v.asInstanceOf[Number].longValue, d.scale), d)
          case PrimitiveTypeName.FIXED_LEN_BYTE_ARRAY | PrimitiveTypeName.BINARY =>
            v => decimal(new java.math.BigDecimal(new BigInteger(v.asInstanceOf[Binary].getBytes), d.scale), d)
          case _ => null
        }
        case _ => null
      }
      case (PrimitiveTypeName.BINARY, s: StringType) if binaryTrusted && SparkShim.comparesAsBytes(s) &&
          ann.isInstanceOf[StringLogicalTypeAnnotation] => v => UTF8String.fromBytes(v.asInstanceOf[Binary].getBytes)
      case (PrimitiveTypeName.BINARY, BinaryType) if binaryTrusted && ann == null =>
        v => v.asInstanceOf[Binary].getBytes
      case _ => null
    }
  }

  private def decimal(v: java.math.BigDecimal, d: DecimalType): Decimal = {
    val out = Decimal(v)
    if (!out.changePrecision(d.precision, d.scale)) throw new ArithmeticException(s"$v does not fit $d")
    out
  }

  /** Catalyst's order of two values of one type (what Spark's comparison says). */
  private def unsignedBytes(x: Array[Byte], y: Array[Byte]): Int = {
    var i = 0
    while (i < x.length && i < y.length) {
      val c = (x(i) & 0xff) - (y(i) & 0xff)
      if (c != 0) return c
      i += 1
    }
    x.length - y.length
  }

  def compare(a: Any, b: Any): Int = (a, b) match {
    case (x: UTF8String, y: UTF8String) => unsignedBytes(x.getBytes, y.getBytes)
    case (x: Array[Byte], y: Array[Byte]) => unsignedBytes(x, y)
    case (x: java.lang.Double, y: java.lang.Double) => if (x.doubleValue == y.doubleValue) 0 else java.lang.Double.compare(x, y)
    case (x: java.lang.Float, y: java.lang.Float) => if (x.floatValue == y.floatValue) 0 else java.lang.Float.compare(x, y)
    case (x: Decimal, y: Decimal) => x.compare(y)
    case (x: java.lang.Boolean, y: java.lang.Boolean) => x.compareTo(y)
    case (x: Number, y: Number) => java.lang.Long.compare(x.longValue, y.longValue)
    case _ => throw new IllegalArgumentException(s"cannot compare $a and $b")
  }
}
