"""Writes a request document as the JVM would: the other direction of the codec, for tests.

:func:`encode_request` writes exactly what the JVM sent for a decoded request (handles,
types, opaque details): ``encode_request(Decoded(doc)) == doc`` is the identity the
round-trip tests check, proving the decoder loses nothing. Production code never writes a
request; this encoder is the answer encoder with the hooks that differ.
"""

from __future__ import annotations

from typing import Any

from sparkext import _tree
from sparkext.codec.answers import AnswerEncoder, item_writers
from sparkext.codec.errors import WireError
from sparkext.codec.requests import Decoded
from sparkext.expressions import AttributeReference, Expression, FreshId, OpaqueExpression, Value
from sparkext.plan import Lazy, LogicalPlan, Opaque, Relation
from sparkext.wire import VERSION


class RequestEncoder(AnswerEncoder):
    """Every object in full, with its handle, type and what Catalyst said of it."""

    writers: dict[type, tuple] = _tree.wire_cache()

    def __init__(self, decoded: Decoded):
        super().__init__(decoded)
        self.decoded = decoded  # (self.d, never None here)
        self.types = [t.json for t in decoded.types]
        self.type_index = {t: i for i, t in enumerate(decoded.types)}

    def with_handle(self, j: dict, h: int | None) -> dict:
        return {"h": h, **j}

    def annotate(self, j: dict, e: Expression) -> dict:
        if e._type is not None:
            j["t"] = self.type_id(e._type)
        if e._nullable is not None:
            j["n"] = e._nullable
        if e._null_intolerant:
            j["ni"] = True
        return j

    def value_arg(self, v: Value) -> dict:
        return {**super().value_arg(v), "s": v.text}

    def expr_id(self, i):
        if isinstance(i, FreshId):
            raise WireError("a request cannot hold new expression ids")
        return i

    def reference_or_full(self, obj, full) -> dict:
        return full(obj, self.known(obj))  # a request holds every object in full

    def relation(self, r: Relation) -> dict:
        j: dict[str, Any] = {"h": r.handle, "k": "Relation", "cls": r.cls}
        if r.name is not None:
            j["name"] = r.name
        j["out"] = [self.expr(a) for a in r.output]
        if r.ordering:
            j["ord"] = [self.expr(o) for o in r.ordering]
        if r.ordering_is_global:
            j["glob"] = True
        return j

    def opaque_node(self, p: Opaque) -> dict:
        j: dict[str, Any] = {"k": "Opaque", "cls": p.cls, "out": [self.expr(a) for a in p.output],
             "c": [self.node(c) for c in p.children]}
        if isinstance(p.exprs, Lazy) and not p.exprs.is_decoded:
            j["x"] = self.decoded.opaque_raw[p.handle]
        elif p.expressions:
            j["x"] = [self.expr(e) for e in p.expressions]
        return j

    def opaque_expr(self, e: OpaqueExpression) -> dict:
        j: dict[str, Any] = {"k": "Opaque", "cls": e.cls}
        if e.shell is not None:
            j["sh"] = e.shell
        j["c"] = [self.expr(c) for c in e.children_]
        if not e.deterministic_:
            j["d"] = False
        if e.foldable_:
            j["f"] = True
        if e.distinct:
            j["dist"] = True
        extra = self.decoded.extra.get(id(e))
        if extra:
            j["r"] = extra["r"]
        if e.subquery_output is not None:
            j["so"] = [self.expr(a) for a in e.subquery_output]
        return j


RequestEncoder.items = item_writers(RequestEncoder)


def encode_request(decoded: Decoded, plan: LogicalPlan | None = None) -> dict:
    """The request for ``plan`` (default: the decoded plan) as the JVM wrote it, header
    and body as one dict (:func:`sparkext.codec.request_document`)."""
    enc = RequestEncoder(decoded)
    j: dict[str, Any] = {"v": VERSION}
    for key in ("id", "pos", "excluded", "catalyst_excluded", "tz", "tz_breaks", "topk"):
        if key in decoded.doc:
            j[key] = decoded.doc[key]
    j["plan"] = enc.node(decoded.plan if plan is None else plan)
    j["root"] = {"k": j["plan"]["k"], "h": j["plan"]["h"]}
    j["attrs"] = [_attr_entry(a, enc) for a in decoded.attrs]
    j["types"] = enc.types
    return j


def _attr_entry(a: AttributeReference, enc: RequestEncoder) -> list:
    entry = [a.name, a.expr_id, enc.type_id(a.data_type_), a.nullable_, list(a.qualifier)]
    if a.metadata is not None:
        entry.append(a.metadata)
    return entry
