"""Spark SQL data types in the mirror.

A :class:`DataType` holds the exact JSON Spark writes for the type (``DataType.json``), so
every type — collated strings, intervals, variants, nested structs — round-trips unchanged.
Rules mostly compare types or ask simple questions (``is_numeric``); the constants below
cover the atomic types, :func:`decimal` and :func:`from_pyspark` build the rest.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache

__all__ = [
    "DataType", "BOOLEAN", "BYTE", "SHORT", "INT", "LONG", "FLOAT", "DOUBLE", "STRING",
    "BINARY", "DATE", "TIMESTAMP", "TIMESTAMP_NTZ", "NULL", "decimal", "from_pyspark",
]

_DECIMAL = re.compile(r"decimal\((\d+),\s*(-?\d+)\)")
_INTEGRAL = ("byte", "short", "integer", "long")
_FRACTIONAL = ("float", "double")


@dataclass(frozen=True, slots=True)
class DataType:
    """One Spark SQL type, as Spark's own JSON text (e.g. ``'"integer"'``)."""

    json: str
    #: ``integer``, ``decimal(12,2)``, ``struct``, ``array``, ``map``, ``udt``, ...
    name: str = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        v = json.loads(self.json)
        object.__setattr__(self, "name", v if isinstance(v, str) else v.get("type", "?"))

    @property
    def value(self):
        """The parsed JSON: a string for atomic types, a dict for nested ones."""
        return json.loads(self.json)

    @property
    def is_integral(self) -> bool:
        return self.name in _INTEGRAL

    @property
    def is_fractional(self) -> bool:
        return self.name in _FRACTIONAL or self.is_decimal

    @property
    def is_numeric(self) -> bool:
        return self.is_integral or self.is_fractional

    @property
    def is_decimal(self) -> bool:
        return self.name.startswith("decimal")

    @property
    def is_string(self) -> bool:
        n = self.name
        return n == "string" or n.startswith(("string collate", "char(", "varchar("))

    @property
    def is_datetime(self) -> bool:
        return self.name in ("date", "timestamp", "timestamp_ntz")

    @property
    def equality_is_identity(self) -> bool:
        """Whether values that compare equal are the same value, so that one can stand in
        for the other in any expression. Not for floating point (``-0.0 = 0.0``, yet
        ``CAST(-0.0 AS STRING)`` is ``'-0.0'``), nor for strings under a collation other than
        UTF8_BINARY (``'a' = 'A'`` in UTF8_LCASE), nor for nested types holding either."""
        return _identity_of(self.json)

    @property
    def has_floating_point(self) -> bool:
        """Whether values of this type hold a ``float`` or ``double`` (nested ones too): the
        types Spark's grouping normalises (``-0.0`` to ``0.0``, every NaN to one NaN) before
        it compares keys (Catalyst's ``NormalizeFloatingNumbers``)."""
        return _floating_of(self.json)

    @property
    def precision_scale(self) -> tuple[int, int] | None:
        m = _DECIMAL.fullmatch(self.name)
        return (int(m.group(1)), int(m.group(2))) if m else None

    def simple_string(self) -> str:
        """Spark's short name of the type, as in plan text (``bigint``, ``array<int>``)."""
        return _simple_of(self.json)

    def __repr__(self) -> str:
        return self.simple_string()

    def to_pyspark(self):
        """The same type as a ``pyspark.sql.types.DataType``."""
        from pyspark.sql.types import _parse_datatype_json_string

        return _parse_datatype_json_string(self.json)


_SHORT = {"integer": "int", "long": "bigint", "short": "smallint", "byte": "tinyint",
          "null": "void"}


def _simple(v) -> str:
    if isinstance(v, str):
        return _SHORT.get(v, v)
    t = v.get("type")
    if t == "array":
        return f"array<{_simple(v['elementType'])}>"
    if t == "map":
        return f"map<{_simple(v['keyType'])},{_simple(v['valueType'])}>"
    if t == "struct":
        return "struct<" + ",".join(f"{f['name']}:{_simple(f['type'])}" for f in v["fields"]) + ">"
    return str(t)


def _leaves(v):
    """The atomic types inside type ``v`` (JSON); ``None`` for a UDT that does not say
    how it is stored."""
    if isinstance(v, str):
        yield v
        return
    t = v.get("type")
    if t == "array":
        yield from _leaves(v["elementType"])
    elif t == "map":
        yield from _leaves(v["keyType"])
        yield from _leaves(v["valueType"])
    elif t == "struct":
        for f in v["fields"]:
            yield from _leaves(f["type"])
    elif t == "udt":
        yield from _leaves(v["sqlType"]) if "sqlType" in v else (None,)


# Asked for every column of every equality the constraints restate: keep the answers per
# type text instead of parsing the JSON each time (a session has few distinct types).
@lru_cache(maxsize=1024)
def _identity_of(text: str) -> bool:
    return _identity(json.loads(text))


@lru_cache(maxsize=1024)
def _floating_of(text: str) -> bool:
    return _floating(json.loads(text))


# The repr of a type is its simple string, and the semantic key of every comparison holding
# a literal takes the repr of both spellings (BinaryComparison.semantic_key).
@lru_cache(maxsize=1024)
def _simple_of(text: str) -> str:
    return _simple(json.loads(text))


def _identity(v) -> bool:
    return all(leaf is not None and leaf not in _FRACTIONAL and (
        not leaf.startswith("string collate ") or leaf == "string collate UTF8_BINARY")
        for leaf in _leaves(v))


def _floating(v) -> bool:
    return any(leaf is None or leaf in _FRACTIONAL for leaf in _leaves(v))


def _atomic(name: str) -> DataType:
    return DataType(json.dumps(name))


BOOLEAN = _atomic("boolean")
BYTE = _atomic("byte")
SHORT = _atomic("short")
INT = _atomic("integer")
LONG = _atomic("long")
FLOAT = _atomic("float")
DOUBLE = _atomic("double")
STRING = _atomic("string")
BINARY = _atomic("binary")
DATE = _atomic("date")
TIMESTAMP = _atomic("timestamp")
TIMESTAMP_NTZ = _atomic("timestamp_ntz")
NULL = _atomic("null")


def decimal(precision: int, scale: int) -> DataType:
    return _atomic(f"decimal({precision},{scale})")


def from_pyspark(t) -> DataType:
    """The mirror type of a ``pyspark.sql.types.DataType``."""
    return DataType(json.dumps(t.jsonValue(), separators=(",", ":")))

