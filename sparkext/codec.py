"""The wire format, Python half (docs/wire-format.md is the reference; the JVM half is
``jvm-shim/.../PlanCodec.scala``).

:class:`Decoded` turns one request document into the mirror and remembers which mirror
object came from which JVM handle. :func:`encode_answer` writes the rewritten plan back:
every object that is still the very object decoded goes back as ``{"ref": h}``, so the
JVM reuses the original Catalyst object; new objects go in full. :func:`encode_request`
writes the request format itself (used by tests to prove the decoder loses nothing).
"""

from __future__ import annotations

import base64
import decimal
import json
import math
import re
from dataclasses import dataclass
from functools import cached_property, lru_cache

from sparkext import _tree, timezones
from sparkext.expressions import (
    Alias,
    AttributeReference,
    Expression,
    FreshId,
    InSet,
    Literal,
    OpaqueExpression,
    Value,
)
from sparkext.joins import JoinType, OpaqueJoinType
from sparkext.plan import AliasIdentifier, ExistenceJoin, Lazy, LogicalPlan, Opaque, Relation
from sparkext.types import DataType
from sparkext.wire import VERSION

_json = json.JSONDecoder()


class WireError(ValueError):
    """A document that does not follow the wire format, or a plan that cannot be sent."""


@dataclass(frozen=True, slots=True)
class MapValue:
    """The value of a MAP literal: keys and values, in Spark's order."""

    keys: tuple
    values: tuple


# ---------------------------------------------------------------------------------------------
# Literal values


@lru_cache(maxsize=512)
def _type_value(t: DataType):
    return t.value


@lru_cache(maxsize=4096)
def _data_type(text: str) -> DataType:
    """The (immutable, shared) DataType for Spark's JSON text of a type: a session's plans
    use a few dozen types, and parsing their JSON anew was a sixth of every decode."""
    return DataType(text)


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


def value_in(v, t) -> object:
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
    while len(digits) > 1 and digits[-1] == 0:
        digits, exp = digits[:-1], exp + 1
    if digits == (0,):
        exp = 0
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


# ---------------------------------------------------------------------------------------------
# Decoding


def request_document(text: str) -> dict:
    """A whole request as one dict: the header's fields and the body's."""
    header, body_start = _json.raw_decode(text)
    return {**header, **json.loads(text[body_start:])}


