"""What the statistics rules share: the file relation under a chain of Projects and
partition-column Filters, with the relation's own column for each column asked for."""

from __future__ import annotations

from sparkext.expressions import Alias, AttributeReference, ExprId
from sparkext.plan import Filter, LogicalPlan, Project, Relation
from sparkext.predicates import split_conjuncts


def scan_under(node: LogicalPlan, columns: list[AttributeReference]
                ) -> tuple[Relation, dict[ExprId, AttributeReference]] | None:
    """The file relation under ``node``, with the relation's column for each of
    ``columns`` (by id), through deterministic Projects and partition-column Filters."""
    match node:
        case Project(project_list=exprs, child=child) if node.deterministic:
            below: dict[ExprId, AttributeReference] = {}
            for e in exprs:
                if isinstance(e, AttributeReference):
                    below[e.expr_id] = e
                elif isinstance(e, Alias) and isinstance(e.child, AttributeReference):
                    below[e.expr_id] = e.child
            if any(c.expr_id not in below for c in columns):
                return None
            found = scan_under(child, list({below[c.expr_id].expr_id: below[c.expr_id]
                                             for c in columns}.values()))
            if found is None:
                return None
            relation, mapping = found
            return relation, {c.expr_id: mapping[below[c.expr_id].expr_id] for c in columns}
        case Filter(condition=cond, child=child) if cond.deterministic:
            found = scan_under(child, columns)
            if found is None:
                return None
            parts = {a.expr_id for a in found[0].facts.partition_columns}
            if all(c.references and c.references <= parts for c in split_conjuncts(cond)):
                return found
            return None
        case Relation() if node.facts.files is not None and \
                all(c.expr_id in node.output_ids for c in columns):
            by_id = {a.expr_id: a for a in node.output}
            return node, {c.expr_id: by_id[c.expr_id] for c in columns}
        case _:
            return None
