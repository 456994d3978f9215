"""Pattern bits on mirror nodes (as Catalyst's TreePatternBits): a subtree that holds no
node a transform or rule matches is skipped whole, and that must never skip a node that
does match."""

from __future__ import annotations

from sparkext import types as T
from sparkext.expressions import AttributeReference, Expression, GreaterThan, lit
from sparkext.optimizer import Batch, FixedPoint, Rule, RuleExecutor
from sparkext.plan import Filter, Join, LogicalPlan, Project, Relation, Sort

A = AttributeReference("a", T.INT, True, None, 1)
RELATION = Relation("LocalRelation", (A,), 1, "t")


def filters(n: int, child: LogicalPlan = RELATION) -> LogicalPlan:
    plan = child
    for _ in range(n):
        plan = Filter(GreaterThan(A, lit(1)), plan)
    return plan


def test_bits_tell_which_classes_a_tree_holds():
    plan = Project((A,), filters(2))
    assert plan.contains_any((Filter,)) and plan.contains_any((Relation,))
    assert not plan.contains_any((Sort, Join))
    assert not RELATION.contains_any((Filter,))
    # a base class stands for its subclasses
    assert plan.contains_any((LogicalPlan,))
    assert GreaterThan(A, lit(1)).contains_any((AttributeReference,))
    assert GreaterThan(A, lit(1)).contains_any((Expression,))


def test_bits_of_a_plan_deeper_than_the_python_stack():
    assert filters(5000).contains_any((Relation,))


def test_a_lazily_decoded_node_has_its_class_bit():
    from sparkext._tree import lazy_node
    child = filters(1)

    def fill(cls, raw):
        yield from (("order", ()), ("is_global", True), ("child", child))
    node = lazy_node(Sort, fill, None)
    assert type(node) is not Sort and node.contains_any((Sort,))
    assert node.contains_any((Filter,)) and not node.contains_any((Join,))


def test_a_pruned_transform_does_not_enter_a_subtree_without_the_class():
    seen: list[LogicalPlan] = []

    def fn(node: LogicalPlan) -> LogicalPlan:
        seen.append(node)
        return node

    plan = Project((A,), Project((A,), RELATION))
    assert plan.transform_up(fn, only_into=(Filter,)) is plan
    assert plan.transform_down(fn, only_into=(Filter,)) is plan
    assert seen == []
    both = Project((A,), filters(2, Project((A,), RELATION)))
    both.transform_up(fn, only_into=(Filter,))
    assert any(isinstance(n, Filter) for n in seen)
    # the subtree below the last Filter holds no Filter: never entered
    assert not any(isinstance(n, Relation) for n in seen)


def test_the_executor_does_not_call_a_rule_whose_classes_the_plan_lacks():
    calls: list[LogicalPlan] = []

    def peel(plan: LogicalPlan) -> LogicalPlan:
        return plan.child if isinstance(plan, Filter) else plan

    def sorts_seen(plan: LogicalPlan) -> LogicalPlan:
        calls.append(plan)
        return plan

    batch = Batch("b", FixedPoint(10), (Rule("peel", peel),
                                        Rule("sorts_seen", sorts_seen, matches=(Sort,))))
    # three rounds change the plan; none of them holds a Sort
    assert RuleExecutor([batch]).execute(filters(3)).plan is RELATION
    assert calls == []
    sorted_plan = Sort((), True, filters(1))
    RuleExecutor([batch]).execute(sorted_plan)
    assert calls == [sorted_plan]
