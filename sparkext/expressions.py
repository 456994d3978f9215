"""The mirror of Catalyst expressions.

Every class here is a frozen dataclass whose fields follow the Catalyst constructor, so a
rule can build new expressions with Spark's own semantics: the JVM turns them into the
very Catalyst classes named in ``@mirror``. Anything else arrives as
:class:`OpaqueExpression`: rules can look at its children, type and determinism and replace
its children, but cannot change the expression itself.

Attributes compare by structure; to ask "is this the same column", compare ``expr_id``
(or use :func:`sparkext.predicates.references`, which yields ids).

Why one module of 1,200 lines: it is the vocabulary a rule imports (``from
sparkext.expressions import ...``), one short class per Catalyst expression with no logic
beyond its own facts; split, a rule author would have to know which file holds which class,
and the JVM's mirror registration reads every ``@mirror`` class from here.
"""

from __future__ import annotations

import decimal
import itertools
import operator
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from sparkext import timezones
from sparkext import types as T
from sparkext._tree import CacheSlot, TreeNode, arg, fact, mirror
from sparkext.kinds import Item, Kind
from sparkext.types import DataType
from sparkext.wire import WireString

_C = "org.apache.spark.sql.catalyst.expressions."

# Process-wide on purpose, not per call: a FreshId must never equal another one that
# stands for a different column, and a rule may keep expressions (with their FreshIds)
# from one call to the next (a memo, a module constant); numbers restarted per call would
# then make two different new columns one. The counter holds no call's state: the JVM maps
# each number to a new ExprId per answer only. ``next`` on itertools.count is atomic under
# the GIL, so concurrent calls on several threads still get distinct numbers.
_fresh_ids = itertools.count(1)


@dataclass(frozen=True, slots=True)
class FreshId:
    """An expression id the JVM has yet to allocate (Python never invents real ids).

    Every ``FreshId`` in one rewritten plan becomes one new Catalyst ``ExprId``; using the
    same ``FreshId`` in an :class:`Alias` and in the attributes that refer to it keeps them
    the same column.
    """

    n: int = field(default_factory=lambda: next(_fresh_ids))

    def __repr__(self) -> str:
        return f"new{self.n}"


ExprId = int | FreshId


@dataclass(frozen=True, slots=True)
class Value:
    """A constructor argument sparkext does not model (a hint, an eval context, a sample
    method...): kept on the JVM by handle, shown here as Spark's own text."""

    text: str
    # Two values that print the same are the same value: handles differ per occurrence.
    handle: int | None = field(default=None, compare=False)

    def __repr__(self) -> str:
        return self.text


#: How many declared functions deep the analyses follow a chain (``f(g(h(x)))``): deeper
#: chains are not met in practice, and the bound keeps every walk finite.
_MAX_CHAIN = 8


@dataclass(frozen=True, slots=True)
class OrderingFact:
    """What an expression does to the order of its rows' values: rows in the order of
    ``argument`` are in the order of the expression too (DataFusion's
    ``ExprProperties.sort_properties``, from ``PhysicalExpr::get_properties``).

    ``increasing``: in ``argument``'s direction (False: in the reverse one). ``strict``: also
    injective, so rows that tie on the expression tie on ``argument`` and the keys after
    it still hold (``a + 1``), not merely order-preserving (``date_trunc('hour', ts)`` maps
    a whole hour to one value). ``nulls_stay``: a NULL argument, and only a NULL
    argument, gives NULL, so NULL rows stay at the end of the order they were at, whatever
    the direction (Spark's ASC is NULLS FIRST and DESC NULLS LAST, so ``-x`` over ``x``
    ASC is DESC NULLS FIRST).
    """

    argument: Expression
    increasing: bool
    strict: bool
    nulls_stay: bool = True

    def then(self, outer: OrderingFact) -> OrderingFact:
        """The fact of ``outer``'s function applied to this one's expression, in terms of
        this one's argument: directions multiply, strictness and NULL placement hold only
        when both hold (``-(a + 1)``: decreasing in ``a``, strictly)."""
        return OrderingFact(self.argument, self.increasing == outer.increasing,
                            self.strict and outer.strict, self.nulls_stay and outer.nulls_stay)


