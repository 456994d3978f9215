"""The constants the Python package and the jar must agree on, in one place.

Each has a twin on the JVM side (``PlanCodec.Version``, ``BridgeCall.Unchanged``,
``PlanEncoder.HeaderFields``, ``PythonChannel.MaxAnswerBytes``). They are compared once,
when ``sparkext.enable`` registers rules (the handshake), so a package and a jar that
disagree fail there with one clear error rather than on every query.
"""

from __future__ import annotations

from enum import Enum

from sparkext.context import HEADER
from sparkext.kinds import wire_codes

#: The wire format's version (docs/wire-format.md). Bump it together with the JVM's
#: ``PlanCodec.Version`` on any incompatible change.
VERSION = 2

#: The answer when no rule changed the plan; the JVM compares it as text.
UNCHANGED_ANSWER = '{"unchanged":true}'
#: The usual answer, the same with the rules' figures (:func:`unchanged_answer`): the JVM
#: reads it by this prefix, without a JSON parser.
UNCHANGED_WITH_STATS = '{"unchanged":true,"stats":['

#: The fields of a request's header (docs/wire-format.md, "Requests"): what the JVM writes
#: and the package reads: the decoder's ``v`` and ``root``, and the call's settings
#: (``sparkext.context.HEADER``).
HEADER_FIELDS = ("v", "root", *HEADER)


class WireString(str, Enum):
    """A vocabulary the JVM spells as strings (a sort direction, a rule position): each
    member is its wire string, equal to it, hashed and printed as it, so the wire and
    callers that pass the string keep working. An unknown string is refused naming the
    valid ones."""

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    @classmethod
    def _missing_(cls, value: object) -> None:
        raise ValueError(f"{value!r} is not a {cls.__name__}: the valid ones are "
                         f"{', '.join(m.value for m in cls)}")


#: The largest answer the JVM accepts (the channel's length prefix is checked against it).
MAX_ANSWER_BYTES = 2**30


def unchanged_answer(stats: list[int]) -> str:
    """The answer when no rule changed the plan, with the rules' figures; written by hand,
    the most common answer by far."""
    return UNCHANGED_WITH_STATS + ",".join(map(str, stats)) + "]}"


def handshake() -> dict:
    """The package's half of the handshake that ``sparkext.enable`` sends with the rules:
    the package version (the jar carries the one it was built from), the wire version, the
    argument-kind codes the JVM's reflective builders must know, the request header's
    fields, the unchanged answer's form, and the answer limit. The
    jar (``io.sparkext.Handshake``) compares each with its own and refuses the
    registration, naming both values, when one differs."""
    from sparkext import __version__  # here: sparkext/__init__ imports this module

    return {"package_version": __version__, "version": VERSION, "kinds": sorted(wire_codes()),
            "header": sorted(HEADER_FIELDS), "unchanged": UNCHANGED_WITH_STATS,
            "max_answer_bytes": MAX_ANSWER_BYTES}
