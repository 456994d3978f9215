"""The machinery shared by plan nodes and expressions: immutable tree nodes, the
``@mirror`` decorator that declares a Catalyst case class, and tree transforms.

A mirror class lists its fields in the order of the Catalyst constructor, each with the
*kind* of argument it is (``"e"`` expression, ``"p"`` plan, ``"es"`` sequence of
expressions, ...: :class:`sparkext.kinds.Kind`; the table is in docs/wire-format.md).
From that one declaration come
the wire codec (both directions), ``children``, ``expressions`` and ``with_new_children``,
and the spec the JVM uses to build the class.

Catalyst's constructors differ between Spark lines (3.5's ``Sort`` has no ``hint``; 4.3's
``Floor`` gained ``failOnError``). A field declares the line it arrived in
(``arg("x?", default=None, since="4.0")``) and, when its kind changed, the kind it had
before (``kind_before=("4.2", "l")``). :func:`mirror_spec` gives the JVM the arguments of
the running Spark's line, and the codec then reads and writes exactly those
(``cls._wire_args``); a field absent on the line holds its default.
"""

from __future__ import annotations

import dataclasses
import operator
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import field
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from sparkext import versions
from sparkext.kinds import Item, Kind, Shape

if TYPE_CHECKING:
    # typing has it from Python 3.11 only; it is for type checkers alone (mypy ships
    # typing_extensions), so nothing imports it at run time.
    from typing_extensions import dataclass_transform
else:
    def dataclass_transform(**kw):
        return lambda f: f

T = TypeVar("T", bound="TreeNode")
#: the instances of a mirror class, as ``@mirror`` gets and returns it
_N = TypeVar("_N", bound="TreeNode")
#: what a node cache slot holds
_V = TypeVar("_V")

#: wire name (Catalyst's simple class name) -> mirror class
MIRRORED: dict[str, type[TreeNode]] = {}


def arg(kind: Kind | str, default: Any = dataclasses.MISSING, *, since: str | None = None,
        kind_before: tuple[str, Kind | str] | None = None, **kw: Any) -> Any:
    """A dataclass field that is a Catalyst constructor argument of the given kind (a
    :class:`~sparkext.kinds.Kind` or its wire code; ``@mirror`` checks it).

    ``since`` is the Spark line (``"4.0"``) whose constructor first takes the argument: on
    older lines it is not on the wire and the field holds ``default``, the value Catalyst
    behaves as if it had. ``kind_before=(line, kind)``: before ``line`` the argument had
    that other kind (Sample's seed was a ``long`` before 4.2, an ``Option`` since).
    """
    if since is not None and default is dataclasses.MISSING:
        raise TypeError("an argument absent on older Spark lines needs the default it holds there")
    return field(default=default,
                 metadata={"kind": kind, "since": since, "kind_before": kind_before}, **kw)


def spark_line(spark_version: str) -> tuple[int, int]:
    """``(major, minor)`` of a Spark version: ``"3.5.9"``, ``"4.2.0-preview1"``, ``"4.3"``.

    >>> spark_line("4.2.0-preview1"), spark_line("3.5")
    ((4, 2), (3, 5))
    """
    major, minor = versions.spark_line(spark_version).split(".")
    return int(major), int(minor)


def _kind(cls: type, name: str, code: Kind | str) -> Kind:
    try:
        return Kind(code)
    except ValueError:
        raise TypeError(f"{cls.__qualname__}.{name}: unknown argument kind {code!r} "
                        f"(the kinds are {', '.join(k.code for k in Kind)}: "
                        "sparkext.kinds.Kind)") from None


@dataclasses.dataclass(frozen=True)
class _LineArg:
    """How one argument differs between Spark lines."""

    name: str
    default: object
    since: tuple[int, int] | None
    kind_before: tuple[tuple[int, int], Kind] | None

    def kind_on(self, kind: Kind, line: tuple[int, int] | None) -> Kind | None:
        """The argument's kind on ``line`` (None: the newest), None when it is absent."""
        if line is None:
            return kind
        if self.since is not None and line < self.since:
            return None
        if self.kind_before is not None and line < self.kind_before[0]:
            return self.kind_before[1]
        return kind


