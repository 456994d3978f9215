"""Facts the analyses read on the plan classes (sparkext.plan): which nodes pass their
child's rows, columns, filters, order, equivalences and unique keys through. Each analysis
kept its own list before; the facts must name exactly the nodes those lists named. Every
class states every fact: a class that leaves one out is refused when it is declared."""

from __future__ import annotations

import pytest

from sparkext import plan as P
from sparkext._tree import MIRRORED, arg, mirror

NODES = sorted((c for c in MIRRORED.values() if issubclass(c, P.LogicalPlan)),
               key=lambda c: c.__name__)

EXPECTED = {
    # constraints: the child's constraints hold (Distinct/Deduplicate have their own case)
    "keeps_child_rows": {"Window", "Generate", "Sort", "GlobalLimit", "LocalLimit", "Sample",
                         "Repartition", "RepartitionByExpression", "RebalancePartitions",
                         "SubqueryAlias"},
    # prune_columns: output is the child's columns
    "keeps_child_columns": {"Filter", "Sort", "GlobalLimit", "LocalLimit", "Sample",
                            "Repartition", "RepartitionByExpression", "RebalancePartitions",
                            "SubqueryAlias"},
    # push_down_filters: a filter moves through unconditionally
    "commutes_with_filters": {"Sort", "Repartition", "RepartitionByExpression",
                              "RebalancePartitions", "SubqueryAlias"},
    # ordering: order (and equivalences) pass through
    "keeps_child_order": {"SubqueryAlias", "Sample", "LocalLimit"},
    # ordering: equivalences pass, order does not
    "keeps_child_equivalences": {"GlobalLimit", "Window", "Repartition",
                                 "RepartitionByExpression", "RebalancePartitions", "Generate",
                                 "Distinct", "Deduplicate"},
    # uniqueness: the child's unique keys hold (Distinct, Deduplicate and Sample without
    # replacement have their own cases; Window's adds its row_number keys first)
    "keeps_child_unique_keys": {"Filter", "Sort", "GlobalLimit", "LocalLimit", "SubqueryAlias",
                                "Repartition", "RepartitionByExpression",
                                "RebalancePartitions", "Window"},
}


@pytest.mark.parametrize("fact", sorted(EXPECTED))
def test_the_nodes_with_a_fact_are_the_ones_the_analysis_listed(fact):
    assert {c.__name__ for c in NODES if getattr(c, fact)} == EXPECTED[fact]


@pytest.mark.parametrize("node", NODES, ids=lambda c: c.__name__)
def test_every_fact_is_a_bool_on_every_node(node):
    for fact in EXPECTED:
        assert isinstance(getattr(node, fact), bool), (node, fact)


def test_order_kept_implies_nothing_more_than_equivalences_kept():
    # An analysis reading keeps_child_order first never also needs the weaker fact.
    assert not any(c.keeps_child_order and c.keeps_child_equivalences for c in NODES)


def test_every_fact_has_its_expected_nodes():
    assert set(EXPECTED) == set(P.NODE_FACTS)


def test_the_base_class_decides_no_fact():
    # A default on LogicalPlan would let a new class pass every test above unexamined.
    assert not any(hasattr(P.LogicalPlan, fact) for fact in P.NODE_FACTS)


@pytest.mark.parametrize("node", NODES, ids=lambda c: c.__name__)
def test_every_class_states_each_fact_itself(node):
    # Not inherited from another concrete class: each node is its own decision.
    assert all(fact in vars(node) for fact in P.NODE_FACTS), node


def test_a_plan_class_that_leaves_out_its_facts_is_refused_naming_them():
    with pytest.raises(TypeError, match=r"Undecided does not declare keeps_child_rows, "
                                        r"keeps_child_columns, .*keeps_child_unique_keys: "
                                        r"every plan class states each"):
        @mirror("org.example.Undecided")
        class Undecided(P.LogicalPlan):
            child: P.LogicalPlan = arg("p")
    assert "Undecided" not in MIRRORED


def test_a_plan_class_that_leaves_out_one_fact_is_refused_naming_it():
    with pytest.raises(TypeError, match=r"HalfDecided does not declare "
                                        r"keeps_child_unique_keys: "):
        @mirror("org.example.HalfDecided")
        class HalfDecided(P.LogicalPlan):
            keeps_child_rows = keeps_child_columns = commutes_with_filters = False
            keeps_child_order = keeps_child_equivalences = False

            child: P.LogicalPlan = arg("p")
    assert "HalfDecided" not in MIRRORED


def test_a_fact_must_be_a_bool():
    with pytest.raises(TypeError, match=r"Vague declares keeps_child_order as None: "
                                        r"every plan class states each of .*True or False"):
        @mirror("org.example.Vague")
        class Vague(P.LogicalPlan):
            keeps_child_rows = keeps_child_columns = commutes_with_filters = False
            keeps_child_equivalences = keeps_child_unique_keys = False
            keeps_child_order = None

            child: P.LogicalPlan = arg("p")
    assert "Vague" not in MIRRORED
