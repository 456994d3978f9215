"""The kinds of Catalyst constructor argument a mirror class declares (``arg(kind)``).

Every kind is one member of :class:`Kind`, declared once with everything it means:

- its wire code, which a mirror spec carries to the JVM (whose ``MirrorSpec.Kind`` lists
  the same codes; the handshake at ``enable`` compares the two lists);
- its :class:`Shape`: how its value holds items (one, optional, a sequence, a sequence of
  sequences, pairs). The shape flattens a value into its items and puts new items back
  (``children``, ``expressions``, ``with_new_children``, ``map_expressions``), and maps a
  function over the items when decoding and encoding;
- its :class:`Item`: what each item is (an expression, a plan, a type, ...). The request
  decoder and the answer encoder each give one function per item (they hold the per-call
  handle tables); :meth:`Kind.decoder` and :meth:`Kind.encoder` compose it with the shape;
- whether ``Expression.sql()`` shows it.

Kinds whose item is :attr:`Item.SPECIAL` occur only in classes whose wire form both
sides write by hand (attributes, literals, aliases, InSet) and never reach the JVM's
reflective builders or the generic codec.

    >>> from sparkext.kinds import Item, Kind, Shape
    >>> Kind("es").shape, Kind("es").item
    (<Shape.SEQ: 'sequence'>, <Item.EXPR: 'expression'>)
    >>> list(Kind("eps").shape.flatten([("a", "b"), ("c", "d")]))
    ['a', 'b', 'c', 'd']

Adding a kind is one member here (and its twin in ``MirrorSpec.Kind``): a member without
every property fails at import, and a new item fails ``tests/test_kinds.py`` until the
decoder and the encoder can read and write it.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

#: ``(codec, wire value) -> mirror value`` or ``(codec, mirror value) -> wire value`` (wire
#: values are JSON: their type is the kind's, known only at run time)
ItemCodec = Callable[[Any, Any], Any]


class Item(enum.Enum):
    """What one item of an argument is."""

    EXPR = "expression"
    PLAN = "plan"
    TYPE = "data type"
    VALUE = "value kept on the JVM by handle"
    JOIN_TYPE = "join type"
    ALIAS_ID = "alias identifier"
    PLAIN = "JSON scalar, as it is"
    SPECIAL = "written by hand"


def plain(codec: object, v: object) -> object:
    """The item function of :attr:`Item.PLAIN`: the JSON value is the mirror value."""
    return v


def special(codec: object, v: object) -> object:
    """The item function of :attr:`Item.SPECIAL` for a generic codec: there is none."""
    raise TypeError("an argument written by hand (attribute, literal, alias, InSet parts) "
                    "reached the generic codec")


class Shape(enum.Enum):
    """How an argument's value holds its items."""

    ONE = "one"
    OPT = "optional"
    SEQ = "sequence"
    SEQS = "sequence of sequences"
    PAIRS = "sequence of pairs"

    def flatten(self, value: Any) -> Iterator[Any]:
        """The items of ``value``, in order."""
        if self is Shape.ONE:
            yield value
        elif self is Shape.OPT:
            if value is not None:
                yield value
        elif self is Shape.SEQ:
            yield from value
        elif self is Shape.SEQS:
            for s in value:
                yield from s
        else:
            for a, b in value:
                yield a
                yield b

    def unflatten(self, value: Any, it: Iterator[Any]) -> Any:
        """``value`` with its items taken in order from ``it`` (same count as it holds)."""
        if self is Shape.ONE:
            return next(it)
        if self is Shape.OPT:
            return None if value is None else next(it)
        if self is Shape.SEQ:
            return tuple(next(it) for _ in value)
        if self is Shape.SEQS:
            return tuple(tuple(next(it) for _ in s) for s in value)
        return tuple((next(it), next(it)) for _ in value)

    def lift(self, one: ItemCodec, seq: Callable[[Iterable[Any]], Any]) -> ItemCodec:
        """``one`` (for a single item) mapped over a value of this shape; sequences come
        out as ``seq`` (tuples for the mirror, lists for JSON)."""
        if self is Shape.ONE:
            return one  # the item function itself: no extra call on the hot path
        if self is Shape.OPT:
            return lambda c, v: None if v is None else one(c, v)
        if self is Shape.SEQ:
            if one is plain:
                return lambda c, v: seq(v)
            return lambda c, v: seq([one(c, x) for x in v])  # (a list first: faster)
        if self is Shape.SEQS:
            return lambda c, v: seq([seq([one(c, x) for x in s]) for s in v])
        return lambda c, v: seq([seq((one(c, a), one(c, b))) for a, b in v])