def _declared_kinds(cls: type) -> tuple[tuple[tuple[str, Kind], ...], tuple[_LineArg, ...]]:
    """``(field, Kind)`` of the class's arguments (as the newest Spark line takes them), and
    how those that differ between lines do; an unknown kind fails the declaration."""
    out: list[tuple[str, Kind]] = []
    lines: list[_LineArg] = []
    absent_before = False
    for f in dataclasses.fields(cls):
        if "kind" not in f.metadata:
            continue
        out.append((f.name, _kind(cls, f.name, f.metadata["kind"])))
        since, before = f.metadata.get("since"), f.metadata.get("kind_before")
        if since is not None or before is not None:
            lines.append(_LineArg(
                f.name, f.default, None if since is None else spark_line(since),
                None if before is None else (spark_line(before[0]),
                                             _kind(cls, f.name, before[1]))))
        if since is not None:
            absent_before = True
        elif absent_before:
            # The codec builds a node from the arguments on the wire by position: those
            # absent on a line can only be the last ones.
            raise TypeError(f"{cls.__qualname__}.{f.name} follows an argument absent on older "
                            "Spark lines: such arguments must come last")
    return tuple(out), tuple(lines)


#: The Spark line the codec speaks (None: the newest, every declared argument), set by
#: :func:`mirror_spec`. A Python process talks to one JVM, so there is one.
_active_line: tuple[int, int] | None = None
#: Caches derived from ``_wire_args`` (the codec's readers and writers), emptied when the
#: line changes: :func:`wire_cache`.
_WIRE_CACHES: list[dict[Any, Any]] = []


def wire_cache() -> dict[Any, Any]:
    """A dict for values derived from classes' ``_wire_args``, emptied when they change."""
    cache: dict[Any, Any] = {}
    _WIRE_CACHES.append(cache)
    return cache


def line_args(cls: type[TreeNode], line: tuple[int, int] | None
              ) -> tuple[tuple[tuple[str, Kind], ...], tuple[tuple[str, object], ...]]:
    """``(wire args, absent)`` of a mirror class on a Spark line: the ``(field, Kind)`` the
    line's constructor takes, in order, and the ``(field, default)`` it does not take."""
    if not cls._line_args:
        return cls._args, ()
    differ = {a.name: a for a in cls._line_args}
    wire: list[tuple[str, Kind]] = []
    absent: list[tuple[str, object]] = []
    for name, kind in cls._args:
        a = differ.get(name)
        if a is None:
            wire.append((name, kind))
            continue
        k = a.kind_on(kind, line)
        if k is None:
            absent.append((name, a.default))
        else:
            wire.append((name, k))
    return tuple(wire), tuple(absent)


def _speak(cls: type[TreeNode], line: tuple[int, int] | None) -> None:
    wire, absent = line_args(cls, line)
    cls._wire_args = wire
    cls._wire_names = tuple(n for n, _ in wire)
    cls._absent = absent


@dataclass_transform(frozen_default=True, field_specifiers=(arg, field))
def mirror(spark_class: str, *, pattern: str | None = None, special: bool = False
           ) -> Callable[[type[_N]], type[_N]]:
    """Declares a frozen dataclass as the mirror of the Catalyst class ``spark_class``.

    ``pattern`` is the Catalyst ``TreePattern`` bit the class sets, which lets the JVM skip
    the call for plans a rule cannot match. ``special`` marks classes whose wire form
    is written by hand on both sides (attributes, literals, aliases, InSet).
    """

    def wrap(cls: type[_N]) -> type[_N]:
        cls = dataclasses.dataclass(frozen=True, slots=True, repr=False)(cls)
        args, line_args_ = _declared_kinds(cls)
        cls._check_declaration()
        cls._spark_class = spark_class
        cls._wire = spark_class.rsplit(".", 1)[1]
        cls._args = args
        cls._arg_names = tuple(n for n, _ in args)
        cls._line_args = line_args_
        _speak(cls, _active_line)
        cls._special = special
        cls._pattern = pattern
        # Plans' children are plans; expressions' children are expressions.
        cls._kids = tuple((n, k.shape) for n, k in args if k.item is cls._child_item)
        cls._read_children = staticmethod(_items_reader(cls._kids))
        cls._expr_fields = tuple((n, k.shape) for n, k in args if k.item is Item.EXPR)
        cls._read_expressions = staticmethod(_items_reader(cls._expr_fields))
        _cache_hash(cls)
        MIRRORED[cls._wire] = cls
        return cls

    return wrap


