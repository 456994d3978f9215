"""A small Python optimizer rule, used by the quickstart and the tests.

``swap_filter_below_project`` moves a Filter below the Project under it, when the filter
reads only columns the Project's input already has and both are deterministic:

    Filter (id > 2)                    Project [id, name, (age * 2) AS a2]
    +- Project [id, name, ...]   ==>   +- Filter (id > 2)
       +- Relation people                 +- Relation people

Catalyst's own PushDownPredicates does this (and much more); the quickstart switches it
off to show a Python rule doing the work.
"""

from __future__ import annotations

from sparkext import rule
from sparkext.plan import Filter, Project


@rule(matches=(Filter,))
def swap_filter_below_project(plan):
    def swap(node):
        match node:
            case Filter(condition=cond, child=Project(project_list=exprs, child=below)) if (
                    cond.deterministic
                    and all(e.deterministic for e in exprs)
                    and cond.references <= below.output_ids):
                return Project(exprs, Filter(cond, below))
            case _:
                return node
    return plan.transform_down(swap)
