"""Rules, batches and the executor that runs them inside one call from the JVM.

A rule is a named pure function ``plan -> plan`` that returns its input object itself
when it changes nothing; the executor finds a batch's fixed point with ``is``::

    from sparkext import rule
    from sparkext.plan import Filter

    @rule(matches=(Filter,))
    def drop_true_filters(plan):
        def fix(node):
            match node:
                case Filter(condition=Literal(value=True), child=child):
                    return child
                case _:
                    return node
        return plan.transform_up(fix)

Batches run in order; ``Once`` runs its rules one time, ``FixedPoint(n)`` repeats them
until the plan stops changing (at most ``n`` rounds). The executor refuses a rule that
raises, returns something that is not a plan, or changes the plan's output columns.

A rule may declare that it reaches its own fixed point in one pass (``idempotent``) and
that other rules change nothing in its result (``subsumes``); the executor then spares the
passes that could only confirm a result. Both claims are checked when the environment has
``SPARKEXT_CHECK_RULE_CLAIMS=1`` (sparkext's own test suite sets it), as Catalyst checks
its ``Once`` batches under test: a claim that does not hold fails the rule.

The executor counts, per rule, its invocations, the ones that changed the plan and the time
spent in it (:class:`RuleStats`, sent to the JVM with every answer). A rule that changed
something may say why with :func:`because`; the reasons go with the change to
``sparkext.explain`` and the ``sparkext`` section of Spark's extended explain.
"""

from __future__ import annotations

import contextvars
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import cast, overload

from sparkext.facts import checked_needs
from sparkext.plan import LogicalPlan, Relation
from sparkext.wire import WireString


class Position(WireString):
    """Where the JVM runs a rule (the shim's sealed ``Position``); a member is also its wire
    string (``"fixed_point"``), so ``Rule(..., position="fixed_point")`` works too."""

    #: ``injectPreCBORule``: once per query, after Catalyst's operator optimization
    ONCE_PER_QUERY = "once"
    #: ``injectOptimizerRule``: inside Catalyst's fixed-point operator-optimization batches
    FIXED_POINT = "fixed_point"

    @property
    def description(self) -> str:
        """How ``enable``'s log line names the position."""
        return _DESCRIPTIONS[self]


_DESCRIPTIONS = {Position.ONCE_PER_QUERY: "once per query",
                 Position.FIXED_POINT: "in Catalyst's fixed-point batches"}
ONCE_PER_QUERY, FIXED_POINT = Position.ONCE_PER_QUERY, Position.FIXED_POINT
#: every position, in the order the registration lists their rules
POSITIONS = tuple(Position)
#: JVM-side pre-checks a rule can declare (``Rule.jvm_precheck``; the shim's
#: ``Prechecks.scala``). ``"ordering"``: sparkext's sort rules, which change a plan only
#: through an order its input already has, constants or unique keys (the shape it proves
#: unchangeable: sparkext/rules/__init__.py, docs/performance.md "Fifth round").
#: ``"top_k_scan"``, ``"global_aggregate_scan"``: a limit over a sorted scan, an aggregate
#: without grouping over a scan (the statistics rules; no files are listed for other plans).
JVM_PRECHECKS = ("ordering", "top_k_scan", "global_aggregate_scan")