# ---------------------------------------------------------------------------------------------
# The node cache
#
# A node never changes, so neither does anything derived from it alone: it is computed once
# and kept in the node's ``_cache`` dict. Two kinds of entries, each with one accessor
# declared once: the node's own facts, ``@fact`` properties of its class (kept under the
# property's name), and what an analysis in another module derives, a :class:`CacheSlot`
# that module declares (kept under ``"#"`` and the slot's name, so the two never meet). No
# module writes the cache by a key of its own. Every kept value is shared by all who read
# it, so it is immutable (a tuple, a frozenset, a node, a frozen EquivalenceProperties or
# Constraints); the one exception is a memo private to the function that owns its slot.


if TYPE_CHECKING:
    fact = property  # what type checkers need to know: it makes a read-only property
else:
    def fact(compute):
        """A property computed once per node and kept in its ``_cache`` under the
        function's name (the node never changes, so neither does the fact).

        Both paths are in the getter itself: rules read facts such as ``children`` and
        ``references`` hundreds of thousands of times a call on large plans, and miss
        each once per node. A getter calling a cache method with a new closure made the
        built-in rules run 10% more instructions on TPC-DS, a call to a helper on the
        miss path 2%."""
        key = compute.__name__

        def get(self):
            try:
                return self._cache[key]
            except KeyError:
                cache = self._cache
            except AttributeError:
                cache = {}
                object.__setattr__(self, "_cache", cache)
            value = cache[key] = compute(self)
            return value

        return property(get, doc=compute.__doc__)


def _keep(node: TreeNode, key: str, value: Any) -> Any:
    """``value``, kept in ``node``'s ``_cache`` under ``key``: the miss path of a cached
    value. (Called after an ``except`` clause, not in it: a value computed inside the
    handler would chain every exception its own misses raise onto the caught KeyError.)"""
    cache = getattr(node, "_cache", None)
    if cache is None:
        cache = {}
        object.__setattr__(node, "_cache", cache)
    cache[key] = value
    return value


#: slot name -> the slot: every :class:`CacheSlot` declared
_SLOTS: dict[str, CacheSlot[Any]] = {}


class CacheSlot(Generic[_V]):
    """One analysis's entry in the cache of every node: a value derived from the node (and
    what is below it) alone, computed on first read and kept.

    Declared once, at module level, by the module that computes it, with its name and its
    function of the node, and read only through it::

        _UNIQUE_KEYS: CacheSlot[tuple[UniqueKey, ...]] = CacheSlot("unique_keys", _derive)

        def unique_keys(plan):
            return _UNIQUE_KEYS.get(plan)

    Two slots cannot share a name. The value is handed to every caller, so the function
    returns an immutable one; whoever wants another builds it anew.
    """

    __slots__ = ("name", "key", "_compute")

    def __init__(self, name: str, compute: Callable[[Any], _V] | None) -> None:
        """``compute(node)``: the value, on the first read; None for a slot whose value is
        put, never computed."""
        if name in _SLOTS:
            raise ValueError(f"a node cache slot named {name!r} exists already: each "
                             "analysis declares its own, once")
        self.name = name
        #: where the value is kept in a node's ``_cache`` (a ``@fact`` is kept under its
        #: property's name, which never starts with "#"). Read directly only on hit paths
        #: that must not pay for a call (``semantic_key``, ``__hash__``, ``tree_bits``).
        self.key = "#" + name
        self._compute = compute
        _SLOTS[name] = self

    def get(self, node: TreeNode) -> _V:
        """The value for ``node``: the kept one, else computed now and kept."""
        try:
            return node._cache[self.key]
        except (AttributeError, KeyError):
            pass
        if self._compute is None:
            raise LookupError(f"node cache slot {self.name!r}: nothing kept for this node")
        return _keep(node, self.key, self._compute(node))

    def peek(self, node: TreeNode) -> _V | None:
        """The kept value, or None when none is kept yet (nothing is computed)."""
        cache = getattr(node, "_cache", None)
        return None if cache is None else cache.get(self.key)

    def put(self, node: TreeNode, value: _V) -> _V:
        """Keeps ``value`` for ``node`` (for a value computed for many nodes at once)."""
        return _keep(node, self.key, value)

    def __repr__(self) -> str:
        return f"CacheSlot({self.name!r})"


def _items_reader(fields: tuple[tuple[str, Shape], ...]) -> Callable[[Any], tuple[Any, ...]]:
    """How a class's children (or a plan's expressions) are read from ``fields``, made once
    per class: every node's first ``children`` or ``expressions`` read goes through it, and
    nearly every class has one such field, two, or one sequence."""
    if not fields:
        return lambda node: ()
    if all(shape is Shape.ONE for _, shape in fields):
        get = operator.attrgetter(*(name for name, _ in fields))  # (several names: a tuple)
        return (lambda node: (get(node),)) if len(fields) == 1 else get
    if len(fields) == 1 and fields[0][1] is Shape.SEQ:
        one = operator.attrgetter(fields[0][0])
        return lambda node: tuple(one(node))
    return lambda node: tuple(x for name, shape in fields
                              for x in shape.flatten(getattr(node, name)))