class Kind(enum.Enum):
    """One argument kind: ``Kind("es")`` finds it by wire code."""

    _value_: str
    shape: Shape
    item: Item
    shown: bool

    if TYPE_CHECKING:
        # Once the class exists, ``Kind(code)`` is Enum's lookup by value, not this
        # constructor (which only builds the members from their tuples below).
        def __new__(cls, code: str | Kind) -> Kind: ...
    else:
        def __new__(cls, code: str, shape: Shape, item: Item, shown: bool):
            obj = object.__new__(cls)
            obj._value_ = code
            obj.shape = shape
            obj.item = item
            obj.shown = shown
            return obj

    @property
    def code(self) -> str:
        return self.value

    @property
    def special(self) -> bool:
        """Written by hand on both sides: never in a reflectively built class."""
        return self.item is Item.SPECIAL

    def decoder(self, items: Mapping[Item, ItemCodec]) -> ItemCodec:
        """``(decoder, wire value) -> mirror value``, given the decoder's item functions."""
        return self.shape.lift(items[self.item], tuple)

    def encoder(self, items: Mapping[Item, ItemCodec]) -> ItemCodec:
        """``(encoder, mirror value) -> wire value``, given the encoder's item functions."""
        return self.shape.lift(items[self.item], list)

    EXPR = ("e", Shape.ONE, Item.EXPR, True)
    EXPR_OPT = ("e?", Shape.OPT, Item.EXPR, True)
    EXPRS = ("es", Shape.SEQ, Item.EXPR, True)
    EXPR_SEQS = ("ess", Shape.SEQS, Item.EXPR, True)
    EXPR_PAIRS = ("eps", Shape.PAIRS, Item.EXPR, True)
    PLAN = ("p", Shape.ONE, Item.PLAN, False)
    PLANS = ("ps", Shape.SEQ, Item.PLAN, False)
    TYPE = ("t", Shape.ONE, Item.TYPE, True)
    STR = ("s", Shape.ONE, Item.PLAIN, True)
    STR_OPT = ("s?", Shape.OPT, Item.PLAIN, True)
    STRS = ("ss", Shape.SEQ, Item.PLAIN, False)
    INT = ("i", Shape.ONE, Item.PLAIN, True)
    INT_OPT = ("i?", Shape.OPT, Item.PLAIN, False)
    INTS = ("is", Shape.SEQ, Item.PLAIN, False)
    LONG = ("l", Shape.ONE, Item.PLAIN, True)
    LONG_OPT = ("l?", Shape.OPT, Item.PLAIN, False)
    DOUBLE = ("d", Shape.ONE, Item.PLAIN, True)
    BOOL = ("b", Shape.ONE, Item.PLAIN, True)
    CHAR = ("c", Shape.ONE, Item.PLAIN, True)
    # (Optional on the wire either way: a value argument Spark left null stays null.)
    VALUE = ("x", Shape.OPT, Item.VALUE, False)
    VALUE_OPT = ("x?", Shape.OPT, Item.VALUE, False)
    JOIN_TYPE = ("jt", Shape.ONE, Item.JOIN_TYPE, False)
    DIRECTION = ("dir", Shape.ONE, Item.PLAIN, False)
    NULL_ORDERING = ("no", Shape.ONE, Item.PLAIN, False)
    ALIAS_ID = ("aid", Shape.ONE, Item.ALIAS_ID, False)
    # Written by hand on both sides (special classes only).
    NOT_ARGUMENT = ("-", Shape.ONE, Item.SPECIAL, False)
    EXPR_ID = ("id", Shape.ONE, Item.SPECIAL, False)
    LITERAL_VALUE = ("v", Shape.ONE, Item.SPECIAL, False)
    INSET_VALUES = ("vals", Shape.ONE, Item.SPECIAL, False)


def wire_codes() -> list[str]:
    """The codes the JVM must know: every kind a reflectively built class may declare."""
    return [k.code for k in Kind if not k.special]