@dataclass(frozen=True)
class Rule:
    """A named rewrite. ``matches`` lists the plan node classes the rule can change: when
    a plan has none of them (Catalyst's tree-pattern bits tell), the JVM does not call
    Python at all. Leave it empty for rules that may act on any plan."""

    name: str
    fn: Callable[[LogicalPlan], LogicalPlan]
    matches: tuple[type, ...] = ()
    #: a :class:`Position` (its wire string is accepted and converted)
    position: Position = ONCE_PER_QUERY
    #: The Catalyst rules (short names, as in ``spark.sql.optimizer.excludedRules``) this
    #: rule duplicates: it runs only while at least one of them is switched off. With all
    #: of them active, Catalyst has done (or will do) the rule's work, and running it
    #: would only cost time. Empty: the rule does what Catalyst lacks and always runs.
    only_when_catalyst_excludes: tuple[str, ...] = ()
    #: A necessary condition for the rule to change a plan, tested on the JVM before the
    #: plan is encoded (one of ``JVM_PRECHECKS``); when every active rule declares one and
    #: none holds, Python is not called. None: the rule may change any plan ``matches``
    #: admits. For sparkext's own rules: the JVM's test must agree with the rule's code.
    jvm_precheck: str | None = None
    #: The rule reaches its own fixed point in one pass: run again on the plan it returned,
    #: it returns that plan. The executor then does not run it on its own result (a fixed
    #: point's confirming round), only on a plan another rule has changed since.
    #: Checked under ``SPARKEXT_CHECK_RULE_CLAIMS=1``.
    idempotent: bool = False
    #: Names of rules that change nothing in this rule's result: in a batch where this rule
    #: is active, they are not run (each would only confirm it). Checked under
    #: ``SPARKEXT_CHECK_RULE_CLAIMS=1``.
    subsumes: tuple[str, ...] = ()
    #: The facts about the data the rule reads (:data:`sparkext.facts.NEEDS`): with
    #: ``"relation"`` every relation of the plans it may match carries
    #: :attr:`Relation.facts <sparkext.plan.Relation.facts>`; with ``"listing"`` those facts
    #: include the files the scan reads, with ``"files"`` their statistics too (each implies
    #: the ones before it). Rules that need nothing cost nothing: their plans are encoded
    #: without facts.
    needs: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "position", Position(self.position))
        except ValueError as e:
            raise ValueError(f"rule {self.name!r}: unknown position ({e})") from None
        if self.jvm_precheck is not None and self.jvm_precheck not in JVM_PRECHECKS:
            raise ValueError(f"rule {self.name!r}: jvm_precheck must be one of "
                             f"{JVM_PRECHECKS} or None, not {self.jvm_precheck!r}")
        object.__setattr__(self, "needs", checked_needs(f"rule {self.name!r}", self.needs))
        if not self.name or "," in self.name:
            raise ValueError(f"rule name {self.name!r} must be non-empty and without commas "
                             "(spark.sparkext.excludedRules is a comma-separated list)")

    def __call__(self, plan: LogicalPlan) -> LogicalPlan:
        return self.fn(plan)

    def active_with(self, catalyst_excluded: frozenset[str]) -> bool:
        """Whether the rule has work to do with these Catalyst rules switched off."""
        return (not self.only_when_catalyst_excludes
                or not catalyst_excluded.isdisjoint(self.only_when_catalyst_excludes))

    @property
    def patterns(self) -> tuple[str, ...]:
        """Catalyst TreePattern names of ``matches``; empty when any class has none."""
        pats = tuple(getattr(c, "_pattern", None) for c in self.matches)
        if not pats or any(p is None for p in pats):
            return ()
        return tuple(dict.fromkeys(p for p in pats if p is not None))  # (none is, here)


#: what a rule wraps: a pure function ``plan -> plan``
RuleFunction = Callable[[LogicalPlan], LogicalPlan]


@overload
def rule(fn: RuleFunction, *, name: str | None = None, matches: Iterable[type] = (),
         position: Position | str = ONCE_PER_QUERY, idempotent: bool = False,
         subsumes: Iterable[str] = (), needs: Iterable[str] = ()) -> Rule: ...
@overload
def rule(fn: None = None, *, name: str | None = None, matches: Iterable[type] = (),
         position: Position | str = ONCE_PER_QUERY, idempotent: bool = False,
         subsumes: Iterable[str] = (), needs: Iterable[str] = ()
         ) -> Callable[[RuleFunction], Rule]: ...
def rule(fn: RuleFunction | None = None, *, name: str | None = None,
         matches: Iterable[type] = (), position: Position | str = ONCE_PER_QUERY,
         idempotent: bool = False, subsumes: Iterable[str] = (), needs: Iterable[str] = ()
         ) -> Rule | Callable[[RuleFunction], Rule]:
    """Decorator: turns ``plan -> plan`` into a :class:`Rule` named after the function."""

    def wrap(f: RuleFunction) -> Rule:
        # (a string is converted by Rule, or refused naming the rule)
        return Rule(name or f.__name__, f, tuple(matches), cast(Position, position),
                    idempotent=idempotent, subsumes=tuple(subsumes), needs=tuple(needs))

    return wrap(fn) if fn is not None else wrap


