"""Literal values on the wire: :func:`value_in` reads a value of a Spark type from its JSON
form, :func:`value_out` writes it and refuses a value its type cannot hold exactly
(docs/wire-format.md, "Literal values"). No handle table: a literal's value travels in
full.
"""

from __future__ import annotations

import base64
import decimal
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from sparkext.codec.errors import WireError
from sparkext.types import DataType


@dataclass(frozen=True, slots=True)
class MapValue:
    """The value of a MAP literal: keys and values, in Spark's order."""

    keys: tuple
    values: tuple



@lru_cache(maxsize=512)
def type_value(t: DataType):
    """The JSON value of ``t``, as :func:`value_in` and :func:`value_out` take it (cached:
    every literal asks)."""
    return t.value


def _float_in(v):
    if isinstance(v, str):
        return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}[v]
    return float(v)


def _float_out(v):
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return v


def value_in(v, t) -> Any:
    """A literal value from its wire form; ``t`` is the type's JSON value."""
    if v is None:
        return None
    if isinstance(t, str):
        if t in ("float", "double"):
            return _float_in(v)
        if t == "binary":
            return base64.b64decode(v)
        if t.startswith("decimal"):
            return decimal.Decimal(v)
        if t == "interval":
            return tuple(v)
        if t == "variant":
            return (base64.b64decode(v[0]), base64.b64decode(v[1]))
        return v
    kind = t["type"]
    if kind == "array":
        et = t["elementType"]
        return tuple(value_in(x, et) for x in v)
    if kind == "map":
        return MapValue(value_in(v["k"], {"type": "array", "elementType": t["keyType"]}),
                        value_in(v["v"], {"type": "array", "elementType": t["valueType"]}))
    if kind == "struct":
        return tuple(value_in(x, f["type"]) for x, f in zip(v, t["fields"]))
    return v


#: Bits of the integer Spark keeps for values of these types (dates in days, timestamps in
#: microseconds, year-month intervals in months, day-time intervals in microseconds, times
#: in nanoseconds).
_INT_BITS = {"byte": 8, "short": 16, "integer": 32, "date": 32, "long": 64, "timestamp": 64,
             "timestamp_ntz": 64}
_DECIMAL_TYPE = re.compile(r"decimal\((\d+),\s*(-?\d+)\)")


def _int_bits(t: str) -> int | None:
    if t in _INT_BITS:
        return _INT_BITS[t]
    if t.startswith("interval "):
        return 32 if ("year" in t or "month" in t) else 64
    if t.startswith("time("):
        return 64
    return None


def _bad_value(v, t) -> WireError:
    return WireError(f"the literal value {v!r} is not a valid {t} value")


def _checked_decimal(v, t: str) -> str:
    if isinstance(v, bool) or not isinstance(v, (int, decimal.Decimal)):
        raise _bad_value(v, t)
    d = decimal.Decimal(v)
    m = _DECIMAL_TYPE.fullmatch(t)
    if not d.is_finite() or m is None:
        raise _bad_value(v, t)
    precision, scale = int(m.group(1)), int(m.group(2))
    # Trailing zeros stripped by hand: Decimal.normalize() would round to 28 digits.
    _, digits, exp = d.as_tuple()
    assert isinstance(exp, int)  # (d is finite: checked above)
    while len(digits) > 1 and digits[-1] == 0:
        digits, exp = digits[:-1], exp + 1
    if digits == (0,):
        # Zero has no digit to lose: it fits every decimal type, decimal(p, p) included
        # (counting its 0 as an integer digit refused cast(0 as decimal(4,4))).
        return format(d, "f")
    if -exp > scale or len(digits) + exp > precision - scale:
        raise WireError(f"the literal value {v!r} does not fit {t} (a digit would be lost)")
    return format(d, "f")


def value_out(v, t):
    """The wire form of a literal value (inverse of :func:`value_in`).

    A value that its type cannot hold (an int of 2**31 for INT, 1.5 for a LONG, 0.125 for
    DECIMAL(5,2)) raises :class:`WireError`: sent on, it would reach Spark as another
    constant, or be rounded."""
    if v is None:
        return None
    if isinstance(t, str):
        bits = _int_bits(t)
        if bits is not None:
            if isinstance(v, bool) or not isinstance(v, int) \
                    or not -(1 << (bits - 1)) <= v < (1 << (bits - 1)):
                raise _bad_value(v, t)
            return v
        if t in ("float", "double"):
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise _bad_value(v, t)
            return _float_out(float(v))
        if t == "boolean":
            if not isinstance(v, bool):
                raise _bad_value(v, t)
            return v
        if t == "binary":
            if not isinstance(v, (bytes, bytearray)):
                raise _bad_value(v, t)
            return base64.b64encode(bytes(v)).decode("ascii")
        if t.startswith("decimal"):
            return _checked_decimal(v, t)
        if t == "interval":
            return list(v)
        if t == "variant":
            return [base64.b64encode(v[0]).decode("ascii"), base64.b64encode(v[1]).decode("ascii")]
        if t == "string" or t.startswith(("string collate", "char(", "varchar(")):
            if not isinstance(v, str):
                raise _bad_value(v, t)
        return v
    kind = t["type"]
    if kind == "array":
        return [value_out(x, t["elementType"]) for x in v]
    if kind == "map":
        return {"k": [value_out(x, t["keyType"]) for x in v.keys],
                "v": [value_out(x, t["valueType"]) for x in v.values]}
    if kind == "struct":
        return [value_out(x, f["type"]) for x, f in zip(v, t["fields"])]
    return v
