"""Evaluation of expressions whose value is known without a row: the one constant folder
(:func:`compare_constants`) and a three-valued evaluator over sets of possible values
(:func:`evaluate_with_nulls`), by which null rejection is decided (:func:`rejects_nulls`).

    >>> from sparkext import types as T
    >>> from sparkext.expressions import AttributeReference, GreaterThan, IsNull, Literal, Or
    >>> a = AttributeReference("a", T.LONG, True, None, 1)
    >>> rejects_nulls(GreaterThan(a, Literal(5, T.LONG)), frozenset({1}))
    True
    >>> rejects_nulls(Or(IsNull(a), GreaterThan(a, Literal(5, T.LONG))), frozenset({1}))
    False
    >>> compare_constants("LessThan", "Z", "a", T.STRING)   # UTF8_BINARY: by code point
    True

The folder decides a comparison of two known non-NULL values of one type only where
Python's comparison of the values is Spark's: the types Spark keeps as an integer (integral
types, dates, timestamps, intervals, times; the wire carries them as that integer) or a
boolean, and strings of the default collation (UTF8_BINARY), which Spark orders by their
UTF-8 bytes, that is by code point, as Python orders ``str`` (a literal string that is not
valid UTF-8 never reaches the mirror as a Literal: it travels by handle, opaque). Not a
string under another collation (``'A' = 'a'`` in UTF8_LCASE), CHAR or VARCHAR, floating
point (NaN, ``-0.0``), decimals, binary or nested values: those are left undecided.
"""

from __future__ import annotations

from sparkext.expressions import (
    And,
    AttributeReference,
    BinaryComparison,
    CaseWhen,
    Coalesce,
    EqualNullSafe,
    Expression,
    If,
    IsNotNull,
    IsNull,
    Literal,
    Not,
    Or,
    type_or_none,
)
from sparkext.types import DataType

__all__ = ["CONSTANT_COMPARISONS", "compare_constants", "evaluate_with_nulls", "exact_value",
           "rejects_nulls"]


def exact_value(v, t: DataType) -> bool:
    """Whether ``v``, a value of Spark type ``t``, compares in Python as it does in Spark
    (the module's docstring says which): what :func:`compare_constants` decides on, and what
    the evaluator keeps as a known value. NULL (``None``) is one. Decided by the Spark type:
    integral, boolean, date-time, interval and time values are integers, compared as Spark
    compares them; a plain ``string`` (UTF8_BINARY) compares by code point in both. Not
    floating point or decimals (a rule may build a DOUBLE literal from an int), collated
    strings, CHAR or VARCHAR."""
    if v is None:
        return True
    if isinstance(v, str):
        return t.name == "string"
    n = t.name
    return isinstance(v, (bool, int)) and (
        t.is_integral or t.is_datetime or n == "boolean" or n.startswith(("interval ", "time(")))


def compare_constants(op: str, x, y, t: DataType) -> bool | None:
    """``x op y`` for two non-NULL values of type ``t`` (``op`` a Catalyst comparison's class
    name, :data:`CONSTANT_COMPARISONS`), or None where Python's answer might not be Spark's
    (:func:`exact_value`) or the comparison is not one of those."""
    compare = CONSTANT_COMPARISONS.get(op)
    if compare is None or x is None or y is None or type(x) is not type(y) \
            or not (exact_value(x, t) and exact_value(y, t)):
        return None
    return compare(x, y)


# -- null rejection, by evaluation ---------------------------------------------------------
#
# Catalyst's EliminateOuterJoin asks whether a predicate is NULL or false when the
# NULL-padded side's columns are NULL by evaluating it on a row of NULLs. The evaluator
# below does the same over mirrored expressions, in three-valued logic, with what it cannot
# evaluate left open: an expression's result is the set of values it may take (``None`` is
# NULL; ``_ANY`` is any value at all, NULL included).

_ANY = object()
_UNKNOWN = frozenset({_ANY})
_BOOLEANS = frozenset({True, False, None})
#: Catalyst comparison class name -> the comparison on two non-NULL constants.
CONSTANT_COMPARISONS = {"EqualTo": lambda x, y: x == y, "LessThan": lambda x, y: x < y,
                        "LessThanOrEqual": lambda x, y: x <= y,
                        "GreaterThan": lambda x, y: x > y,
                        "GreaterThanOrEqual": lambda x, y: x >= y}


def rejects_nulls(c: Expression, ids: frozenset) -> bool:
    """Whether predicate ``c`` is NULL or false on every row where the columns ``ids`` are
    NULL (whatever the other columns hold), decided by evaluating it with those columns
    NULL, as Catalyst's ``EliminateOuterJoin`` does. What the evaluator cannot decide
    counts as possibly true: such a predicate does not reject."""
    if not c.deterministic:
        return False
    possible = evaluate_with_nulls(c, ids)
    return True not in possible and _ANY not in possible


