"""Encoding an answer: the rewritten plan in wire form (docs/wire-format.md, "Answer").

Every object that is still the very object decoded goes back as ``{"ref": h}`` (the
request's handle table, kept by :class:`~sparkext.codec.requests.Decoded`), so the JVM
reuses the original Catalyst object; new objects go in full, without handles. The
answer's own table is its list of types.
"""

from __future__ import annotations

import dataclasses

from sparkext import _tree
from sparkext.codec.errors import WireError
from sparkext.codec.literals import type_value, value_out
from sparkext.codec.requests import Decoded
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
from sparkext.joins import ExistenceJoin, OpaqueJoinType
from sparkext.kinds import Item, plain, special
from sparkext.plan import AliasIdentifier, Lazy, LocalRows, LogicalPlan, Opaque, Relation
from sparkext.types import DataType


class AnswerEncoder:
    """Writes mirror objects in wire form, as an answer.

    The methods a subclass may change are public (``sparkext.testing.request_encoder``
    writes requests with them): :meth:`reference_or_full` decides whether an object travels
    as a reference, :meth:`full_node` and :meth:`full_expr` write one in full, and the hooks
    they call decide what goes with it.
    """

    #: Item -> how one item is written (set below the class, per subclass); mirror class ->
    #: (field, writer) per argument, composed once per class (Kind.encoder)
    items: dict = {}
    writers: dict[type, tuple] = _tree.wire_cache()

    def __init__(self, decoded: Decoded | None):
        self.d = decoded
        self.types: list = []
        self.type_index: dict = {}

    def type_id(self, t: DataType) -> int:
        i = self.type_index.get(t)
        if i is None:
            i = self.type_index[t] = len(self.types)
            self.types.append(t.json)
        return i

    def known(self, obj) -> int | None:
        """The handle ``obj`` was decoded from, if it is still that very object."""
        return None if self.d is None else self.d.handle_of(obj)

    def args(self, node) -> list:
        cls = type(node)
        writers = self.writers.get(cls) or self._writers_of(cls)
        for name, default in cls._absent:
            # This Spark line's constructor has no such argument: a value other than the
            # one Catalyst behaves as if it had cannot be sent.
            if getattr(node, name) != default:
                raise WireError(f"{cls.__name__}.{name} is not an argument in this Spark "
                                f"line; it can only be {default!r}")
        return [write(self, getattr(node, name)) for name, write in writers]

    @classmethod
    def _writers_of(cls, node_cls: type[_tree.TreeNode]) -> tuple:
        writers = cls.writers[node_cls] = tuple(
            (name, kind.encoder(cls.items)) for name, kind in node_cls._wire_args)
        return writers

    # -- hooks -----------------------------------------------------------------------------

    def with_handle(self, j: dict, h: int | None) -> dict:
        """An object written in full: an answer does not send handles."""
        return j

    def annotate(self, j: dict, e: Expression) -> dict:
        """An expression written in full: the JVM derives its type itself."""
        return j

    def value_arg(self, v: Value) -> dict:
        if v.handle is None:
            raise WireError(f"the value {v.text!r} was not sent by Spark and cannot be built")
        return {"v": v.handle}

    def expr_id(self, i):
        if isinstance(i, FreshId):
            return {"nid": i.n}
        return i

    # -- plans -----------------------------------------------------------------------------

    def node(self, p: LogicalPlan) -> dict:
        return self.reference_or_full(p, self.full_node)

    def reference_or_full(self, obj, full) -> dict:
        """``obj`` as a reference to its handle when it is the very object the request
        held (the JVM reuses the original), else ``full(obj, handle)``."""
        h = self.known(obj)
        if h is not None:
            return {"ref": h}
        return full(obj, h)

    def full_node(self, p: LogicalPlan, h: int | None) -> dict:
        if isinstance(p, Relation):
            return self.relation(p)
        if isinstance(p, LocalRows):
            types = [type_value(a.data_type) for a in p.output]
            return {"k": "LocalRelation", "out": [self.attribute(a) for a in p.output],
                    "rows": [[value_out(v, t) for v, t in zip(row, types)] for row in p.rows]}
        if isinstance(p, Opaque):
            return self.with_handle(self.opaque_node(p), h)
        if not isinstance(p, LogicalPlan) or not hasattr(p, "_wire"):
            raise WireError(f"a rule returned {type(p).__name__}, not a plan node")
        return self.with_handle({"k": p._wire, "p": self.args(p)}, h)

    def relation(self, r: Relation) -> dict:
        original = None if self.d is None else self.d.relations.get(r.handle)
        if original is not None and r.keep_files is not None and original.keep_files is None \
                and dataclasses.replace(r, keep_files=None) == original:
            return {"k": "Relation", "src": r.handle, "keep": list(r.keep_files)}
        if original is None or original != r:
            raise WireError(f"a rule changed the relation {r.simple_string()}: relations cannot "
                            "be rebuilt, only kept (put a Project above it instead) or made "
                            "to read fewer files (Relation.reading_only)")
        return {"ref": r.handle}

    def opaque_node(self, p: Opaque) -> dict:
        j = {"k": "Opaque", "src": p.handle, "c": [self.node(c) for c in p.children]}
        # A tuple (not the Lazy the decoder made) means a rule replaced them.
        if not isinstance(p.exprs, Lazy) and p.exprs:
            j["x"] = [self.expr(e) for e in p.exprs]
        return j

    # -- expressions -----------------------------------------------------------------------

    def expr(self, e: Expression) -> dict:
        if isinstance(e, AttributeReference):
            return self.attribute(e)
        return self.reference_or_full(e, self.full_expr)

    def full_expr(self, e: Expression, h: int | None) -> dict:
        if isinstance(e, Literal):
            j = {"k": "Literal", "v": value_out(e.value, type_value(e.data_type_)),
                 "t": self.type_id(e.data_type_)}
            return self.with_handle(j, h)
        if isinstance(e, Alias):
            j = {"k": "Alias", "p": [self.expr(e.child), e.name, self.expr_id(e.expr_id),
                                     list(e.qualifier), e.explicit_metadata,
                                     list(e.non_inheritable_metadata_keys)]}
        elif isinstance(e, InSet):
            ct = type_value(e.child.data_type)
            j = {"k": "InSet", "p": [self.expr(e.child), [value_out(v, ct) for v in e.hset]]}
        elif isinstance(e, OpaqueExpression):
            j = self.opaque_expr(e)
        elif hasattr(e, "_wire") and not e._special:
            j = {"k": e._wire, "p": self.args(e)}
        else:
            raise WireError(f"a rule returned {type(e).__name__}, not an expression")
        return self.annotate(self.with_handle(j, h), e)

    def opaque_expr(self, e: OpaqueExpression) -> dict:
        j = {"k": "Opaque", "src": e.handle, "c": [self.expr(c) for c in e.children_]}
        if e.keep is not None:
            j["keep"] = sorted(e.keep)
        return j

    def attribute(self, a: AttributeReference) -> dict:
        if self.d is not None:
            i = self.d.attr_index.get(id(a))
            if i is None:
                i = self.d.attr_by_value.get(a)
            if i is not None:
                return {"a": i}
        return {"k": "AttributeReference",
                "p": [a.name, self.type_id(a.data_type_), a.nullable_, a.metadata,
                      self.expr_id(a.expr_id), list(a.qualifier)]}