class Decoded:
    """One request, decoded.

    ``plan`` is the mirror. The decoder keeps, for every object it made, the JVM handle
    it stands for (by identity: frozen objects cannot carry a "still original" flag that
    ``dataclasses.replace`` would not copy).

    Decoding is lazy. The body of the request is parsed when a rule first reads the root;
    a plan node of a mirrored class is created with its fields still in JSON, and decodes
    them, expressions included, when a rule first reads one
    (:func:`sparkext._tree.lazy_node`); attributes are built on first reference. A rule
    that looks at a few nodes pays for those; the parts it never reads go back to the JVM
    as references without ever having been built. (Expressions are built with their node:
    lazy expressions made a rule that reads the whole plan pay about 20% more, and
    nearly every rule reads the expressions of the nodes it visits.)

    ``doc`` is the header, or a whole request as one dict (the body's fields with it).
    """

    def __init__(self, doc: dict, text: str | None = None, body_start: int = 0):
        if doc.get("v") != VERSION:
            raise WireError(f"wire format version {doc.get('v')!r}, this sparkext speaks {VERSION}")
        self.doc = doc
        self._text = text
        self._body_start = body_start
        self.call_id = doc.get("id")
        self.position = doc.get("pos")
        self.excluded = frozenset(doc.get("excluded", ()))
        self.catalyst_excluded = frozenset(doc.get("catalyst_excluded", ()))
        if "tz" in doc:
            timezones.learn(doc["tz"], doc.get("tz_breaks", ()))
        self.attr_index: dict[int, int] = {}
        self.handles: dict[int, int] = {}
        self.relations: dict[int, Relation] = {}
        self.extra: dict[int, dict] = {}
        self.opaque_raw: dict[int, list] = {}
        self._alive: list = []  # keeps decoded objects alive, so their ids stay theirs
        root = doc.get("root") or {}
        cls = _tree.MIRRORED.get(root.get("k"))
        if cls is not None and not cls._special:
            self.plan = self._keep(_tree.lazy_node(cls, self._root_fields, root), root["h"])
        else:
            self.plan = self.node(self.body["plan"])

    @classmethod
    def from_json(cls, text: str) -> Decoded:
        """Decodes a request as the JVM sends it: the header now, the body when first read."""
        header, body_start = _json.raw_decode(text)
        return cls(header, text, body_start)

    @cached_property
    def body(self) -> dict:
        """The body of the request: ``plan``, ``attrs`` and ``types``."""
        if self._text is None:
            return self.doc
        return json.loads(self._text[self._body_start:])

    def _root_fields(self, cls, root: dict):
        j = self.body["plan"]
        if j.get("k") != root["k"] or j.get("h") != root["h"]:
            raise WireError(f"the header names a root {root}, the body has {j.get('k')!r} "
                            f"with handle {j.get('h')!r}")
        return self._node_fields(cls, j["p"])

    @cached_property
    def types(self) -> list[DataType]:
        return [_data_type(t) for t in self.body["types"]]

    @cached_property
    def _attrs(self) -> list:
        return [None] * len(self.body["attrs"])

    @property
    def attrs(self) -> list[AttributeReference]:
        """Every attribute of the request's table, in wire order."""
        return [self.attr(i) for i in range(len(self._attrs))]

    @cached_property
    def attr_by_value(self) -> dict[AttributeReference, int]:
        """Attribute -> index by value, for attributes a rule rebuilt equal to a decoded one.
        Built on first use: hashing every attribute costs a fifth of a decode, and most
        answers find their attributes by identity."""
        out: dict[AttributeReference, int] = {}
        for i, a in enumerate(self.attrs):
            out.setdefault(a, i)
        return out

    def attr(self, i: int) -> AttributeReference:
        a = self._attrs[i]
        if a is None:
            r = self.body["attrs"][i]
            a = self._attrs[i] = AttributeReference(
                r[0], self.types[r[2]], r[3], r[5] if len(r) > 5 else None, r[1], tuple(r[4]))
            self.attr_index[id(a)] = i
        return a

    def _keep(self, obj, h: int):
        self.handles[id(obj)] = h
        self._alive.append(obj)
        return obj

    def handle_of(self, obj) -> int | None:
        return self.handles.get(id(obj))

    # -- plans -----------------------------------------------------------------------------

    def node(self, j: dict) -> LogicalPlan:
        k = j["k"]
        h = j["h"]
        if k == "Relation":
            obj = Relation(j["cls"], self.exprs(j["out"]), h, j.get("name"),
                           self.exprs(j["ord"]) if "ord" in j else (), j.get("glob", False))
            self.relations[h] = obj
        elif k == "Opaque":
            raw = j.get("x")
            exprs = ()
            if raw:
                self.opaque_raw[h] = raw
                exprs = Lazy(lambda: self.exprs(raw))
            obj = Opaque(j["cls"], self.exprs(j["out"]), tuple(self.node(c) for c in j["c"]), h,
                         exprs)
        else:
            cls = _tree.MIRRORED.get(k)
            if cls is None:
                raise WireError(f"unknown plan node kind {k!r}")
            obj = _tree.lazy_node(cls, self._node_fields, j["p"])
        return self._keep(obj, h)

    def _node_fields(self, cls, p: list):
        return zip(cls._arg_names, self._args(cls, p))

    def _args(self, cls, p: list) -> list:
        expr = self.expr
        return [expr(v) if kind == "e" else self.arg(kind, v)
                for (_, kind), v in zip(cls._args, p)]

    def arg(self, kind: str, v):
        if kind == "e":
            return self.expr(v)
        if kind == "es":
            return self.exprs(v)
        if kind == "p":
            return self.node(v)
        if kind == "e?":
            return None if v is None else self.expr(v)
        if kind == "ps":
            return tuple(self.node(x) for x in v)
        if kind == "ess":
            return tuple(self.exprs(x) for x in v)
        if kind == "eps":
            return tuple((self.expr(a), self.expr(b)) for a, b in v)
        if kind == "t":
            return self.types[v]
        if kind in ("ss", "is"):
            return tuple(v)
        if kind in ("x", "x?"):
            return None if v is None else Value(v["s"], v["v"])
        if kind == "jt":
            if isinstance(v, str):
                return JoinType.from_wire(v)
            if "ExistenceJoin" in v:
                return ExistenceJoin(self.expr(v["ExistenceJoin"]))
            return Value(v["s"], v["v"])
        if kind == "aid":
            return AliasIdentifier(v[0], tuple(v[1]))
        return v  # s, s?, i, i?, l, l?, d, b, c, dir, no

    # -- expressions -----------------------------------------------------------------------

    def exprs(self, js: list) -> tuple:
        return tuple([self.expr(x) for x in js])  # (a list first: faster than a generator)

    def expr(self, j: dict) -> Expression:
        a = j.get("a")
        if a is not None:
            return self.attr(a)
        k = j["k"]
        t = j.get("t")
        if k == "Literal":
            dt = self.types[t]
            return self._keep(Literal(value_in(j["v"], _type_value(dt)), dt), j["h"])
        meta = {"_type": None if t is None else self.types[t], "_nullable": j.get("n"),
                "_null_intolerant": j.get("ni")}
        if k == "Alias":
            p = j["p"]
            obj = Alias(self.expr(p[0]), p[1], p[2], tuple(p[3]), p[4], tuple(p[5]), **meta)
        elif k == "InSet":
            p = j["p"]
            child = self.expr(p[0])
            ct = _type_value(child.data_type)
            obj = InSet(child, tuple(value_in(v, ct) for v in p[1]), **meta)
        elif k == "Opaque":
            refs = None
            if "r" in j:
                refs = frozenset().union(*(e.references for e in self.exprs(j["r"])))
            sub_out = self.exprs(j["so"]) if "so" in j else None
            obj = OpaqueExpression(j["cls"], self.exprs(j["c"]), j["h"], j.get("d", True),
                                   j.get("f", False), refs, sub_out, None, j.get("sh"), **meta)
            if "r" in j:
                self.extra[id(obj)] = {"r": j["r"]}
        else:
            cls = _tree.MIRRORED.get(k)
            if cls is None:
                raise WireError(f"unknown expression kind {k!r}")
            obj = cls(*self._args(cls, j["p"]), **meta)
        return self._keep(obj, j["h"])