@dataclass(frozen=True, slots=True)
class Expression(TreeNode):
    """Base of all mirrored expressions.

    ``_type`` and ``_nullable`` are what Catalyst said of the expression when the plan
    arrived; classes that can tell their own type (predicates, casts, literals) do not
    need them, the others (arithmetic, functions) answer from them.
    """

    _type: DataType | None = field(default=None, kw_only=True, compare=False, repr=False)
    _nullable: bool | None = field(default=None, kw_only=True, compare=False, repr=False)
    _null_intolerant: bool | None = field(default=None, kw_only=True, compare=False, repr=False)

    _child_item = Item.EXPR
    _args: ClassVar[tuple[tuple[str, Kind], ...]] = ()
    #: Whether a NULL input always gives a NULL result (Catalyst's ``nullIntolerant``), for
    #: classes built in Python; decoded expressions carry what Catalyst said.
    null_intolerant_class = False
    #: The result type when it does not depend on the inputs (predicates).
    _fixed_type: ClassVar[DataType | None] = None

    @property
    def data_type(self) -> DataType:
        if self._fixed_type is not None:
            return self._fixed_type
        if self._type is not None:
            return self._type
        return self._derive_type()

    def _derive_type(self) -> DataType:
        raise TypeError(f"the type of a new {type(self).__name__} is not known in Python; "
                        "build it from expressions that came from Spark, or pass _type=")

    @property
    def nullable(self) -> bool:
        if self._nullable is not None:
            return self._nullable
        return any(c.nullable for c in self.children)

    @fact
    def deterministic(self) -> bool:
        return all(c.deterministic for c in self.children)

    @property
    def null_intolerant(self) -> bool:
        """True when any NULL input makes the result NULL (so the input is not NULL wherever
        the result is true): the basis of inferring ``IsNotNull``."""
        if self._null_intolerant is not None:
            return self._null_intolerant
        return self.null_intolerant_class

    @property
    def foldable(self) -> bool:
        ch = self.children
        return bool(ch) and all(c.foldable for c in ch)

    def ordering_fact(self) -> OrderingFact | None:
        """What this expression does to the order of one of its arguments, under the
        current call's conditions (ANSI mode on the expression, the session time zone
        through :mod:`sparkext.timezones`); None: nothing (not monotonic, or not known to
        be). A class with ordering semantics overrides this, and only this, to say so; the
        ordering analysis (:mod:`sparkext.analysis.ordering`) reads nothing else. Not cached: the
        time zone's facts belong to the call."""
        return None

    def strict_arguments(self) -> tuple[Expression, ...]:
        """The arguments this expression is a strict, NULL-keeping function of, nearest
        first, through a chain of declared facts (``3 * a - 7``: ``3 * a``, then ``a``).
        Strictness composes (DataFusion's ``preserves_lex_ordering``): an injective
        function of an injective function is injective, so rows that tie on the
        expression tie on each of these too. The chain stops at the first function that
        is only order-preserving (``a + 1`` inside ``date_trunc``: nothing), or that puts
        NULLs somewhere else."""
        out: list[Expression] = []
        e: Expression = self
        while len(out) < _MAX_CHAIN:
            fact = e.ordering_fact()
            if fact is None or not (fact.strict and fact.nulls_stay):
                break
            e = fact.argument
            out.append(e)
        return tuple(out)

    @fact
    def references(self) -> frozenset:
        """The expression ids of the attributes this expression reads."""
        return frozenset().union(*(c.references for c in self.children))

    def semantic_key(self) -> Hashable:
        """A hashable key equal for expressions that compute the same thing: attributes are
        identified by id only (not name, qualifier or nullability), as Catalyst's
        ``semanticEquals`` does. Kept on the node: rules compare predicates by it tens of
        thousands of times a call, so the hit path is one dictionary read here."""
        try:
            return self._cache[_SEMANTIC_KEY.key]
        except (AttributeError, KeyError):
            pass
        return _SEMANTIC_KEY.get(self)

    def _semantic_key(self) -> Hashable:
        """What :meth:`semantic_key` keeps (a class with a key of its own overrides this)."""
        return (type(self).__name__,) + tuple(_semantic(getattr(self, f)) for f, _ in self._args)

    def semantic_equals(self, other: Expression) -> bool:
        return self.semantic_key() == other.semantic_key()

    def __repr__(self) -> str:
        return self.sql()

    def sql(self) -> str:
        args = ", ".join(_show(getattr(self, n)) for n, k in self._args if k.shown)
        return f"{_display_name(self)}({args})"


#: :meth:`Expression.semantic_key` of each expression (its class's ``_semantic_key``)
_SEMANTIC_KEY: CacheSlot[Hashable] = CacheSlot("semantic_key", lambda e: e._semantic_key())


def _display_name(e: Expression) -> str:
    return type(e).__name__.lower()


def _show(v: object) -> str:
    if isinstance(v, tuple):
        return "[" + ", ".join(_show(x) for x in v) + "]"
    if v is None:
        return "None"
    return repr(v) if not isinstance(v, str) else v


def _semantic(v: object) -> Hashable:
    if isinstance(v, Expression):
        return v.semantic_key()
    if isinstance(v, tuple):
        return tuple(_semantic(x) for x in v)
    return v


def type_or_none(e: Expression) -> DataType | None:
    """``e``'s type, or None when it is not known in Python (a new expression)."""
    try:
        return e.data_type
    except TypeError:
        return None


def _ordered_type(e: Expression) -> bool:
    """Whether ``e``'s values are integral, decimal, date or timestamp: the types whose
    order arithmetic keeps (floating point NaN and -0.0 order in ways it does not)."""
    t = type_or_none(e)
    return t is not None and (t.is_integral or t.is_decimal or t.is_datetime)


def _literal_value(e: Expression) -> Any:
    """The value of a non-NULL literal, else None."""
    return e.value if isinstance(e, Literal) and e.value is not None else None



# ---------------------------------------------------------------------------------------------
# Leaves: attributes and literals


