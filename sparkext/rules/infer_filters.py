"""infer_filters: add the predicates a plan's constraints imply but it does not check yet.

Catalyst's ``InferFiltersFromConstraints`` has to be switched off together with Catalyst's
pushdown (it copies one-sided join conjuncts into the inputs), so sparkext carries its
own. The constraints come from :mod:`sparkext.analysis.constraints`:

    Filter (a = b AND a = 5)                  Filter (isnotnull(a) AND isnotnull(b)
    +- Relation [a, b]                 ==>            AND a = b AND a = 5 AND b = 5)
                                               +- Relation [a, b]

    Join Inner (l.k = r.k)                    Join Inner (l.k = r.k)
    :- Relation l [k]                  ==>    :- Filter isnotnull(k)
    +- Relation r [k]                         :  +- Relation l [k]
                                              +- Filter isnotnull(k)
                                                 +- Relation r [k]

What is inferred: ``IsNotNull`` for every column a null-intolerant predicate reads (a
NULL there makes the predicate NULL, which a filter drops), including inner and semi join
keys; and constants and other predicates carried across column equalities
(``a = b AND a = 5`` gives ``b = 5``).

Where: a Filter gets the predicates its own constraints imply beyond its child's and its
own conjuncts: a column's ``IsNotNull`` **before** its conjuncts (as Catalyst puts it: it
cannot raise, and it stops what follows a guard that is NULL rather than false; unless a
conjunct is non-deterministic), the rest **appended** after them (they hold wherever those are true, so they can never raise on a
row the filter keeps). A join's input gets the predicates the
join implies over that input's columns, on the sides whose rows may be dropped: both for
inner and left semi joins, the right for left outer and anti joins, the left for right
outer joins, none for full outer joins. A predicate is added only where it is new (not
among the target's constraints), so the rule reaches a fixed point; push_down_filters then
moves what was added.

What is inferred is simplified first, because sparkext runs after Catalyst's
simplification batches and nothing folds it later
(:func:`sparkext.analysis.constraints.simplify_inferred`): a comparison of an expression with
itself, or of two literals, is decided, and a predicate that could only be kept by
evaluating something that may raise (``(v * -730) >= (v * -730)``) is dropped. Inference
never adds an evaluation the query did not have.

    Filter (a = b AND b > a)          ==>   Filter false
    +- Relation [a, b]                      +- Relation [a, b]

A contradiction (restating ``b > a`` across ``a = b`` gives ``b > b``: false or NULL for
every row) makes a Filter ``false`` as a whole (none of its conjuncts is evaluated, as
Catalyst's empty relation evaluates none), and puts ``Filter false`` on the inputs of a
join it implies no row for, where the table above lets that input lose rows.
"""

from __future__ import annotations

from sparkext.analysis.constraints import (
    Constraints,
    constraints,
    is_false,
    with_inferences,
)
from sparkext.expressions import FALSE, AttributeReference, Expression, IsNotNull
from sparkext.plan import Filter, Join, LogicalPlan
from sparkext.predicates import (
    conjoin,
    conjunction,
    contains_correlated_subquery,
    split_conjuncts,
)

__all__ = ["infer_filters"]

def infer_filters(plan: LogicalPlan) -> LogicalPlan:
    """Adds implied predicates; returns ``plan`` itself when nothing new is implied."""
    return plan.transform_up(_infer)


def _infer(node: LogicalPlan) -> LogicalPlan:
    match node:
        case Filter(condition=cond, child=child):
            if any(is_false(c) for c in constraints(node)):
                # No row can pass: the filter is false, and evaluates none of its
                # conjuncts (one of them could raise on a row it was never going to keep).
                return node if is_false(cond) else node.copy(condition=FALSE)
            conjuncts = split_conjuncts(cond)
            known = constraints(child).union(conjuncts)
            new = [c for c in constraints(node) if c not in known]
            if not new:
                return node
            # A column's NULL test goes first, as Catalyst puts it: it cannot raise, and it
            # is what stops the conjuncts after a guard that is NULL rather than false
            # (``k BETWEEN -2 AND 2 AND i + 10 > 0``: for a NULL k the guard is NULL, AND
            # goes on to ``i + 10``, which may overflow where the query, filtering by k
            # first, never computed it). Not before a non-deterministic conjunct: that one
            # must see the rows it saw (``rand() > 0.5`` draws once per row reaching it).
            # The rest goes after.
            if all(c.deterministic for c in conjuncts):
                first = [c for c in new if _null_test_of_a_column(c)]
            else:
                first = []
            rest = [c for c in new if not any(c is f for f in first)]
            return node.copy(condition=conjoin(first + conjuncts + rest))
        case Join(left=left, right=right, join_type=jt, condition=cond):
            # Which inputs may lose rows that cannot match (joins.JoinFacts.infer_into).
            to_left, to_right = jt.facts.infer_into
            if not (to_left or to_right):
                return node
            implied = _join_implied(left, right, cond)
            new_left = _add_new(left, implied) if to_left else left
            new_right = _add_new(right, implied) if to_right else right
            if new_left is left and new_right is right:
                return node
            return node.copy(left=new_left, right=new_right)
        case _:
            return node


def _null_test_of_a_column(c: Expression) -> bool:
    return isinstance(c, IsNotNull) and isinstance(c.child, AttributeReference)


def _join_implied(left, right, cond) -> Constraints:
    on = [c for c in split_conjuncts(cond)
          if c.deterministic and not contains_correlated_subquery(c)]
    return with_inferences([*constraints(left), *constraints(right), *on])


def _add_new(side: LogicalPlan, implied: Constraints) -> LogicalPlan:
    known = constraints(side)
    ids = side.output_ids
    if any(is_false(c) for c in implied):
        # The join keeps no row, so this input may lose all of its own.
        return side if any(is_false(c) for c in known) else Filter(FALSE, side)
    new = [c for c in implied
           if c.references and c.references <= ids and c.deterministic and c not in known]
    return Filter(conjunction(new), side) if new else side