# ---------------------------------------------------------------------------------------------
# Encoding


class _Encoder:
    """Writes mirror objects in wire form.

    ``answer`` mode (what Python sends back): objects still identical to decoded ones
    become references, new ones are written in full without handles. ``request`` mode
    writes exactly what the JVM sent (handles, types, opaque details): the identity the
    round-trip tests check.
    """

    def __init__(self, decoded: Decoded | None, request: bool = False):
        self.d = decoded
        self.request = request
        if request:
            self.types = [t.json for t in decoded.types]
            self.type_index = {t: i for i, t in enumerate(decoded.types)}
        else:
            self.types = []
            self.type_index = {}

    def type_id(self, t: DataType) -> int:
        i = self.type_index.get(t)
        if i is None:
            i = self.type_index[t] = len(self.types)
            self.types.append(t.json)
        return i

    def _known(self, obj) -> int | None:
        return None if self.d is None else self.d.handle_of(obj)

    # -- plans -----------------------------------------------------------------------------

    def node(self, p: LogicalPlan) -> dict:
        h = self._known(p)
        if h is not None and not self.request:
            return {"ref": h}
        if isinstance(p, Relation):
            return self._relation(p)
        if isinstance(p, Opaque):
            if self.request:
                j = {"k": "Opaque", "cls": p.cls, "out": [self.expr(a) for a in p.output],
                     "c": [self.node(c) for c in p.children]}
                if isinstance(p.exprs, Lazy) and not p.exprs.is_decoded:
                    j["x"] = self.d.opaque_raw[p.handle]
                elif p.expressions:
                    j["x"] = [self.expr(e) for e in p.expressions]
            else:
                j = {"k": "Opaque", "src": p.handle, "c": [self.node(c) for c in p.children]}
                # A tuple (not the Lazy the decoder made) means a rule replaced them.
                if not isinstance(p.exprs, Lazy) and p.exprs:
                    j["x"] = [self.expr(e) for e in p.exprs]
            return self._with_handle(j, h)
        if not isinstance(p, LogicalPlan) or not hasattr(p, "_wire"):
            raise WireError(f"a rule returned {type(p).__name__}, not a plan node")
        j = {"k": p._wire, "p": [self.arg(kind, getattr(p, name)) for name, kind in p._args]}
        return self._with_handle(j, h)

    def _with_handle(self, j: dict, h) -> dict:
        if self.request:
            j = {"h": h, **j}
        return j

    def _relation(self, r: Relation) -> dict:
        if self.request:
            j = {"h": r.handle, "k": "Relation", "cls": r.cls}
            if r.name is not None:
                j["name"] = r.name
            j["out"] = [self.expr(a) for a in r.output]
            if r.ordering:
                j["ord"] = [self.expr(o) for o in r.ordering]
            if r.ordering_is_global:
                j["glob"] = True
            return j
        original = None if self.d is None else self.d.relations.get(r.handle)
        if original is None or original != r:
            raise WireError(f"a rule changed the relation {r.simple_string()}: relations cannot "
                            "be rebuilt, only kept (put a Project above it instead)")
        return {"ref": r.handle}

    def arg(self, kind: str, v):
        if kind == "e":
            return self.expr(v)
        if kind == "es":
            return [self.expr(x) for x in v]
        if kind == "p":
            return self.node(v)
        if kind == "e?":
            return None if v is None else self.expr(v)
        if kind == "ps":
            return [self.node(x) for x in v]
        if kind == "ess":
            return [[self.expr(x) for x in s] for s in v]
        if kind == "eps":
            return [[self.expr(a), self.expr(b)] for a, b in v]
        if kind == "t":
            return self.type_id(v)
        if kind in ("ss", "is"):
            return list(v)
        if kind in ("x", "x?"):
            return None if v is None else self._value(v)
        if kind == "jt":
            if isinstance(v, ExistenceJoin):
                return {"ExistenceJoin": self.expr(v.exists)}
            if isinstance(v, OpaqueJoinType):
                return self._value(v.value)
            return v.wire
        if kind == "aid":
            return [v.name, list(v.qualifier)]
        return v

    def _value(self, v: Value) -> dict:
        if v.handle is None:
            raise WireError(f"the value {v.text!r} was not sent by Spark and cannot be built")
        return {"v": v.handle, "s": v.text} if self.request else {"v": v.handle}

    # -- expressions -----------------------------------------------------------------------

    def expr_id(self, i):
        if isinstance(i, FreshId):
            if self.request:
                raise WireError("a request cannot hold new expression ids")
            return {"nid": i.n}
        return i

    def _annotate(self, j: dict, e: Expression) -> dict:
        if self.request:
            if e._type is not None:
                j["t"] = self.type_id(e._type)
            if e._nullable is not None:
                j["n"] = e._nullable
            if e._null_intolerant:
                j["ni"] = True
        return j

    def expr(self, e: Expression) -> dict:
        if isinstance(e, AttributeReference):
            return self._attribute(e)
        h = self._known(e)
        if h is not None and not self.request:
            return {"ref": h}
        if isinstance(e, Literal):
            j = {"k": "Literal", "v": value_out(e.value, _type_value(e.data_type_)),
                 "t": self.type_id(e.data_type_)}
            return self._with_handle(j, h)
        if isinstance(e, Alias):
            j = {"k": "Alias", "p": [self.expr(e.child), e.name, self.expr_id(e.expr_id),
                                     list(e.qualifier), e.explicit_metadata,
                                     list(e.non_inheritable_metadata_keys)]}
        elif isinstance(e, InSet):
            ct = _type_value(e.child.data_type)
            j = {"k": "InSet", "p": [self.expr(e.child), [value_out(v, ct) for v in e.hset]]}
        elif isinstance(e, OpaqueExpression):
            if self.request:
                j = {"k": "Opaque", "cls": e.cls}
                if e.shell is not None:
                    j["sh"] = e.shell
                j["c"] = [self.expr(c) for c in e.children_]
                if not e.deterministic_:
                    j["d"] = False
                if e.foldable_:
                    j["f"] = True
                extra = self.d.extra.get(id(e))
                if extra:
                    j["r"] = extra["r"]
                if e.subquery_output is not None:
                    j["so"] = [self.expr(a) for a in e.subquery_output]
            else:
                j = {"k": "Opaque", "src": e.handle, "c": [self.expr(c) for c in e.children_]}
                if e.keep is not None:
                    j["keep"] = sorted(e.keep)
        elif hasattr(e, "_wire") and not e._special:
            j = {"k": e._wire, "p": [self.arg(kind, getattr(e, name)) for name, kind in e._args]}
        else:
            raise WireError(f"a rule returned {type(e).__name__}, not an expression")
        return self._annotate(self._with_handle(j, h), e)

    def _attribute(self, a: AttributeReference) -> dict:
        if self.d is not None:
            i = self.d.attr_index.get(id(a))
            if i is None:
                i = self.d.attr_by_value.get(a)
            if i is not None:
                return {"a": i}
        return {"k": "AttributeReference",
                "p": [a.name, self.type_id(a.data_type_), a.nullable_, a.metadata,
                      self.expr_id(a.expr_id), list(a.qualifier)]}