@mirror(_C + "AttributeReference", special=True, pattern="ATTRIBUTE_REFERENCE")
class AttributeReference(Expression):
    """A column. ``expr_id`` identifies it across the plan; the JVM keeps the original
    Catalyst object whenever it comes back unchanged."""

    name: str = arg("s")
    data_type_: DataType = arg("t")
    nullable_: bool = arg("b")
    metadata: str | None = arg("s?")
    expr_id: ExprId = arg("id")
    qualifier: tuple[str, ...] = arg("ss", default=())

    @property
    def data_type(self) -> DataType:
        return self.data_type_

    @property
    def nullable(self) -> bool:
        return self.nullable_

    @property
    def deterministic(self) -> bool:
        return True

    @property
    def foldable(self) -> bool:
        return False

    @property
    def references(self) -> frozenset:
        return frozenset((self.expr_id,))

    def semantic_key(self) -> Hashable:
        return ("attr", self.expr_id)

    def with_nullability(self, nullable: bool) -> AttributeReference:
        return self if nullable == self.nullable_ else self.copy(nullable_=nullable)

    def with_qualifier(self, qualifier: Iterable[str]) -> AttributeReference:
        q = tuple(qualifier)
        return self if q == self.qualifier else self.copy(qualifier=q)

    def to_attribute(self) -> AttributeReference:
        return self

    def sql(self) -> str:
        return f"{self.name}#{self.expr_id}"


@mirror(_C + "Literal", special=True, pattern="LITERAL")
class Literal(Expression):
    """A constant. ``value`` uses Spark's internal representation: ints for
    byte/short/int/long/date (days)/timestamp (microseconds)/intervals, ``float``,
    ``str``, ``bytes``, ``decimal.Decimal``, tuples for arrays and structs,
    ``sparkext.codec.MapValue`` for maps, ``None`` for NULL. :func:`lit` builds one from a
    Python value. A value its type cannot hold (2**31 for INT) is refused when the plan is
    sent to Spark, and the rule's rewrite with it."""

    value: Any = arg("v")
    data_type_: DataType = arg("t")

    @property
    def data_type(self) -> DataType:
        return self.data_type_

    @property
    def nullable(self) -> bool:
        return self.value is None

    @property
    def deterministic(self) -> bool:
        return True

    @property
    def foldable(self) -> bool:
        return True

    @property
    def references(self) -> frozenset:
        return frozenset()

    def semantic_key(self) -> Hashable:
        return ("lit", _hashable(self.value), self.data_type_)

    def sql(self) -> str:
        if self.value is None:
            return "null"
        if self.data_type_.is_string:
            return repr(self.value)
        return str(self.value)


def _hashable(v: object) -> Hashable:
    if isinstance(v, list):
        return tuple(_hashable(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _hashable(x)) for k, x in v.items()))
    return v