def evaluate_with_nulls(e: Expression, ids: frozenset) -> frozenset:
    """The values ``e`` may take when the columns ``ids`` are NULL and every other column
    may hold anything: a set of Python values (``None`` for NULL), where ``_ANY`` stands
    for any value. Evaluates literals, NULL checks, AND/OR/NOT, IF, CASE WHEN, COALESCE,
    ``<=>``, comparisons of constants and NULL propagation through null-intolerant
    expressions; anything else may take any value."""
    match e:
        case AttributeReference():
            return frozenset({None}) if e.expr_id in ids else _UNKNOWN
        case Literal(value=v):
            return frozenset({v}) if exact_value(v, e.data_type) else _UNKNOWN
        case IsNull(child=x):
            return _is_null(evaluate_with_nulls(x, ids))
        case IsNotNull(child=x):
            return frozenset(_not(v) for v in _is_null(evaluate_with_nulls(x, ids)))
        case And(left=a, right=b):
            return _combine(_and, evaluate_with_nulls(a, ids), evaluate_with_nulls(b, ids))
        case Or(left=a, right=b):
            return _combine(_or, evaluate_with_nulls(a, ids), evaluate_with_nulls(b, ids))
        case Not(child=x):
            return frozenset(_not(v) for v in _as_booleans(evaluate_with_nulls(x, ids)))
        case If(predicate=p, true_value=t, false_value=f):
            return _branches([(p, t)], f, ids)
        case CaseWhen(branches=branches, else_value=otherwise):
            return _branches(list(branches), otherwise, ids)
        case Coalesce(children_=children):
            return _coalesce(children, ids)
        case EqualNullSafe(left=a, right=b):
            return _null_safe_equal(evaluate_with_nulls(a, ids), evaluate_with_nulls(b, ids))
    if not e.deterministic:
        return _UNKNOWN
    values = [evaluate_with_nulls(c, ids) for c in e.children]
    if e.null_intolerant and any(c == {None} for c in values):
        return frozenset({None})
    if isinstance(e, BinaryComparison) and all(len(c) == 1 for c in values):
        (x,), (y,) = values
        return _compare_constants(e, x, y)
    return _UNKNOWN


def _as_booleans(values: frozenset) -> frozenset:
    return _BOOLEANS if _ANY in values or not values <= _BOOLEANS else values


def _not(v):
    return None if v is None else not v


def _and(a, b):
    if a is False or b is False:
        return False
    return None if a is None or b is None else True


def _or(a, b):
    if a is True or b is True:
        return True
    return None if a is None or b is None else False


def _combine(op, xs: frozenset, ys: frozenset) -> frozenset:
    return frozenset(op(x, y) for x in _as_booleans(xs) for y in _as_booleans(ys))


def _is_null(values: frozenset) -> frozenset:
    if _ANY in values:
        return frozenset({True, False})
    return frozenset(v is None for v in values)


def _branches(branches: list, otherwise: Expression | None, ids: frozenset) -> frozenset:
    """CASE WHEN: each branch's value where its condition may be true, and the rest may go
    on to the next branch (a NULL condition is not true)."""
    out: set = set()
    for condition, value in branches:
        possible = _as_booleans(evaluate_with_nulls(condition, ids))
        if True in possible:
            out |= evaluate_with_nulls(value, ids)
        if not possible - {True}:
            return frozenset(out)
    out |= {None} if otherwise is None else evaluate_with_nulls(otherwise, ids)
    return frozenset(out)


def _coalesce(children, ids: frozenset) -> frozenset:
    out: set = set()
    for c in children:
        values = evaluate_with_nulls(c, ids)
        out |= values - {None}
        if None not in values and _ANY not in values:
            return frozenset(out)
    return frozenset(out | {None})


def _null_safe_equal(xs: frozenset, ys: frozenset) -> frozenset:
    if _ANY in xs or _ANY in ys:
        return frozenset({True, False})
    return frozenset((x is None and y is None) or (
        x is not None and y is not None and type(x) is type(y) and x == y)
        for x in xs for y in ys)


def _compare_constants(e: BinaryComparison, x, y) -> frozenset:
    """Comparison ``e`` of the values ``x`` and ``y``: NULL when either is; else as
    :func:`compare_constants` decides it, or unknown where it does not, where either is
    unknown, or where Python cannot derive the operands' type (an expression a rule built)."""
    if x is None or y is None:
        return frozenset({None})
    if x is _ANY or y is _ANY:
        return _UNKNOWN
    t = type_or_none(e.left)
    if t is None or t != type_or_none(e.right):
        return _UNKNOWN
    decided = compare_constants(type(e).__name__, x, y, t)
    return _UNKNOWN if decided is None else frozenset({decided})
