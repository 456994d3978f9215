"""Rules that exercise the bridge rather than optimise.

Run them on your own queries after a Spark upgrade: ``read_everything`` and ``copy_nodes``
must leave every plan as it is, ``rebuild_everything`` must give plans Spark accepts and
that return the same rows (sparkext's own round-trip tests and benchmarks use them the
same way).
"""

from __future__ import annotations

import json

from sparkext.expressions import AttributeReference
from sparkext.plan import Relation


def read_everything(plan):
    """Identity, after reading every node and every expression: what a rule that looks at
    the whole plan pays for the mirror (decoding is lazy, so a rule that reads nothing
    pays almost nothing)."""
    for node in plan.walk():
        for e in node.expressions:
            for _ in e.walk():
                pass
    return plan


def copy_nodes(plan):
    """Identity in effect, but every plan node is a new object: the JVM rebuilds each node
    from Catalyst's constructors while its expressions and leaves come back by reference."""
    return plan.transform_up(lambda n: n if isinstance(n, Relation) else n.copy())


def _fresh_attribute(a: AttributeReference) -> AttributeReference:
    # Re-serialised metadata text (same content) keeps the encoder from recognising the
    # attribute, so the JVM builds it from scratch too.
    return a.copy(metadata=json.dumps(json.loads(a.metadata or "{}"), indent=1))


def _rebuild_expression(e):
    return e.transform_up(
        lambda x: _fresh_attribute(x) if isinstance(x, AttributeReference) else x.copy())


def rebuild_everything(plan):
    """Every mirrored node and expression rebuilt from its fields: nothing goes back by
    reference except relations and opaque objects (which only Spark can build)."""
    def node(n):
        if isinstance(n, Relation):
            return n
        return n.map_expressions(_rebuild_expression).copy()
    return plan.transform_up(node)