def lit(value: Any, data_type: DataType | None = None) -> Literal:
    """A :class:`Literal` from a Python value; the type is inferred when not given."""
    import datetime
    import decimal as dec

    if data_type is not None:
        return Literal(value, data_type)
    if value is None:
        return Literal(None, T.NULL)
    if isinstance(value, bool):
        return Literal(value, T.BOOLEAN)
    if isinstance(value, int):
        return Literal(value, T.INT if -2**31 <= value < 2**31 else T.LONG)
    if isinstance(value, float):
        return Literal(value, T.DOUBLE)
    if isinstance(value, str):
        return Literal(value, T.STRING)
    if isinstance(value, bytes):
        return Literal(value, T.BINARY)
    if isinstance(value, dec.Decimal):
        sign, digits, exp = value.as_tuple()
        if not isinstance(exp, int):  # NaN, Infinity: no SQL decimal holds them
            raise TypeError(f"lit(): no Spark SQL value for {value!r}")
        scale = max(0, -exp)
        return Literal(value, T.decimal(max(len(digits), scale, 1), scale))
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            raise ValueError("lit(): give a timezone-aware datetime (TIMESTAMP is an instant)")
        delta = value - datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
        return Literal(delta // datetime.timedelta(microseconds=1), T.TIMESTAMP)
    if isinstance(value, datetime.date):
        return Literal((value - datetime.date(1970, 1, 1)).days, T.DATE)
    raise TypeError(f"lit(): no Spark SQL type for {type(value).__name__}; pass data_type=")


TRUE = Literal(True, T.BOOLEAN)
FALSE = Literal(False, T.BOOLEAN)

# ---------------------------------------------------------------------------------------------
# Names


@mirror(_C + "Alias", special=True, pattern="ALIAS")
class Alias(Expression):
    """``child AS name``. A new alias gets a new column: leave ``expr_id`` as a fresh
    :class:`FreshId` (the default) and use :meth:`to_attribute` to refer to it."""

    child: Expression = arg("e")
    name: str = arg("s")
    expr_id: ExprId = arg("id", default_factory=FreshId)
    qualifier: tuple[str, ...] = arg("ss", default=())
    explicit_metadata: str | None = arg("s?", default=None)
    non_inheritable_metadata_keys: tuple[str, ...] = arg("ss", default=())

    @property
    def data_type(self) -> DataType:
        return self.child.data_type

    @property
    def nullable(self) -> bool:
        return self.child.nullable if self._nullable is None else self._nullable

    def to_attribute(self) -> AttributeReference:
        return _ALIAS_ATTRIBUTE.get(self)

    def _attribute(self) -> AttributeReference:
        """What :meth:`to_attribute` keeps."""
        try:
            dt = self.data_type
        except TypeError:
            # A new alias of an expression whose type Python cannot tell: the
            # attribute has no type either (None), as the alias had none.
            dt = self._type  # type: ignore[assignment]
        return AttributeReference(self.name, dt, self.nullable, None, self.expr_id,
                                  self.qualifier)

    def semantic_key(self) -> Hashable:
        return ("alias", self.child.semantic_key(), self.name, self.expr_id)

    def sql(self) -> str:
        return f"{self.child.sql()} AS {self.name}#{self.expr_id}"


#: :meth:`Alias.to_attribute`: one attribute object per alias
_ALIAS_ATTRIBUTE: CacheSlot[AttributeReference] = CacheSlot("alias_attribute",
                                                            lambda a: a._attribute())


def to_attribute(e: Expression) -> AttributeReference:
    """The output column of a named expression (an attribute or an alias)."""
    if isinstance(e, (AttributeReference, Alias)):
        return e.to_attribute()
    if isinstance(e, OpaqueExpression) and e.attribute is not None:
        return e.attribute
    raise TypeError(f"{e!r} is not a named expression")


# ---------------------------------------------------------------------------------------------
# Shapes shared by many classes (their fields, in Catalyst's constructor order)


@dataclass(frozen=True, slots=True, repr=False)
class UnaryExpression(Expression):
    child: Expression = arg("e")


@dataclass(frozen=True, slots=True, repr=False)
class BinaryExpression(Expression):
    left: Expression = arg("e")
    right: Expression = arg("e")


@dataclass(frozen=True, slots=True, repr=False)
class NaryExpression(Expression):
    children_: tuple[Expression, ...] = arg("es")


@dataclass(frozen=True, slots=True, repr=False)
class UnaryWithFailOnError(UnaryExpression):
    """``child`` plus Catalyst's ANSI flag (``failOnError``)."""

    fail_on_error: bool = arg("b", default=False)


class Predicate(Expression):
    __slots__ = ()
    _fixed_type = T.BOOLEAN


class NeverNull(Expression):
    __slots__ = ()

    @property
    def nullable(self) -> bool:
        return False


class SameTypeAsChild(Expression):
    __slots__ = ()

    def _derive_type(self) -> DataType:
        return self.children[0].data_type


class BinaryOperator(BinaryExpression):
    __slots__ = ()
    symbol = "?"

    def sql(self) -> str:
        return f"({self.left.sql()} {self.symbol} {self.right.sql()})"


class BinaryComparison(BinaryOperator, Predicate):
    null_intolerant_class = True
    __slots__ = ()
    # The class of the same comparison with its operands swapped (``a < b`` is ``b > a``).
    swapped: ClassVar[str]

    def _semantic_key(self) -> Hashable:
        """Equal for both spellings of a comparison (``a = b`` and ``b = a``, ``a < b`` and
        ``b > a``), as Catalyst's canonicalization makes them: a set of predicates keyed by
        meaning must not hold one fact twice (restating ``a = b`` over ``b = a`` would give
        the useless ``a = a``)."""
        left, right = self.left.semantic_key(), self.right.semantic_key()
        return min((type(self).__name__, left, right), (self.swapped, right, left), key=repr)


# ---------------------------------------------------------------------------------------------
# Predicates


@mirror(_C + "And", pattern="AND")
class And(BinaryOperator, Predicate):
    symbol = "AND"


@mirror(_C + "Or", pattern="OR")
class Or(BinaryOperator, Predicate):
    symbol = "OR"


@mirror(_C + "Not", pattern="NOT")
class Not(UnaryExpression, Predicate):
    null_intolerant_class = True
    def sql(self) -> str:
        return f"NOT {self.child.sql()}"


@mirror(_C + "EqualTo", pattern="BINARY_COMPARISON")
class EqualTo(BinaryComparison):
    symbol = "="
    swapped = "EqualTo"


@mirror(_C + "EqualNullSafe", pattern="BINARY_COMPARISON")
class EqualNullSafe(BinaryComparison, NeverNull):
    symbol = "<=>"
    swapped = "EqualNullSafe"
    null_intolerant_class = False


@mirror(_C + "LessThan", pattern="BINARY_COMPARISON")
class LessThan(BinaryComparison):
    symbol = "<"
    swapped = "GreaterThan"


@mirror(_C + "LessThanOrEqual", pattern="BINARY_COMPARISON")
class LessThanOrEqual(BinaryComparison):
    symbol = "<="
    swapped = "GreaterThanOrEqual"


@mirror(_C + "GreaterThan", pattern="BINARY_COMPARISON")
class GreaterThan(BinaryComparison):
    symbol = ">"
    swapped = "LessThan"


@mirror(_C + "GreaterThanOrEqual", pattern="BINARY_COMPARISON")
class GreaterThanOrEqual(BinaryComparison):
    symbol = ">="
    swapped = "LessThanOrEqual"


@mirror(_C + "IsNull", pattern="NULL_CHECK")
class IsNull(UnaryExpression, Predicate, NeverNull):
    def sql(self) -> str:
        return f"isnull({self.child.sql()})"


@mirror(_C + "IsNotNull", pattern="NULL_CHECK")
class IsNotNull(UnaryExpression, Predicate, NeverNull):
    def sql(self) -> str:
        return f"isnotnull({self.child.sql()})"


@mirror(_C + "IsNaN")
class IsNaN(UnaryExpression, Predicate, NeverNull):
    pass


@mirror(_C + "In", pattern="IN")
class In(Predicate):
    value: Expression = arg("e")
    list: tuple[Expression, ...] = arg("es")

    def sql(self) -> str:
        return f"{self.value.sql()} IN ({', '.join(e.sql() for e in self.list)})"


@mirror(_C + "InSet", special=True, pattern="INSET")
class InSet(Predicate):
    """``child IN (constants)``; ``hset`` holds the values as :class:`Literal` values do."""

    child: Expression = arg("e")
    hset: tuple[Any, ...] = arg("vals")

    def semantic_key(self) -> Hashable:
        return ("inset", self.child.semantic_key(), frozenset(_hashable(v) for v in self.hset))

    def sql(self) -> str:
        return f"{self.child.sql()} INSET {', '.join(map(repr, self.hset))}"


@mirror(_C + "Like", pattern="LIKE_FAMLIY")
class Like(BinaryExpression, Predicate):
    null_intolerant_class = True
    escape_char: str = arg("c", default="\\")


@mirror(_C + "StartsWith")
class StartsWith(BinaryExpression, Predicate):
    null_intolerant_class = True


@mirror(_C + "EndsWith")
class EndsWith(BinaryExpression, Predicate):
    null_intolerant_class = True


@mirror(_C + "Contains")
class Contains(BinaryExpression, Predicate):
    null_intolerant_class = True


# ---------------------------------------------------------------------------------------------
# Arithmetic. ``eval_context`` is Catalyst's NumericEvalContext (ANSI or not); a new
# expression built with ``None`` takes the session's, as Catalyst's own constructors do.


@dataclass(frozen=True, slots=True, repr=False)
class BinaryArithmetic(BinaryOperator):
    null_intolerant_class = True
    eval_context: Value | None = arg("x", default=None)

    def _derive_type(self) -> DataType:
        lt, rt = self.left.data_type, self.right.data_type
        if lt == rt and not lt.is_decimal:
            return lt
        return super()._derive_type()

    def _operand_and_constant(self, accept: Callable[[Any], bool] = lambda c: True
                              ) -> tuple[Expression, Any, bool] | None:
        """``(x, c, c_is_left)`` when one operand is a non-NULL literal ``c`` that
        ``accept`` takes and the other an ordered value ``x`` (the right operand is tried
        as the constant first), and only under ANSI: with it off, overflow wraps around
        and nothing is monotonic."""
        if self.eval_context is None or "ANSI" not in self.eval_context.text:
            return None
        for x, c, c_is_left in ((self.left, self.right, False),
                                (self.right, self.left, True)):
            value = _literal_value(c)
            if value is not None and accept(value) and _ordered_type(x):
                return x, value, c_is_left
        return None

    def _exact(self, x: Expression, scale_of_exact: Callable[[int, int], int]) -> bool:
        """Whether the result keeps every digit of the exact result, so that distinct ``x``
        give distinct results. Decimal arithmetic does not always: when the exact result
        would need more than 38 digits, Spark lowers its scale and rounds
        (``spark.sql.decimalOperations.allowPrecisionLoss``), so ``x + 0.01`` with ``x``
        a DECIMAL(38,18) rounds to 17 digits and two ``x`` meet. Rounding still keeps the
        order, so the function stays monotonic, only not strictly. ``scale_of_exact``:
        (scale of x, scale of the constant) -> the exact result's scale."""
        result = type_or_none(self)
        if result is None or not result.is_decimal:
            return True  # integral and datetime arithmetic is exact (ANSI: it raises)
        other = self.right if self.left is x else self.left
        xp, cp, rp = (None if t is None else t.precision_scale
                      for t in (type_or_none(x), type_or_none(other), result))
        if xp is None or cp is None or rp is None:
            return False
        return rp[1] >= scale_of_exact(xp[1], cp[1])


@mirror(_C + "Add", pattern="BINARY_ARITHMETIC")
class Add(BinaryArithmetic):
    symbol = "+"

    def ordering_fact(self) -> OrderingFact | None:
        # x + c and c + x: increasing (ANSI: no wrap-around), strictly unless a decimal
        # result rounds.
        found = self._operand_and_constant()
        return found and OrderingFact(found[0], increasing=True,
                                      strict=self._exact(found[0], max))


@mirror(_C + "Subtract", pattern="BINARY_ARITHMETIC")
class Subtract(BinaryArithmetic):
    symbol = "-"

    def ordering_fact(self) -> OrderingFact | None:
        # x - c increases with x, c - x decreases (ANSI: no wrap-around); strictly both
        # unless a decimal result rounds.
        found = self._operand_and_constant()
        return found and OrderingFact(found[0], increasing=not found[2],
                                      strict=self._exact(found[0], max))


@mirror(_C + "Multiply", pattern="BINARY_ARITHMETIC")
class Multiply(BinaryArithmetic):
    symbol = "*"

    def ordering_fact(self) -> OrderingFact | None:
        # x * c and c * x, c != 0: increasing when c > 0 (ANSI: no wrap-around); strictly
        # unless a decimal result rounds (the exact product has the scales' sum).
        found = self._operand_and_constant(_nonzero_number)
        return found and OrderingFact(found[0], increasing=found[1] > 0,
                                      strict=self._exact(found[0], operator.add))


def _nonzero_number(v: object) -> bool:
    return isinstance(v, (int, float, decimal.Decimal)) and not isinstance(v, bool) and v != 0


@mirror(_C + "Divide", pattern="BINARY_ARITHMETIC")
class Divide(BinaryArithmetic):
    symbol = "/"


@mirror(_C + "Remainder", pattern="BINARY_ARITHMETIC")
class Remainder(BinaryArithmetic):
    symbol = "%"


@mirror(_C + "IntegralDivide", pattern="BINARY_ARITHMETIC")
class IntegralDivide(BinaryArithmetic):
    symbol = "div"


@mirror(_C + "Pmod", pattern="BINARY_ARITHMETIC")
class Pmod(BinaryArithmetic):
    symbol = "pmod"


@mirror(_C + "UnaryMinus")
class UnaryMinus(UnaryWithFailOnError, SameTypeAsChild):
    null_intolerant_class = True

    def ordering_fact(self) -> OrderingFact | None:
        # Decreasing, strictly; only when it fails on overflow (-MIN_VALUE wraps otherwise).
        if self.fail_on_error and _ordered_type(self.child):
            return OrderingFact(self.child, increasing=False, strict=True)
        return None


@dataclass(frozen=True, slots=True, repr=False)
class _RoundsDecimal(UnaryWithFailOnError):
    """floor and ceil: increasing in a decimal, not strictly (each maps a range to one
    integer); not claimed for floating point (NaN)."""

    # Catalyst's Floor and Ceil take failOnError since 4.3 (before, they cannot fail).
    fail_on_error: bool = arg("b", default=False, since="4.3")
    null_intolerant_class = True

    def ordering_fact(self) -> OrderingFact | None:
        t = type_or_none(self.child)
        if t is not None and t.is_decimal:
            return OrderingFact(self.child, increasing=True, strict=False)
        return None


@mirror(_C + "Abs")
class Abs(UnaryWithFailOnError, SameTypeAsChild):
    null_intolerant_class = True


@mirror(_C + "Floor")
class Floor(_RoundsDecimal):
    pass


@mirror(_C + "Ceil")
class Ceil(_RoundsDecimal):
    pass


@mirror(_C + "Round")
class Round(Expression):
    child: Expression = arg("e")
    scale: Expression = arg("e")
    ansi_enabled: bool = arg("b", default=False)


# ---------------------------------------------------------------------------------------------
# Casts and conditionals


@mirror(_C + "Cast", pattern="CAST")
class Cast(Expression):
    """``CAST(child AS to)``. ``eval_mode`` None takes the session's (ANSI or legacy)."""

    null_intolerant_class = True
    child: Expression = arg("e")
    to: DataType = arg("t")
    time_zone_id: str | None = arg("s?", default=None)
    eval_mode: Value | None = arg("x", default=None)

    @property
    def data_type(self) -> DataType:
        return self.to

    def sql(self) -> str:
        return f"cast({self.child.sql()} as {self.to!r})"

    def ordering_fact(self) -> OrderingFact | None:
        """Increasing in ``child`` for the casts below, strictly where the target holds
        every source value exactly (a widening cast), else only order-preserving."""
        src, dst, x = type_or_none(self.child), self.to, self.child
        if src is None:
            return None
        s, d = src.name, dst.name
        if s in _WIDTH and d in _WIDTH and _WIDTH[d] >= _WIDTH[s]:
            return OrderingFact(x, increasing=True, strict=True)
        if s in _DIGITS and (dps := dst.precision_scale) is not None:
            p, sc = dps
            if p - sc >= _DIGITS[s]:
                return OrderingFact(x, increasing=True, strict=True)
        if (sps := src.precision_scale) is not None and (dps := dst.precision_scale) is not None:
            (p1, s1), (p2, s2) = sps, dps
            if s2 >= s1 and p2 - s2 >= p1 - s1:
                return OrderingFact(x, increasing=True, strict=True)
        if s == "date" and d == "timestamp_ntz":
            return OrderingFact(x, increasing=True, strict=True)
        if s == "date" and d == "timestamp":
            # Not strictly: where a zone skipped a whole day (Pacific/Apia, 2011-12-30), two
            # dates start at the same instant.
            return OrderingFact(x, increasing=True, strict=False)
        if d == "date" and (s == "timestamp_ntz" or (
                s == "timestamp" and timezones.keeps_order(self.time_zone_id, "date"))):
            # to_date: the local date, which goes back where the zone sets its clock back.
            return OrderingFact(x, increasing=True, strict=False)
        return None


#: Integral types by width, and the decimal digits each needs.
_WIDTH = {"byte": 1, "short": 2, "integer": 3, "long": 4}
_DIGITS = {"byte": 3, "short": 5, "integer": 10, "long": 19}


@mirror(_C + "If", pattern="IF")
class If(Expression):
    predicate: Expression = arg("e")
    true_value: Expression = arg("e")
    false_value: Expression = arg("e")

    def _derive_type(self) -> DataType:
        return self.true_value.data_type


@mirror(_C + "CaseWhen", pattern="CASE_WHEN")
class CaseWhen(Expression):
    branches: tuple[tuple[Expression, Expression], ...] = arg("eps")
    else_value: Expression | None = arg("e?", default=None)

    def _derive_type(self) -> DataType:
        return self.branches[0][1].data_type


@mirror(_C + "Coalesce", pattern="COALESCE")
class Coalesce(NaryExpression, SameTypeAsChild):
    @property
    def nullable(self) -> bool:
        return all(c.nullable for c in self.children_)


@mirror(_C + "Greatest")
class Greatest(NaryExpression, SameTypeAsChild):
    pass


@mirror(_C + "Least")
class Least(NaryExpression, SameTypeAsChild):
    pass


@mirror(_C + "NaNvl")
class NaNvl(BinaryExpression):
    pass


# ---------------------------------------------------------------------------------------------
# Strings


@mirror(_C + "Upper", pattern="UPPER_OR_LOWER")
class Upper(UnaryExpression, SameTypeAsChild):
    null_intolerant_class = True


@mirror(_C + "Lower", pattern="UPPER_OR_LOWER")
class Lower(UnaryExpression, SameTypeAsChild):
    null_intolerant_class = True


@mirror(_C + "Substring")
class Substring(Expression):
    null_intolerant_class = True
    str: Expression = arg("e")
    pos: Expression = arg("e")
    len: Expression = arg("e")


@mirror(_C + "Length")
class Length(UnaryExpression):
    null_intolerant_class = True
    _fixed_type = T.INT


@mirror(_C + "Concat", pattern="CONCAT")
class Concat(NaryExpression):
    pass


@mirror(_C + "StringTrim")
class StringTrim(Expression):
    src: Expression = arg("e")
    trim: Expression | None = arg("e?", default=None)


# ---------------------------------------------------------------------------------------------
# Dates and times


@mirror(_C + "Year")
class Year(UnaryExpression):
    null_intolerant_class = True
    _fixed_type = T.INT

    def ordering_fact(self) -> OrderingFact | None:
        # Of a date: increasing, not strictly (a year of days is one value).
        t = type_or_none(self.child)
        if t is not None and t.name == "date":
            return OrderingFact(self.child, increasing=True, strict=False)
        return None


@mirror(_C + "Month")
class Month(UnaryExpression):
    null_intolerant_class = True
    _fixed_type = T.INT


@mirror(_C + "DayOfMonth")
class DayOfMonth(UnaryExpression):
    null_intolerant_class = True
    _fixed_type = T.INT


@mirror(_C + "Hour")
class Hour(UnaryExpression):
    null_intolerant_class = True
    time_zone_id: str | None = arg("s?", default=None)
    _fixed_type = T.INT


@dataclass(frozen=True, slots=True, repr=False)
class _DateShift(Expression):
    """date_add and date_sub: a date moved by a number of days."""

    null_intolerant_class = True
    start_date: Expression = arg("e")
    days: Expression = arg("e")
    _fixed_type = T.DATE

    def ordering_fact(self) -> OrderingFact | None:
        # Only the identity, a shift by 0 days. Catalyst adds the days to the date's int
        # with no overflow check, in ANSI mode too: date_add(d, 1) of the last date
        # (date_from_unix_date(2147483647)) is the first one, so a shift by any other
        # constant does not keep the order.
        if _literal_value(self.days) == 0:
            return OrderingFact(self.start_date, increasing=True, strict=True)
        return None


@mirror(_C + "DateAdd")
class DateAdd(_DateShift):
    pass


@mirror(_C + "DateSub")
class DateSub(_DateShift):
    pass


@mirror(_C + "TruncDate")
class TruncDate(Expression):
    """``trunc(date, format)``."""

    date: Expression = arg("e")
    format: Expression = arg("e")
    _fixed_type = T.DATE

    def ordering_fact(self) -> OrderingFact | None:
        # 'QUARTER': increasing, not strictly (a quarter of days is one value). Catalyst
        # truncates to a month, a year or a week with int arithmetic that wraps around on
        # the lowest dates (trunc(date_from_unix_date(-2147483648), 'YEAR') is a date
        # far in the future); to a quarter it goes through LocalDate and raises instead.
        if _unit(self.format) == "QUARTER":
            return OrderingFact(self.date, increasing=True, strict=False)
        return None


@mirror(_C + "TruncTimestamp")
class TruncTimestamp(Expression):
    """``date_trunc(format, timestamp)``."""

    format: Expression = arg("e")
    timestamp: Expression = arg("e")
    time_zone_id: str | None = arg("s?", default=None)
    _fixed_type = T.TIMESTAMP

    def ordering_fact(self) -> OrderingFact | None:
        """A constant unit of :data:`_TRUNC_UNITS` (a microsecond, a minute or longer):
        increasing, not strictly (a unit of instants is one value), where the session's
        time zone never sets the local clock back across the unit (:mod:`sparkext.timezones`;
        a microsecond is the instant itself). A second or a millisecond: nothing (the
        arithmetic wraps around at the lowest instant)."""
        unit = _unit(self.format)
        if unit not in _TRUNC_UNITS:
            return None
        zone_unit = _TRUNC_UNITS[unit]
        if zone_unit is None or timezones.keeps_order(self.time_zone_id, zone_unit):
            return OrderingFact(self.timestamp, increasing=True, strict=False)
        return None


def _unit(e: Expression) -> str | None:
    """The unit a truncation names, upper case, when it is a string literal."""
    return e.value.upper() if isinstance(e, Literal) and isinstance(e.value, str) else None


#: date_trunc's units -> the truncation the time zone must not reverse (None: plain
#: arithmetic on the instant, no zone involved; see sparkext.timezones). Not MILLISECOND
#: and SECOND: Catalyst subtracts the remainder from the instant's long with no overflow
#: check, which wraps around within a second of the lowest instant; the other units go
#: through java.time and raise there.
_TRUNC_UNITS = {
    "MICROSECOND": None,
    "MINUTE": "MINUTES", "HOUR": "HOURS", "DAY": "DAYS", "DD": "DAYS",
    **dict.fromkeys(("WEEK", "MON", "MONTH", "MM", "QUARTER", "YEAR", "YYYY", "YY"), "date"),
}


# ---------------------------------------------------------------------------------------------
# Structs, generators, randomness


@mirror(_C + "GetStructField", pattern="EXTRACT_VALUE")
class GetStructField(Expression):
    null_intolerant_class = True
    child: Expression = arg("e")
    ordinal: int = arg("i")
    name: str | None = arg("s?", default=None)


@mirror(_C + "CreateNamedStruct", pattern="CREATE_NAMED_STRUCT")
class CreateNamedStruct(NaryExpression):
    pass


@mirror(_C + "Explode", pattern="GENERATOR")
class Explode(UnaryExpression):
    pass


@mirror(_C + "PosExplode", pattern="GENERATOR")
class PosExplode(UnaryExpression):
    pass


@mirror(_C + "Rand", pattern="EXPRESSION_WITH_RANDOM_SEED")
class Rand(UnaryExpression, NeverNull):
    hide_seed: bool = arg("b", default=False)
    _fixed_type = T.DOUBLE

    @property
    def deterministic(self) -> bool:
        return False


# ---------------------------------------------------------------------------------------------
# Ordering


class SortDirection(WireString):
    """Catalyst's ``SortDirection``; a member is also its wire string (``"DESC"``)."""

    ASC = "ASC"
    DESC = "DESC"


class NullOrdering(WireString):
    """Catalyst's ``NullOrdering``; a member is also its wire string (``"FIRST"``)."""

    FIRST = "FIRST"
    LAST = "LAST"


ASC, DESC = SortDirection.ASC, SortDirection.DESC
NULLS_FIRST, NULLS_LAST = NullOrdering.FIRST, NullOrdering.LAST


@mirror(_C + "SortOrder")
class SortOrder(Expression):
    """One sort key. Spark's defaults: ASC is NULLS FIRST, DESC is NULLS LAST. ``direction``
    and ``null_ordering`` are members of :class:`SortDirection` and :class:`NullOrdering`
    (their strings are accepted and converted)."""

    child: Expression = arg("e")
    direction: SortDirection = arg("dir", default=ASC)
    null_ordering: NullOrdering = arg("no", default=None)
    same_order_expressions: tuple[Expression, ...] = arg("es", default=())

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "direction", SortDirection(self.direction))
        except ValueError:
            raise ValueError(f"SortOrder direction must be ASC or DESC, not {self.direction!r}") \
                from None
        if self.null_ordering is None:
            default = NULLS_FIRST if self.direction is ASC else NULLS_LAST
            object.__setattr__(self, "null_ordering", default)
        else:
            try:
                object.__setattr__(self, "null_ordering", NullOrdering(self.null_ordering))
            except ValueError:
                raise ValueError(f"null_ordering must be FIRST or LAST, not "
                                 f"{self.null_ordering!r}") from None

    @property
    def data_type(self) -> DataType:
        return self.child.data_type

    @property
    def is_ascending(self) -> bool:
        return self.direction is ASC

    def sql(self) -> str:
        return f"{self.child.sql()} {self.direction} NULLS {self.null_ordering}"


