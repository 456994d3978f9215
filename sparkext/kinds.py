"""The kinds of Catalyst constructor argument a mirror class declares (``arg(kind)``).

Every kind is one member here, named once; its wire code is what a mirror spec carries
to the JVM, whose ``MirrorSpec.Kind`` lists the same codes (the handshake at ``enable``
compares the two lists). Kinds marked ``special`` occur only in classes whose wire form
both sides write by hand (attributes, literals, aliases, InSet) and never reach the
JVM's reflective builders.
"""

from __future__ import annotations

import enum


class Kind(enum.Enum):
    """One argument kind: ``Kind("es")`` finds it by wire code."""

    def __new__(cls, code: str, special: bool = False):
        obj = object.__new__(cls)
        obj._value_ = code
        obj.special = special
        return obj

    @property
    def code(self) -> str:
        return self.value

    EXPR = "e"
    EXPR_OPT = "e?"
    EXPRS = "es"
    EXPR_SEQS = "ess"
    EXPR_PAIRS = "eps"
    PLAN = "p"
    PLANS = "ps"
    TYPE = "t"
    STR = "s"
    STR_OPT = "s?"
    STRS = "ss"
    INT = "i"
    INT_OPT = "i?"
    INTS = "is"
    LONG = "l"
    LONG_OPT = "l?"
    DOUBLE = "d"
    BOOL = "b"
    CHAR = "c"
    VALUE = "x"
    VALUE_OPT = "x?"
    JOIN_TYPE = "jt"
    DIRECTION = "dir"
    NULL_ORDERING = "no"
    ALIAS_ID = "aid"
    # Written by hand on both sides (special classes only).
    NOT_ARGUMENT = ("-", True)
    EXPR_ID = ("id", True)
    LITERAL_VALUE = ("v", True)
    INSET_VALUES = ("vals", True)


def wire_codes() -> list[str]:
    """The codes the JVM must know: every kind a reflectively built class may declare."""
    return [k.code for k in Kind if not k.special]
