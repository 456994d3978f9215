package io.sparkext

import java.time.{LocalDateTime, ZoneId}
import java.time.temporal.ChronoUnit
import java.util.concurrent.ConcurrentHashMap

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

/**
 * Which truncations of local date-time can go backwards as instants go forwards in a time
 * zone, by the JVM's own zone rules (the ones Spark evaluates with). Python's ordering
 * analysis asks before it treats `to_date(ts)` or `date_trunc(unit, ts)` as monotonic.
 *
 * Where a zone's clock goes back (an overlap: local time runs to `before`, then restarts
 * at `after`):
 *  - "date": the local date goes back when a midnight lies strictly inside
 *    (after, before). `cast(ts as date)` and the date-level `date_trunc` units (week,
 *    month, quarter, year) go through the local date.
 *  - "MINUTES", "HOURS", "DAYS": `date_trunc` to these units truncates the local
 *    date-time and keeps the instant's own offset where it can (`ZonedDateTime
 *    .truncatedTo`). It goes back only when a unit boundary lies strictly inside
 *    (after, before) and `after` is not itself on a boundary: the first instants after
 *    the jump then truncate to a local time before the overlap, earlier than what the
 *    last instants before it truncated to. (America/Sitka's 1867 date-line change, a
 *    clock set back a whole day, breaks all four.)
 * Gaps (the clock jumps forward) never reverse anything. Recurring rules (daylight
 * saving) are checked on one year's transition: the wall-clock times are the same every
 * year. An id the JVM cannot read breaks everything, which keeps the analysis silent.
 */
private[sparkext] object ZoneFacts {
  private val Units = Seq("MINUTES" -> ChronoUnit.MINUTES, "HOURS" -> ChronoUnit.HOURS,
    "DAYS" -> ChronoUnit.DAYS)
  private val All = Seq("date") ++ Units.map(_._1)
  private val cache = new ConcurrentHashMap[String, Seq[String]]()

  def breaks(zoneId: String): Seq[String] = cache.computeIfAbsent(zoneId, id => compute(id))

  private def compute(id: String): Seq[String] = {
    val rules = try ZoneId.of(id).getRules catch { case NonFatal(_) => return All }
    val transitions = rules.getTransitions.asScala ++
      rules.getTransitionRules.asScala.map(_.createTransition(2001))
    val overlaps = transitions.filter(_.isOverlap).map(t => (t.getDateTimeAfter, t.getDateTimeBefore))
    def anyOverlap(p: (LocalDateTime, LocalDateTime) => Boolean) =
      overlaps.exists { case (after, before) => p(after, before.minusNanos(1)) }
    val date = anyOverlap((after, last) => last.toLocalDate.isAfter(after.toLocalDate))
    val units = Units.collect {
      case (name, unit) if anyOverlap((after, last) =>
        after.truncatedTo(unit) != after && last.truncatedTo(unit).isAfter(after)) => name
    }
    (if (date) Seq("date") else Nil) ++ units
  }
}