def as_rule(r: object) -> Rule:
    if isinstance(r, Rule):
        return r
    if callable(r):
        return Rule(getattr(r, "__name__", type(r).__name__), r)
    raise TypeError(f"{r!r} is not a rule: pass a sparkext.Rule or a function plan -> plan")


@dataclass(frozen=True)
class Once:
    max_iterations: int = 1


@dataclass(frozen=True)
class FixedPoint:
    max_iterations: int = 100


@dataclass(frozen=True)
class Batch:
    name: str
    strategy: Once | FixedPoint
    rules: tuple[Rule, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "rules", tuple(as_rule(r) for r in self.rules))


class Cancelled(Exception):
    """The JVM abandoned the call (its timeout passed): the executor stops at the next rule
    boundary instead of running the remaining rules and iterations for nobody. (Which rule
    ran last is what ``on_rule`` was told.)"""


class RuleError(Exception):
    """A rule failed; the plan it was given is left as it was."""

    def __init__(self, rule: str, message: str, cause: BaseException | None = None):
        super().__init__(f"rule '{rule}' {message}")
        self.rule = rule
        self.message = message
        self.cause = cause


#: The reasons recorded by the rule application running in this context (None outside one).
#: A context variable, so calls on several threads each collect their own.
_reasons: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "sparkext_reasons", default=None)


def because(reason: str) -> None:
    """Records why the running rule changes the plan, in one line, e.g.
    ``because("hostname is constant: hostname = 'h1'")``. Kept only when the rule's result
    differs from its input; shown by ``sparkext.explain`` and by Spark's extended explain.
    Outside a rule (a rule called directly, in a test) it does nothing."""
    reasons = _reasons.get()
    if reasons is not None:
        reasons.append(str(reason))


#: The environment variable that makes rules record the facts about rows they rely on to
#: remove a sort or drop sort keys (:class:`OrderFact`), which then travel to the JVM with
#: the answer, for a test suite to check on the rows (sparkext's own suite and fuzzer set
#: it; docs/design.md, "Checking what the analyses conclude").
CHECK_FACTS_ENV = "SPARKEXT_CHECK_ORDER_FACTS"


@dataclass(frozen=True)
class OrderFact:
    """What a rule relied on to remove ``sort`` or drop some of its keys, stated so that
    it can be checked on the rows of ``sort.child``:

    - ``kept is None``: the rows already come in ``sort``'s order (within each partition,
      for a local sort);
    - otherwise a key not in ``kept`` (indices into ``sort.order``) never decides: rows
      that tie on the kept keys before it tie on it too (``kept == ()``: every key has one
      value)."""

    sort: LogicalPlan
    kept: tuple[int, ...] | None = None


#: The facts recorded by the rule application running in this context (None when nobody
#: checks them: outside a rule, or without ``SPARKEXT_CHECK_ORDER_FACTS=1``).
_facts: contextvars.ContextVar[list[OrderFact] | None] = contextvars.ContextVar(
    "sparkext_facts", default=None)


def relies_on(fact: OrderFact) -> None:
    """Records a fact about rows the running rule relies on (kept only when the rule's
    result differs from its input). Free when facts are not being checked."""
    facts = _facts.get()
    if facts is not None:
        facts.append(fact)


@dataclass(frozen=True)
class Step:
    """One rule application that changed the plan (for traces and ``explain``)."""

    batch: str
    rule: str
    before: LogicalPlan
    after: LogicalPlan
    seconds: float
    #: what the rule recorded with :func:`because`
    reasons: tuple[str, ...] = ()


@dataclass
class RuleStats:
    """One rule's figures in one call (the JVM sums them per session and per query)."""

    #: times the executor ran the rule (every fixed-point round that ran it counts)
    invocations: int = 0
    #: invocations whose result differed from their input
    effective: int = 0
    #: wall-clock nanoseconds inside the rule
    nanos: int = 0
    #: the reasons recorded with :func:`because` by its effective invocations
    reasons: list[str] = field(default_factory=list)