def _cache_hash(cls: type[TreeNode]) -> None:
    # Frozen dataclasses hash every field recursively; trees are hashed often (sets of
    # expressions, memo keys), so the hash is kept with the node.
    cls._fields_hash = cls.__hash__
    cls.__hash__ = _kept_hash  # type: ignore[method-assign,assignment]


def _kept_hash(self: TreeNode) -> int:
    try:
        return self._cache[_HASH.key]
    except (AttributeError, KeyError):
        pass
    return _HASH.get(self)


#: a node's structural hash (the dataclass's, over every field)
_HASH: CacheSlot[int] = CacheSlot("hash", lambda node: type(node)._fields_hash(node))


# ---------------------------------------------------------------------------------------------
# Nodes decoded on first read


#: a lazily decoded node's ``(fill, raw)``: what decodes its fields (put by
#: :func:`lazy_node`, taken by the first field read)
_PENDING: CacheSlot[tuple[Any, Any]] = CacheSlot("pending", None)
# Reentrant: a fill that read another lazy node (none does today: a node's fill builds
# its expressions eagerly and leaves its child nodes unread) must not hang.
_fill_lock = threading.RLock()
#: mirror class -> its lazy twin
_LAZY: dict[type, type] = {}


def lazy_node(cls: type[_N], fill: Callable[[type[_N], Any], Iterable[tuple[str, object]]],
              raw: Any) -> _N:
    """A ``cls`` whose fields are decoded when first read: ``fill(cls, raw)`` yields
    ``(field name, value)`` for every field.

    The object starts as an instance of a field-less twin subclass of ``cls`` (same name,
    same slots, so ``isinstance`` and ``match`` see a ``cls``). Its first field read fills
    the slots and switches its class to ``cls`` itself: from then on it is an ordinary
    mirror object, and attribute reads cost what they always do (a ``__getattr__`` on the
    mirror classes themselves would make every read of every node about twice as slow).
    The codec uses it so that a rule pays only for the parts of a plan it looks at.
    """
    obj: _N = object.__new__(_LAZY.get(cls) or _lazy_class(cls))
    object.__setattr__(obj, "_cache", {_PENDING.key: (fill, raw)})
    return obj


def _lazy_class(cls: type[TreeNode]) -> type:
    post_init = getattr(cls, "__post_init__", None)

    def materialize(self: TreeNode) -> None:
        with _fill_lock:  # a node read by two threads at once is filled once
            if type(self) is cls:
                return
            fill, raw = _PENDING.get(self)
            for name, value in fill(cls, raw):
                object.__setattr__(self, name, value)
            for name, value in cls._absent:  # not on this Spark line's wire
                object.__setattr__(self, name, value)
            if post_init is not None:
                post_init(self)
            del self._cache[_PENDING.key]
            object.__setattr__(self, "__class__", cls)

    def __getattr__(self: TreeNode, name: str) -> Any:  # reached only for unset slots: the fields
        materialize(self)
        return getattr(self, name)

    # Dunder methods are looked up on the class, past __getattr__: those that would see
    # the twin rather than the fields fill the node first.
    # (a dataclass __eq__ wants other.__class__ is self.__class__)
    def __eq__(self: TreeNode, other: object) -> bool:
        materialize(self)
        return self == other

    def __hash__(self: TreeNode) -> int:
        materialize(self)
        return hash(self)

    def __reduce_ex__(self: TreeNode, protocol: int) -> Any:  # copy, deepcopy, pickle
        materialize(self)
        return self.__reduce_ex__(protocol)

    # (dataclasses.replace(node, **every_field))
    def __new__(klass: type, *args: Any, **kwargs: Any) -> TreeNode:
        return cls(*args, **kwargs)

    twin = type(cls.__name__, (cls,), {
        "__slots__": (), "_bit": cls._bit,
        "__qualname__": cls.__qualname__, "__module__": cls.__module__,
        "__doc__": cls.__doc__, "__getattr__": __getattr__, "__eq__": __eq__,
        "__hash__": __hash__, "__reduce_ex__": __reduce_ex__, "__new__": __new__})
    _LAZY[cls] = twin
    return twin