def join_type_out(enc: AnswerEncoder, v):
    """The wire form of a join type (inverse of
    :func:`sparkext.codec.requests.join_type_in`)."""
    if isinstance(v, ExistenceJoin):
        return {"ExistenceJoin": enc.expr(v.exists)}
    if isinstance(v, OpaqueJoinType):
        return enc.value_arg(v.value)
    return v.wire


def _alias_id_out(_enc: AnswerEncoder, v: AliasIdentifier) -> list:
    return [v.name, list(v.qualifier)]


def item_writers(encoder: type[AnswerEncoder]) -> dict:
    """How ``encoder`` writes one item of each kind (sparkext.kinds.Item): its own methods,
    so that a subclass's overrides are what its writers call."""
    return {
        Item.EXPR: encoder.expr, Item.PLAN: encoder.node, Item.TYPE: encoder.type_id,
        Item.VALUE: encoder.value_arg, Item.JOIN_TYPE: join_type_out,
        Item.ALIAS_ID: _alias_id_out, Item.PLAIN: plain, Item.SPECIAL: special,
    }


ITEM_WRITERS = AnswerEncoder.items = item_writers(AnswerEncoder)


def encode_answer(plan: LogicalPlan, decoded: Decoded, rules: list[str]) -> dict:
    """The answer document for a rewritten plan."""
    enc = AnswerEncoder(decoded)
    return {"plan": enc.node(plan), "types": enc.types, "rules": rules}