def encode_answer(plan: LogicalPlan, decoded: Decoded, rules: list[str]) -> dict:
    """The answer document for a rewritten plan."""
    enc = _Encoder(decoded)
    return {"plan": enc.node(plan), "types": enc.types, "rules": rules}


def encode_request(decoded: Decoded, plan: LogicalPlan | None = None) -> dict:
    """The request for ``plan`` (default: the decoded plan) as the JVM wrote it, header
    and body as one dict (:func:`request_document`)."""
    enc = _Encoder(decoded, request=True)
    j = {"v": VERSION}
    for key in ("id", "pos", "excluded", "catalyst_excluded", "tz", "tz_breaks"):
        if key in decoded.doc:
            j[key] = decoded.doc[key]
    j["plan"] = enc.node(decoded.plan if plan is None else plan)
    j["root"] = {"k": j["plan"]["k"], "h": j["plan"]["h"]}
    j["attrs"] = [_attr_entry(a, enc) for a in decoded.attrs]
    j["types"] = enc.types
    return j


def _attr_entry(a: AttributeReference, enc: _Encoder) -> list:
    entry = [a.name, a.expr_id, enc.type_id(a.data_type_), a.nullable_, list(a.qualifier)]
    if a.metadata is not None:
        entry.append(a.metadata)
    return entry