def _tree_bits(root: TreeNode) -> int:
    # Children first, without recursion: a plan may be deeper than Python's stack. Every
    # node below gets its bits kept on the way (``_BITS.get`` keeps the root's).
    stack: list[tuple[TreeNode, bool]] = [(root, False)]
    bits = 0
    while stack:
        node, kids_done = stack.pop()
        if kids_done:
            bits = type(node)._bit
            for c in node.children:
                bits |= c._cache[_BITS.key]
            if node is not root:
                _BITS.put(node, bits)
            continue
        stack.append((node, True))
        stack.extend((c, False) for c in node.children
                     if _BITS.key not in getattr(c, "_cache", {}))
    return bits


#: the pattern bits of a tree (:attr:`TreeNode.tree_bits`)
_BITS: CacheSlot[int] = CacheSlot("tree_bits", _tree_bits)


def mirror_spec(spark_version: str | None = None) -> list[dict]:
    """What the JVM needs to build every mirror class: name, Catalyst class, and the
    argument kinds its constructor takes in ``spark_version`` (the version the JVM reports;
    None: the newest line, every declared argument).

    It also makes this line the one the codec speaks: the spec sent to a JVM and the
    arguments the codec reads and writes cannot disagree. One process talks to one JVM.
    """
    global _active_line
    line = None if spark_version is None else spark_line(spark_version)
    if line != _active_line:
        _active_line = line
        for c in MIRRORED.values():
            _speak(c, line)
        for cache in _WIRE_CACHES:
            cache.clear()
    return [{"name": c._wire, "cls": c._spark_class,
             "kinds": None if c._special else [k.code for _, k in c._wire_args]}
            for c in MIRRORED.values()]


#: Every TreeNode class, in the order their pattern bits were given.
_CLASSES: list[type[TreeNode]] = []
#: tuple of classes -> the bits of those classes and their subclasses
_MASKS: dict[tuple[type, ...], int] = {}


def pattern_mask(classes: Iterable[type]) -> int:
    """The pattern bits of ``classes`` and of every subclass of them: a tree whose
    :attr:`TreeNode.tree_bits` share none holds no node of any of them."""
    key = tuple(classes)
    try:
        return _MASKS[key]
    except KeyError:
        mask = 0
        for c in _CLASSES:
            if issubclass(c, key):
                mask |= c._bit
        if not all(isinstance(c, type) and issubclass(c, TreeNode) for c in key):
            mask = -1  # a class without bits may be anywhere
        _MASKS[key] = mask
        return mask


