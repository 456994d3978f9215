"""Join types: the one place their semantics live.

Every analysis that treats joins differently by type reads the facts here, so adding a
join type is one declaration (and :data:`MEMBERS`), not an edit in five modules:

| fact | read by |
| --- | --- |
| ``wire``, :meth:`JoinType.from_wire` | the codec (Catalyst's ``JoinType.toString``) |
| ``keeps_right``, ``null_padded``, :meth:`JoinType.output` | ``Join.output`` |
| ``where_filters``, ``on_filters``, ``where_joins_condition`` | push_down_filters |
| ``outer``, :meth:`JoinType.without_padding` | push_down_filters (outer-join elimination) |
| ``constraints_from`` | constraints |
| ``infer_into`` | infer_filters |
| ``equivalences_from`` | ordering |

``where_filters`` and ``on_filters`` are DataFusion's ``lr_is_preserved`` and
``on_lr_is_preserved``: a preserved side keeps all its rows, so only a WHERE conjunct may
filter it; a NULL-supplying side may only lose rows that could not have matched, so only
an ON conjunct may filter it.

    >>> from sparkext.joins import JoinType, LEFT_OUTER
    >>> JoinType.from_wire("LeftOuter") is LEFT_OUTER
    True
    >>> LEFT_OUTER.facts.where_filters, LEFT_OUTER.facts.on_filters
    ((True, False), (False, True))
    >>> LEFT_OUTER.without_padding(left_rejected=False, right_rejected=True).wire
    'Inner'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from sparkext.expressions import AttributeReference, Value

__all__ = [
    "JoinFacts", "JoinType", "ExistenceJoin", "OpaqueJoinType", "MEMBERS",
    "INNER", "CROSS", "LEFT_OUTER", "RIGHT_OUTER", "FULL_OUTER", "LEFT_SEMI", "LEFT_ANTI",
    "LEFT_SINGLE",
]

Sides = tuple[bool, bool]
Y, N = True, False  # the facts tables below read as tables


@dataclass(frozen=True, slots=True)
class JoinFacts:
    """What a join type does, each fact as (left, right) or (left, right, condition).

    No field has a default: a join type declared without one of them does not build.
    """

    #: whether the right side's columns are in the output (not for semi/anti/existence)
    keeps_right: bool
    #: which sides the join pads with NULLs for unmatched rows (their columns turn nullable)
    null_padded: Sides
    #: which side a WHERE conjunct over that side alone may filter below the join
    where_filters: Sides
    #: which side an ON conjunct over that side alone may filter below the join
    on_filters: Sides
    #: whether a WHERE conjunct over both sides may become part of the join condition
    where_joins_condition: bool
    #: an outer join that becomes another type when a WHERE conjunct rejects NULL padding
    outer: bool
    #: what holds on every output row: the left's, the right's, the condition's constraints
    constraints_from: tuple[bool, bool, bool]
    #: which inputs may get the predicates the join implies (they may lose rows that
    #: cannot match)
    infer_into: Sides
    #: whose equivalences and constants (ordering analysis) hold on the output: the left's,
    #: the right's, the condition's equalities
    equivalences_from: tuple[bool, bool, bool]


class JoinType:
    """Base of the join types: ``wire`` (Catalyst's name) and ``facts``."""

    __slots__ = ()
    if TYPE_CHECKING:
        # Read-only: a field of some join types, a class constant or property of others.
        @property
        def wire(self) -> str: ...
        @property
        def facts(self) -> JoinFacts: ...

    @staticmethod
    def from_wire(name: str) -> JoinType:
        """The join type Catalyst names ``name`` (``"Inner"``, ``"LeftOuter"``, ...)."""
        try:
            return _BY_WIRE[name]
        except (KeyError, TypeError):
            raise ValueError(f"unknown join type {name!r}: one of "
                             f"{', '.join(sorted(_BY_WIRE))}, an ExistenceJoin, or an "
                             "opaque join type decoded from Spark") from None

    def output(self, left: tuple, right: tuple) -> tuple[AttributeReference, ...]:
        """The join's output columns, given its children's."""
        pad_left, pad_right = self.facts.null_padded
        if pad_left:
            left = tuple(a.with_nullability(True) for a in left)
        if not self.facts.keeps_right:
            return left
        if pad_right:
            right = tuple(a.with_nullability(True) for a in right)
        return left + right

    def without_padding(self, left_rejected: bool, right_rejected: bool) -> JoinType:
        """The join type left when a WHERE conjunct drops every row padded with NULLs on
        the rejected sides (Catalyst's ``EliminateOuterJoin``); itself when nothing
        changes or the type is not an outer join."""
        if not self.facts.outer:
            return self
        pad_left, pad_right = self.facts.null_padded
        padded = (pad_left and not left_rejected, pad_right and not right_rejected)
        if padded == self.facts.null_padded:
            return self
        return _OUTER_BY_PADDING[padded]


@dataclass(frozen=True, slots=True)
class _Named(JoinType):
    """A join type that is only its name (all of them but ExistenceJoin)."""

    wire: str
    facts: JoinFacts = field(compare=False, repr=False)

    def __repr__(self) -> str:
        # As a plan prints it (fixture files and tree strings show Join 'Inner').
        return repr(self.wire)

    def __str__(self) -> str:
        return self.wire


@dataclass(frozen=True, slots=True)
class ExistenceJoin(JoinType):
    """The join type of ``EXISTS`` in a disjunction: left rows plus a boolean column."""

    exists: AttributeReference
    wire: ClassVar[str] = "ExistenceJoin"
    #: Like a left anti join for what may be pushed; its one new column holds no constraint.
    facts: ClassVar[JoinFacts] = JoinFacts(
        N, (N, N), (Y, N), (N, Y), N, N, (Y, N, N), (N, N), (Y, N, N))

    def output(self, left: tuple, right: tuple) -> tuple[AttributeReference, ...]:
        return left + (self.exists,)

    def __repr__(self) -> str:
        return f"ExistenceJoin({self.exists!r})"


@dataclass(frozen=True, slots=True)
class OpaqueJoinType(JoinType):
    """A join type sparkext does not know, kept on the JVM by handle: it answers the most
    conservative facts (nothing moves across it, nothing is known of its output rows)."""

    value: Value
    #: Nothing moves across it, nothing is known of its output rows.
    facts: ClassVar[JoinFacts] = JoinFacts(
        Y, (Y, Y), (N, N), (N, N), N, N, (N, N, N), (N, N), (N, N, N))

    @property
    def wire(self) -> str:
        return self.value.text

    def output(self, left: tuple, right: tuple):
        raise ValueError(f"the output of a join of unknown type {self.value!r} is not known")

    def __repr__(self) -> str:
        return repr(self.value)


# One row per join type, every fact given (JoinFacts refuses a row short of one), in the
# order of JoinFacts' fields: keeps_right, null_padded, where_filters, on_filters,
# where_joins_condition, outer, constraints_from, infer_into, equivalences_from.
_TABLE = {
    "Inner":      (Y, (N, N), (Y, Y), (Y, Y), Y, N, (Y, Y, Y), (Y, Y), (Y, Y, Y)),
    "Cross":      (Y, (N, N), (Y, Y), (Y, Y), Y, N, (Y, Y, Y), (Y, Y), (Y, Y, Y)),
    "LeftOuter":  (Y, (N, Y), (Y, N), (N, Y), N, Y, (Y, N, N), (N, Y), (Y, N, N)),
    "RightOuter": (Y, (Y, N), (N, Y), (Y, N), N, Y, (N, Y, N), (Y, N), (N, Y, N)),
    "FullOuter":  (Y, (Y, Y), (N, N), (N, N), N, Y, (N, N, N), (N, N), (N, N, N)),
    "LeftSemi":   (N, (N, N), (Y, N), (Y, Y), N, N, (Y, N, Y), (Y, Y), (Y, N, N)),
    "LeftAnti":   (N, (N, N), (Y, N), (N, Y), N, N, (Y, N, N), (N, Y), (Y, N, N)),
    # A left outer join that raises when a left row matches more than one right row (a
    # scalar subquery's join); never turned into another type, nothing inferred into it.
    "LeftSingle": (Y, (N, Y), (Y, N), (N, Y), N, N, (Y, N, N), (N, N), (Y, N, N)),
}

(INNER, CROSS, LEFT_OUTER, RIGHT_OUTER, FULL_OUTER, LEFT_SEMI, LEFT_ANTI,
 LEFT_SINGLE) = (_Named(wire, JoinFacts(*row)) for wire, row in _TABLE.items())

#: Every join type that travels by name.
MEMBERS = (INNER, CROSS, LEFT_OUTER, RIGHT_OUTER, FULL_OUTER, LEFT_SEMI, LEFT_ANTI,
           LEFT_SINGLE)
_BY_WIRE = {jt.wire: jt for jt in MEMBERS}
# What an outer join becomes when only these sides (left, right) are still NULL-padded.
_OUTER_BY_PADDING = {jt.facts.null_padded: jt for jt in (INNER, LEFT_OUTER, RIGHT_OUTER,
                                                         FULL_OUTER)}


def join_type(v) -> JoinType:
    """``v`` as a join type: a JoinType as it is, a wire name looked up (raising on an
    unknown one), a :class:`Value` (a type decoded from Spark that sparkext does not know)
    made opaque."""
    if isinstance(v, JoinType):
        return v
    if isinstance(v, str):
        return JoinType.from_wire(v)
    if isinstance(v, Value):
        return OpaqueJoinType(v)
    raise TypeError(f"not a join type: {v!r}")