def asc(e: Expression) -> SortOrder:
    return SortOrder(e, ASC, NULLS_FIRST)


def desc(e: Expression) -> SortOrder:
    return SortOrder(e, DESC, NULLS_LAST)


# ---------------------------------------------------------------------------------------------
# Everything else


@mirror(_C + "Opaque", special=True)
class OpaqueExpression(Expression):
    """A Catalyst expression sparkext does not mirror (aggregate and window functions,
    subqueries, UDFs, most functions). Its children can be replaced; the rest is kept on
    the JVM by ``handle``."""

    cls: str = arg("-")
    children_: tuple[Expression, ...] = arg("es")
    # Equal opaque expressions may come from different Catalyst objects: the shell (what
    # the expression is apart from its children, numbered by the JVM) says what it means.
    handle: int = arg("-", compare=False)
    deterministic_: bool = arg("-", default=True)
    foldable_: bool = arg("-", default=False)
    #: The references when they are not the children's (subqueries, outer references).
    references_: frozenset[ExprId] | None = arg("-", default=None)
    #: For subquery expressions, the output of the subquery's plan.
    subquery_output: tuple[AttributeReference, ...] | None = arg("-", default=None)
    #: Set by a rule to narrow a subquery's plan to these output ids (EXISTS needs only
    #: the columns its correlation reads).
    keep: frozenset[int] | None = arg("-", default=None)
    #: What the expression is apart from its children, as a number the JVM gave every
    #: semantically equal shell in one plan (None: unknown, compared by handle).
    shell: int | None = arg("-", default=None)
    #: An ``AggregateExpression`` over distinct values (``count(DISTINCT x)``); its shell
    #: tells the two apart too, this says which
    distinct: bool = arg("-", default=False)

    @property
    def is_subquery(self) -> bool:
        return self.subquery_output is not None

    @property
    def deterministic(self) -> bool:
        return self.deterministic_ and all(c.deterministic for c in self.children_)

    @property
    def foldable(self) -> bool:
        return self.foldable_

    @property
    def references(self) -> frozenset:
        if self.references_ is not None:
            return self.references_
        # (mypy types a property read on its class as the getter, not the property)
        return Expression.references.fget(self)  # type: ignore[attr-defined]

    @property
    def attribute(self) -> AttributeReference | None:
        return None

    def semantic_key(self) -> Hashable:
        what = ("shell", self.shell) if self.shell is not None else ("handle", self.handle)
        return ("opaque", self.cls, what, self.keep,
                tuple(c.semantic_key() for c in self.children_))

    def sql(self) -> str:
        return f"{self.cls}({', '.join(c.sql() for c in self.children_)})"