class TreeNode:
    """Base of plan nodes and expressions: immutable, compared by structure.

    Derived facts are computed once per node and kept in ``_cache`` (the node itself
    never changes, so neither do they): :func:`fact` properties, or a :class:`CacheSlot`
    for what another module derives. Each class has a pattern bit of its own, and
    ``tree_bits`` are the bits of every class in a tree, as Catalyst's ``TreePatternBits``:
    a transform or a rule can tell in one step that a subtree holds nothing it matches.
    """

    __slots__ = ("_cache",)
    _bit: int = 0

    def __init_subclass__(cls, **kw: object) -> None:
        super().__init_subclass__(**kw)
        # A class remade from another (dataclass slots, a lazy twin) carries its bit over.
        if "_bit" not in cls.__dict__:
            cls._bit = 1 << len(_CLASSES)
        _CLASSES.append(cls)
        _MASKS.clear()

    #: the node cache: ``@fact`` values and :class:`CacheSlot` values (never written by
    #: a key of one's own)
    _cache: dict[str, Any]
    #: the dataclass's hash over every field (``__hash__`` keeps it: :func:`_cache_hash`)
    _fields_hash: ClassVar[Callable[[Any], int]]
    # Set on each mirror class by @mirror (and _speak, per Spark line):
    #: Catalyst's class name, and its simple name (the wire name)
    _spark_class: ClassVar[str]
    _wire: ClassVar[str]
    #: (field, Kind) of the arguments, as the newest line takes them, and their names
    _args: ClassVar[tuple[tuple[str, Kind], ...]]
    _arg_names: ClassVar[tuple[str, ...]]
    #: how the arguments that differ between Spark lines do
    _line_args: ClassVar[tuple[_LineArg, ...]]
    #: (field, Kind) the active line's constructor takes, their names, and the
    #: (field, default) of those it does not take
    _wire_args: ClassVar[tuple[tuple[str, Kind], ...]]
    _wire_names: ClassVar[tuple[str, ...]]
    _absent: ClassVar[tuple[tuple[str, object], ...]]
    _special: ClassVar[bool]
    _pattern: ClassVar[str | None]
    #: (field, Shape) of the fields holding expressions
    _expr_fields: ClassVar[tuple[tuple[str, Shape], ...]]
    #: reads those (:func:`_items_reader`), set by @mirror
    _read_expressions: ClassVar[staticmethod[[Any], tuple[Any, ...]]]
    if TYPE_CHECKING:
        # Every concrete node is a dataclass (@mirror makes it one): dataclasses.replace
        # takes it.
        __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]

    @classmethod
    def _check_declaration(cls) -> None:
        """Refuses a mirror class that leaves out what its kind of node must declare besides
        its arguments (plan nodes: their facts, :data:`sparkext.plan.NODE_FACTS`); called
        by ``@mirror`` before the class is registered."""

    # -- structure --------------------------------------------------------------------------

    #: what the arguments holding this tree's children hold (plans here; expressions
    #: for expressions)
    _child_item: ClassVar[Item] = Item.PLAN
    #: (field, Shape) of the fields holding children, set by @mirror
    _kids: ClassVar[tuple[tuple[str, Shape], ...]] = ()
    #: reads them (:func:`_items_reader`), set by @mirror
    _read_children: ClassVar[staticmethod[[Any], tuple[Any, ...]]] = staticmethod(lambda node: ())

    @fact
    def children(self) -> tuple[Any, ...]:
        return self._read_children(self)

    def with_new_children(self: T, children: Iterable[Any]) -> T:
        """This node with ``children`` in place of its own (same count, same order)."""
        new = tuple(children)
        old = self.children
        if len(new) != len(old):
            raise ValueError(f"{type(self).__name__} has {len(old)} children, got {len(new)}")
        if all(a is b for a, b in zip(new, old)):
            return self
        it = iter(new)
        return self.copy(**{name: shape.unflatten(getattr(self, name), it)
                            for name, shape in self._kids})

    def copy(self: T, **changes: Any) -> T:
        """A new node with some fields changed (``dataclasses.replace``)."""
        return dataclasses.replace(self, **changes)

    # -- pattern bits -----------------------------------------------------------------------

    @property
    def tree_bits(self) -> int:
        """The pattern bits of the classes of this node and of every node below it (the
        children only: not the plans inside subquery expressions, as on the JVM)."""
        try:
            return self._cache[_BITS.key]
        except (AttributeError, KeyError):
            pass
        return _BITS.get(self)

    def contains_any(self, classes: Iterable[type]) -> bool:
        """Whether a node of one of ``classes`` (or a subclass) is in this tree."""
        return bool(self.tree_bits & pattern_mask(classes))

    # -- traversal --------------------------------------------------------------------------

    def transform_up(self: T, fn: Callable[[Any], Any], *, only_into: tuple[type, ...] = ()) -> T:
        """Applies ``fn`` to every node, children first. Unchanged subtrees are kept as they are.

        ``only_into``: ``fn`` changes only nodes of these classes; subtrees holding none
        are skipped whole (their pattern bits tell), as Catalyst's ``transformUpWithPruning``.
        """
        if only_into and not self.contains_any(only_into):
            return self
        old = self.children
        if old:
            new = tuple(c.transform_up(fn, only_into=only_into) for c in old)
            node = self.with_new_children(new)
        else:
            node = self
        return fn(node)

    def transform_down(self: T, fn: Callable[[Any], Any], *, only_into: tuple[type, ...] = ()) -> T:
        """Applies ``fn`` to every node, parents first; ``fn``'s result is then descended into.
        ``only_into``: as for :meth:`transform_up`."""
        if only_into and not self.contains_any(only_into):
            return self
        node = fn(self)
        old = node.children
        if not old:
            return node
        return node.with_new_children(tuple(c.transform_down(fn, only_into=only_into)
                                            for c in old))

    def walk(self) -> Iterator[Any]:
        """Every node of the tree, parents before children."""
        stack: list[TreeNode] = [self]
        while stack:
            n = stack.pop()
            yield n
            stack.extend(reversed(n.children))

    def find(self, pred: Callable[[Any], object]) -> Any:
        return next((n for n in self.walk() if pred(n)), None)

    def exists(self, pred: Callable[[Any], object]) -> bool:
        return self.find(pred) is not None

    def collect(self, pred: Callable[[Any], object]) -> list[Any]:
        return [n for n in self.walk() if pred(n)]
