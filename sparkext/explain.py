"""``sparkext.explain(df)``: what sparkext's rules do to one DataFrame, rule by rule.

The report has the optimized plan without sparkext and with it, then per rule that ran:
how often it ran, how often it changed the plan and its time in Python; then each change,
as the smallest subtree before and after, with the reasons the rule recorded with
:func:`sparkext.because`; any rule whose change was refused, with the reason; and, where
the application runs guards (docs/guards.md), what each decided on the query::

    print(sparkext.explain(spark.table("events").where("host = 'h1'").orderBy("host", "ts")))

It optimizes the DataFrame's analyzed plan again in a clone of its session (same
configuration, same temporary views), where it registers the batches ``enable`` would (the
built-in rules, then ``rules``), with an observer on the bridge that keeps each change: the
DataFrame's own session and its rules are left as they are. Spark 4.x also shows a shorter
per-query ``sparkext`` section in ``df.explain("extended")`` (docs/design.md, "Explain").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sparkext.kinds import Item, Kind
from sparkext.optimizer import Batch, Rule, RuleStats, Step
from sparkext.plan import LogicalPlan


@dataclass
class Refusal:
    """A change that was thrown away: the rule raised, or the plan failed validation."""

    rule: str
    reason: str


@dataclass
class GuardVerdict:
    """What one guard (docs/guards.md) decided on the query: ``allowed``, ``refused``
    (``failed`` when it raised) or ``warned`` (refused in warn mode), and why."""

    guard: str
    decision: str
    reasons: list[str] = field(default_factory=list)


@dataclass
class Explanation:
    """What :func:`explain` returns; ``str()`` is the report."""

    #: the optimized plans without and with sparkext (normalised ids)
    before: str
    after: str
    #: every change, in the order the rules made them
    steps: list[Step] = field(default_factory=list)
    #: per rule that ran, summed over every optimizer call of the query
    stats: dict[str, RuleStats] = field(default_factory=dict)
    refusals: list[Refusal] = field(default_factory=list)
    #: each guard's verdict on the query with the rules, when the application runs guards
    guards: list[GuardVerdict] = field(default_factory=list)
    #: the error the query fails with when a guard refuses it (None: it may run)
    refused: str | None = None

    def __str__(self) -> str:
        out = ["== Optimized plan without sparkext ==", self.before.rstrip("\n"),
               "== Optimized plan with sparkext's rules ==", self.after.rstrip("\n"),
               "== Rules that ran ==", *self._rule_lines(),
               f"== What each rule changed ({len(self.steps)} change(s)) =="]
        for i, step in enumerate(self.steps, 1):
            old, new = changed_subtree(step.before, step.after)
            out.append(f"-- {i}. {step.rule} (batch '{step.batch}', "
                       f"{step.seconds * 1000:.2f} ms)")
            out += [f"   because: {r}" for r in step.reasons]
            out += ["   before:", _indent(old.tree_string()),
                    "   after:", _indent(new.tree_string())]
        if self.refusals:
            out.append("== Refused ==")
            out += [f"{r.rule}: {r.reason}" for r in self.refusals]
        if self.guards:
            out.append("== Guards, on the plan with sparkext's rules ==")
            out += [f"{g.guard}: {g.decision}" + "".join(f"\n   {r}" for r in g.reasons)
                    for g in self.guards]
            if self.refused is not None:
                out.append(f"the query is refused: {self.refused}")
        return "\n".join(out) + "\n"

    def _rule_lines(self) -> list[str]:
        if not self.stats:
            return ["no Python rule ran"]
        return [f"{name}: ran {s.invocations}x, "
                + (f"changed the plan {s.effective}x" if s.effective else "unchanged")
                + f", {s.nanos / 1e6:.3f} ms" for name, s in self.stats.items()]


def _indent(text: str) -> str:
    return "     " + text.rstrip("\n").replace("\n", "\n     ")


def changed_subtree(before: LogicalPlan, after: LogicalPlan) -> tuple[LogicalPlan, LogicalPlan]:
    """The smallest pair of subtrees where two plans differ (descending while the nodes
    agree but for one child)."""
    # (children first: reading them decodes a lazily decoded node, which fixes its class)
    while len(before.children) == len(after.children) and type(before) is type(after):
        differing = [(b, a) for b, a in zip(before.children, after.children) if b != a]
        if len(differing) != 1:
            break
        own = [f.name for f in dataclasses.fields(before)
               if f.compare and not _holds_plans(f)]
        if any(getattr(before, n) != getattr(after, n) for n in own):
            break
        before, after = differing[0]
    return before, after


def _holds_plans(f: dataclasses.Field) -> bool:
    return "kind" in f.metadata and Kind(f.metadata["kind"]).item is Item.PLAN


def explain(df: Any, rules: Iterable[Rule] | Rule | None = None, *, builtin: bool = True,
            batches: Iterable[Batch] | None = None) -> Explanation:
    """What ``enable(spark, rules, builtin=..., batches=...)`` would do to ``df``'s plan:
    the same batches, in the same order (default: the built-in rules). ``df`` is a
    DataFrame of a classic session with the sparkext jar (not Spark Connect)."""
    from pyspark.sql import DataFrame, SparkSession

    import sparkext
    from sparkext.session import SparkextError, is_connect
    from sparkext.testing.snapshots import normalize_plan

    spark = df.sparkSession
    if is_connect(spark):
        raise SparkextError("sparkext.explain needs a classic session (the plan is optimized "
                            "again in the driver); on Spark Connect read the metrics, or "
                            "EXPLAIN EXTENDED on the server (Spark 4.x)")
    # A clone: the same conf and temporary views, and no registration of its own yet.
    jclone = spark._jsparkSession.cloneSession()
    clone = SparkSession(spark.sparkContext, jclone)
    analyzed = df._jdf.queryExecution().analyzed()

    def optimized() -> str:
        return normalize_plan(DataFrame(_dataset_of(clone, analyzed), clone))

    explanation = Explanation("", "")
    # Registered as enable registers them (the same checks, the same names for the JVM's
    # figures, refusals and spark.sparkext.excludedRules); the bridge's observer sees
    # every call's changes.
    enabled = sparkext.enable(clone, rules, builtin=builtin, batches=batches)
    try:
        clone.conf.set("spark.sparkext.enabled", "false")
        explanation.before = optimized()
        clone.conf.set("spark.sparkext.enabled", "true")
        sparkext.reset_metrics(clone)
        enabled.bridge.observer = lambda result: explanation.steps.extend(result.steps)
        explanation.after = optimized()
        figures = sparkext.metrics(clone)["rules"]
        for r in enabled.rules:  # in the order they run
            if r.name not in figures:
                continue
            f = figures[r.name]
            reasons = [why for step in explanation.steps if step.rule == r.name
                       for why in step.reasons]
            explanation.stats[r.name] = RuleStats(f["invocations"], f["effective"], f["nanos"],
                                                  reasons)
            explanation.refusals += [Refusal(r.name, reason) for reason in f["refusal_reasons"]]
        enabled.bridge.observer = None  # (planning optimizes the query once more)
        _judge(clone, analyzed, explanation)
    finally:
        enabled.disable()
    return explanation


def _judge(session: Any, analyzed: Any, explanation: Explanation) -> None:
    """The application's guards' verdicts on the query (none when it runs no guards): its
    plan is planned in ``session``, where the guards judge it as it runs with the rules
    explained (which may change what it reads: ``answer_from_statistics`` reads no file)."""
    import sparkext
    from sparkext.session import error_class

    sparkext.reset_metrics(session)
    try:
        _dataset_of(session, analyzed).queryExecution().sparkPlan()
    except Exception as e:  # pyspark's conversion of the JVM's error (AnalysisException)
        if error_class(e) != "SPARKEXT_QUERY_REFUSED":
            raise
        explanation.refused = str(e)
    for name, f in sparkext.metrics(session)["guards"].items():
        decision = ("failed" if f["errors"] else "refused" if f["refused_queries"]
                    else "warned" if f["warned"] else "allowed")
        explanation.guards.append(GuardVerdict(name, decision, list(f["reasons"])))


def _dataset_of(session: Any, plan: Any) -> Any:
    """A new JVM Dataset of ``plan`` (analyzed again: nothing optimized is reused)."""
    jvm = session._jvm
    try:  # Spark 4.x: the classic Dataset
        return jvm.org.apache.spark.sql.classic.Dataset.ofRows(session._jsparkSession, plan)
    except Exception:  # noqa: BLE001 - py4j raises on a missing class: Spark 3.5
        return jvm.org.apache.spark.sql.Dataset.ofRows(session._jsparkSession, plan)