@dataclass
class Result:
    plan: LogicalPlan
    #: names of the rules that changed the plan, in first-change order
    changed_by: list[str] = field(default_factory=list)
    #: every change, when tracing
    steps: list[Step] = field(default_factory=list)
    #: one line per batch that stopped at its iteration limit without converging: the
    #: batch, its limit and the rules that still changed the plan
    unconverged: list[str] = field(default_factory=list)
    #: per rule that ran, in first-run order
    stats: dict[str, RuleStats] = field(default_factory=dict)
    #: (rule, fact) for every fact an effective rule application relied on, when checked
    facts: list[tuple[str, OrderFact]] = field(default_factory=list)


def _signature(plan: LogicalPlan) -> list:
    return [(a.expr_id, a.name) for a in plan.output]


#: The environment variable that makes executors check what rules claim of themselves
#: (``Rule.idempotent``, ``Rule.subsumes``): for test suites, as Catalyst's
#: ``Utils.isTesting``. Each check runs a rule once more.
CHECK_CLAIMS_ENV = "SPARKEXT_CHECK_RULE_CLAIMS"


class RuleExecutor:
    """Runs batches of rules to their fixed points, checking each rule's result.

    ``check_claims`` (default: the environment's ``SPARKEXT_CHECK_RULE_CLAIMS=1``) runs an
    idempotent rule again on each plan it changes, and a subsumed rule on the result of the
    batch that skipped it; a rule that changes that plan fails with :class:`RuleError`."""

    def __init__(self, batches: Iterable[Batch], *, check_claims: bool | None = None,
                 record_facts: bool | None = None):
        self.batches = tuple(batches)
        self.check_claims = (os.environ.get(CHECK_CLAIMS_ENV) == "1"
                             if check_claims is None else check_claims)
        #: collect the :class:`OrderFact` s rules rely on (``SPARKEXT_CHECK_ORDER_FACTS=1``)
        self.record_facts = (os.environ.get(CHECK_FACTS_ENV) == "1"
                             if record_facts is None else record_facts)

    @property
    def rules(self) -> tuple[Rule, ...]:
        seen: dict[str, Rule] = {}
        for b in self.batches:
            for r in b.rules:
                seen.setdefault(r.name, r)
        return tuple(seen.values())

    def execute(self, plan: LogicalPlan, excluded: frozenset = frozenset(), *,
                trace: bool = False, on_rule: Callable[[str], None] | None = None,
                catalyst_excluded: frozenset = frozenset(),
                cancelled: Callable[[], bool] | None = None,
                result: Result | None = None) -> Result:
        """Runs the batches on ``plan``. ``cancelled`` is asked before every rule (so between
        fixed-point rounds too): once it is true, :class:`Cancelled` is raised. A rule that
        never returns is not stopped by it (docs/design.md, "Timeouts").

        ``result``, when given, is filled in place (and returned): a caller that catches
        :class:`RuleError` or :class:`Cancelled` still reads the figures of the rules that
        ran before it."""
        if result is None:
            result = Result(plan)
        # rule name -> the plan it last returned as it was. A rule is a pure function of
        # the plan (and of the call's settings, fixed for the call): on that very plan it
        # would answer the same again, so it is not run (a fixed point's confirming round,
        # a rule that two batches share). Catalyst's rules skip such trees the same way
        # (TreeNode.markRuleAsIneffective).
        left_alone: dict[str, LogicalPlan] = {}
        # The JVM sends relation facts only when a rule that needs them may act on the plan
        # (its pre-check passed): without them, the rules that need them cannot act, and are
        # not run (the call was made for other rules). Asked only when such a rule is in
        # the batches: walking the plan parses a request's body, which a call whose rules
        # read nothing never does.
        with_facts = (any(r.needs for b in self.batches for r in b.rules)
                      and any(isinstance(n, Relation) and n.facts_ is not None
                              for n in plan.walk()))
        for batch in self.batches:
            active = [r for r in batch.rules
                      if r.name not in excluded and r.active_with(catalyst_excluded)
                      and (with_facts or not r.needs)]
            subsumed = {name for r in active for name in r.subsumes}
            rules = [r for r in active if r.name not in subsumed]
            if not rules:
                continue
            changed_last: list[str] = []  # the rules that changed the plan in the last round
            for _ in range(batch.strategy.max_iterations):
                before_round = result.plan
                changed_last = []
                for r in rules:
                    if cancelled is not None and cancelled():
                        raise Cancelled
                    before = result.plan
                    if left_alone.get(r.name) is before:
                        continue
                    if r.matches and not before.contains_any(r.matches):
                        continue  # nothing it can change (pattern bits, as on the JVM)
                    if on_rule is not None:
                        on_rule(r.name)
                    self._apply(batch, r, result, trace, self.record_facts)
                    if result.plan is before:
                        left_alone[r.name] = before
                        continue
                    changed_last.append(r.name)
                    if r.idempotent:
                        if self.check_claims:
                            _check_unchanged(r, result.plan, "is declared idempotent")
                        left_alone[r.name] = result.plan
                if result.plan is before_round:
                    break
            else:
                if isinstance(batch.strategy, FixedPoint) and batch.strategy.max_iterations > 1:
                    # As Catalyst's RuleExecutor outside its tests: the plan is used and
                    # the JVM warns. (Not failed under a test suite: a rule that rebuilds
                    # an equal plan every round gives the right rows, and users' suites run
                    # such rules.)
                    message = (f"batch '{batch.name}' reached its limit of "
                               f"{batch.strategy.max_iterations} rounds with the plan still "
                               f"changing: rule(s) {', '.join(changed_last)} changed it in the "
                               "last round (a rule that adds a node each time it runs never "
                               "stops; docs/writing-rules.md, 'Rules that run to a fixed point')")
                    result.unconverged.append(message)
            if self.check_claims:
                for r in active:
                    if r.name in subsumed:
                        by = ", ".join(o.name for o in rules if r.name in o.subsumes)
                        _check_unchanged(r, result.plan, f"is subsumed by {by}")
        return result

    @staticmethod
    def _apply(batch: Batch, r: Rule, result: Result, trace: bool, record_facts: bool) -> None:
        plan = result.plan
        stats = result.stats.setdefault(r.name, RuleStats())
        stats.invocations += 1
        reasons: list[str] = []
        facts: list[OrderFact] | None = [] if record_facts else None
        token = _reasons.set(reasons)
        facts_token = _facts.set(facts)
        start = time.perf_counter_ns()
        try:
            new = r(plan)
        except RecursionError as e:
            raise RuleError(r.name, "recursed too deep (the plan may be very deep)", e) from e
        except Exception as e:
            raise RuleError(r.name, f"raised {type(e).__name__}: {e}", e) from e
        finally:
            elapsed = time.perf_counter_ns() - start
            stats.nanos += elapsed
            _reasons.reset(token)
            _facts.reset(facts_token)
        if new is plan:
            return
        if not isinstance(new, LogicalPlan):
            raise RuleError(r.name, f"returned {type(new).__name__}, not a plan node")
        if _signature(new) != _signature(plan):
            raise RuleError(r.name, f"changed the plan's output from "
                                    f"{list(plan.output)} to {list(new.output)}")
        stats.effective += 1
        stats.reasons.extend(reasons)
        if facts:
            result.facts.extend((r.name, f) for f in facts)
        if r.name not in result.changed_by:
            result.changed_by.append(r.name)
        if trace:
            result.steps.append(Step(batch.name, r.name, plan, new, elapsed / 1e9,
                                     tuple(reasons)))
        result.plan = new


def _check_unchanged(r: Rule, plan: LogicalPlan, claim: str) -> None:
    """Fails ``r`` when it changes ``plan``, of which ``claim`` says it cannot."""
    try:
        again = r(plan)
    except Exception as e:
        raise RuleError(r.name, f"raised {type(e).__name__} while its claim was checked: {e}",
                        e) from e
    if again is not plan:
        raise RuleError(r.name, f"{claim}, but changed this plan:\n{plan.tree_string()}\n"
                                f"into:\n{again.tree_string()}")
