"""Facts the analyses read on the plan classes (sparkext.plan): which nodes pass their
child's rows, columns, filters, order and equivalences through. Each analysis kept its own
list before; the facts must name exactly the nodes those lists named."""

from __future__ import annotations

import pytest

from sparkext import plan as P
from sparkext._tree import MIRRORED

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
