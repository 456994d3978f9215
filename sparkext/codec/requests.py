"""Decoding a request: :class:`Decoded` turns one request document into the mirror and
remembers which mirror object came from which JVM handle (its per-call handle table).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from functools import cached_property, lru_cache
from types import MappingProxyType

from sparkext import _tree
from sparkext.codec.errors import WireError
from sparkext.codec.literals import type_value, value_in
from sparkext.context import CallContext
from sparkext.facts import (
    Bucketing,
    ColumnStats,
    DataFile,
    Format,
    PushedFilter,
    RelationFacts,
    RowGroup,
    TableId,
)
from sparkext.expressions import (
    Alias,
    AttributeReference,
    ExprId,
    Expression,
    InSet,
    Literal,
    OpaqueExpression,
    Value,
    to_attribute,
)
from sparkext.joins import ExistenceJoin, JoinType, OpaqueJoinType
from sparkext.kinds import Item, ItemCodec, plain, special
from sparkext.plan import AliasIdentifier, Lazy, LogicalPlan, Opaque, Relation
from sparkext.types import DataType
from sparkext.wire import HEADER_FIELDS, VERSION

_json = json.JSONDecoder()


@lru_cache(maxsize=4096)
def data_type(text: str) -> DataType:
    """The (immutable, shared) DataType for Spark's JSON text of a type: a session's plans
    use a few dozen types, and parsing their JSON anew was a sixth of every decode."""
    return DataType(text)


_HEADER_FIELDS = frozenset(HEADER_FIELDS)


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
        #: the header's settings, which the bridge makes current for the call
        self.context = CallContext.from_header(doc)
        self.call_id = self.context.call_id
        self.position = self.context.position
        self.excluded = self.context.excluded
        self.catalyst_excluded = self.context.catalyst_excluded
        self.attr_index: dict[int, int] = {}
        self.handles: dict[int, int] = {}
        self.relations: dict[int, Relation] = {}
        self.extra: dict[int, dict] = {}
        self.opaque_raw: dict[int, list] = {}
        self._alive: list = []  # keeps decoded objects alive, so their ids stay theirs
        root = doc.get("root") or {}
        cls = _tree.MIRRORED.get(root.get("k", ""))
        if cls is not None and not cls._special:
            self.plan = self._keep(_tree.lazy_node(cls, self._root_fields, root), root["h"])
        else:
            self.plan = self.node(self.body["plan"])

    @classmethod
    def from_json(cls, text: str) -> Decoded:
        """Decodes a request as the JVM sends it: the header now, the body when first read."""
        header, body_start = _json.raw_decode(text)
        if not _HEADER_FIELDS.issuperset(header):
            raise WireError(f"the request header has fields this package does not read: "
                            f"{sorted(set(header) - _HEADER_FIELDS)} (sparkext.wire.HEADER_FIELDS)")
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
        return [data_type(t) for t in self.body["types"]]

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
        obj: LogicalPlan
        if k == "Relation":
            out = self.exprs(j["out"])
            raw_facts = j.get("facts")
            obj = Relation(j["cls"], out, h, j.get("name"),
                           self.exprs(j["ord"]) if "ord" in j else (), j.get("glob", False),
                           None if raw_facts is None else Lazy(lambda: facts_in(raw_facts, out)))
            self.relations[h] = obj
        elif k == "Opaque":
            raw = j.get("x")
            exprs: tuple[Expression, ...] | Lazy = ()
            if raw:
                self.opaque_raw[h] = raw
                exprs = Lazy(lambda: self.exprs(raw))
            obj = Opaque(j["cls"], self.exprs(j["out"]), tuple(self.node(c) for c in j["c"]), h,
                         exprs)
        else:
            cls = _tree.MIRRORED.get(k)
            if cls is None:
                raise WireError(f"unknown plan node kind {k!r}")
            # (MIRRORED holds expression classes too: the JVM names a plan node here)
            obj = _tree.lazy_node(cls, self._node_fields, j["p"])  # type: ignore[assignment]
        return self._keep(obj, h)

    def _node_fields(self, cls, p: list):
        return zip(cls._wire_names, self._args(cls, p))

    def _args(self, cls, p: list) -> list:
        readers = _READERS.get(cls) or _readers_of(cls)
        return [read(self, v) for read, v in zip(readers, p)]

    def type_at(self, i: int) -> DataType:
        return self.types[i]

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
            dt = self.types[j["t"]]  # (a literal always has its type)
            return self._keep(Literal(value_in(j["v"], type_value(dt)), dt), j["h"])
        meta = {"_type": None if t is None else self.types[t], "_nullable": j.get("n"),
                "_null_intolerant": j.get("ni")}
        obj: Expression
        if k == "Alias":
            p = j["p"]
            obj = Alias(self.expr(p[0]), p[1], p[2], tuple(p[3]), p[4], tuple(p[5]), **meta)
        elif k == "InSet":
            p = j["p"]
            child = self.expr(p[0])
            ct = type_value(child.data_type)
            obj = InSet(child, tuple(value_in(v, ct) for v in p[1]), **meta)
        elif k == "Opaque":
            refs = None
            if "r" in j:
                refs = frozenset().union(*(e.references for e in self.exprs(j["r"])))
            sub_out = self.exprs(j["so"]) if "so" in j else None
            obj = OpaqueExpression(j["cls"], self.exprs(j["c"]), j["h"], j.get("d", True),
                                   j.get("f", False), refs, sub_out, None, j.get("sh"),
                                   j.get("dist", False), **meta)
            if "r" in j:
                self.extra[id(obj)] = {"r": j["r"]}
        else:
            cls = _tree.MIRRORED.get(k)
            if cls is None:
                raise WireError(f"unknown expression kind {k!r}")
            # (MIRRORED holds plan classes too: the JVM names an expression here)
            obj = cls(*self._args(cls, j["p"]), **meta)  # type: ignore[assignment]
        return self._keep(obj, j["h"])


def facts_in(j: dict, output: tuple) -> RelationFacts:
    """A relation's ``facts`` (docs/wire-format.md, "Relation facts"); columns travel as
    positions in the relation's output, values as literals of the column's type. Decoded
    when a rule first reads ``Relation.facts`` (only rules that need files get them)."""
    def cols(positions) -> tuple:
        return tuple(output[i] for i in positions)
    tbl = j.get("tbl")
    bkt = j.get("bkt")
    files = j.get("files")
    pushed = j.get("pushed")
    columns = _Columns(output)
    partition_columns = cols(j.get("part", ()))
    return RelationFacts(
        format=Format.of(j.get("fmt", {"other": "?"})),
        table=None if tbl is None else TableId(tbl[0], tuple(tbl[1]), tbl[2]),
        location=tuple(j.get("loc", ())),
        partition_columns=partition_columns,
        bucketing=None if bkt is None else Bucketing(cols(bkt[1]), bkt[0], cols(bkt[2])),
        properties=MappingProxyType(dict(j.get("props", {}))),
        size_in_bytes=j.get("size"),
        row_count=j.get("rows"),
        files=None if files is None else tuple(_file_in(f, columns, partition_columns)
                                               for f in files),
        files_unknown=j.get("nofiles") or j.get("error"),
        partitioning=tuple(j.get("ptn", ())),
        pushed_filters=None if pushed is None else tuple(PushedFilter(t, p) for t, p in pushed),
        pushed_unknown=j.get("nopushed"),
    )


def _file_in(f: list, columns: _Columns, partition_columns: tuple) -> DataFile:
    path, size, mtime, pvs, rows, stats, groups = f[:7]
    values = {a.expr_id: value_in(v, type_value(a.data_type))
              for a, v in zip(partition_columns, pvs)}
    # (the JVM names the partition where the values do not say it all: Iceberg's hidden
    # partitions, a scan that left a partition column out of its output)
    partition = f[7] if len(f) > 7 else (tuple(values.values()) if values else None)
    return DataFile(
        path, size, mtime, MappingProxyType(values),
        rows, _ColumnStatsIn(stats, columns),
        None if groups is None else tuple(RowGroup(g[0], _ColumnStatsIn(g[1], columns))
                                          for g in groups),
        partition)


class _Columns:
    """A relation's output, by wire position and by id, shared by its files' statistics."""

    __slots__ = ("output", "position")

    def __init__(self, output: tuple):
        self.output = output
        self.position = {a.expr_id: str(i) for i, a in enumerate(output)}


class _ColumnStatsIn(Mapping):
    """One file's or row group's statistics, column id -> :class:`ColumnStats`, each column
    decoded when first read: a rule reads one or two columns of the many a footer has
    (decoding them all was most of a top-K's planning over 200 files)."""

    __slots__ = ("_wire", "_columns", "_decoded")

    def __init__(self, wire: dict, columns: _Columns):
        self._wire = wire
        self._columns = columns
        self._decoded: dict[ExprId, ColumnStats] = {}

    def __getitem__(self, expr_id: ExprId) -> ColumnStats:
        got = self._decoded.get(expr_id)
        if got is None:
            at = self._columns.position.get(expr_id)
            if at is None or at not in self._wire:
                raise KeyError(expr_id)
            lo, hi, nulls = self._wire[at]
            t = type_value(self._columns.output[int(at)].data_type)
            got = self._decoded[expr_id] = ColumnStats(value_in(lo, t), value_in(hi, t), nulls)
        return got

    def __iter__(self) -> Iterator[ExprId]:
        output = self._columns.output
        return (output[int(i)].expr_id for i in self._wire)

    def __len__(self) -> int:
        return len(self._wire)

    def __repr__(self) -> str:
        return repr(dict(self))


def join_type_in(d: Decoded, v):
    """A join type from its wire form: a name, ``{"ExistenceJoin": expr}``, or a value."""
    if isinstance(v, str):
        return JoinType.from_wire(v)
    if "ExistenceJoin" in v:
        return ExistenceJoin(to_attribute(d.expr(v["ExistenceJoin"])))  # (an attribute)
    return OpaqueJoinType(Value(v["s"], v["v"]))


def _value_arg_in(_d: Decoded, v: dict) -> Value:
    return Value(v["s"], v["v"])


def _alias_id_in(_d: Decoded, v: list) -> AliasIdentifier:
    return AliasIdentifier(v[0], tuple(v[1]))


#: How the decoder reads one item of each kind (sparkext.kinds.Item).
ITEM_READERS: dict[Item, ItemCodec] = {
    Item.EXPR: Decoded.expr, Item.PLAN: Decoded.node, Item.TYPE: Decoded.type_at,
    Item.VALUE: _value_arg_in, Item.JOIN_TYPE: join_type_in, Item.ALIAS_ID: _alias_id_in,
    Item.PLAIN: plain, Item.SPECIAL: special,
}
#: mirror class -> one reader per argument on the wire (the Spark line's), composed once
#: per class: decoding a node is then one call per field, with no dispatch on its kind.
_READERS: dict[type, tuple[ItemCodec, ...]] = _tree.wire_cache()


def _readers_of(cls: type[_tree.TreeNode]) -> tuple[ItemCodec, ...]:
    readers = _READERS[cls] = tuple(kind.decoder(ITEM_READERS) for _, kind in cls._wire_args)
    return readers
