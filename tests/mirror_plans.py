"""A small vocabulary for hand-built mirror plans in unit tests."""

from __future__ import annotations

from sparkext import types as T
from sparkext.expressions import AttributeReference, OpaqueExpression, Value
from sparkext.plan import Relation

TYPES = {"int": T.INT, "long": T.LONG, "string": T.STRING, "double": T.DOUBLE,
         "date": T.DATE, "bool": T.BOOLEAN, "array": T.DataType(
             '{"type":"array","elementType":"integer","containsNull":true}'),
         "struct": T.DataType('{"type":"struct","fields":[{"name":"f","type":"integer",'
                              '"nullable":true,"metadata":{}}]}')}


# The two numeric evaluation contexts an Add/Multiply carries: ANSI (overflow raises, so
# the function is monotonic) and LEGACY (overflow wraps, so it is not).
ANSI = Value("NumericEvalContext(ANSI,true)")
LEGACY = Value("NumericEvalContext(LEGACY,true)")


def col(name: str, i: int, t: T.DataType = T.INT, nullable: bool = True) -> AttributeReference:
    """A column with expression id ``i``."""
    return AttributeReference(name, t, nullable, None, i)


class Table:
    """A relation with named columns: ``t = Table("t", "a b:string", first_id=1)``, then
    ``t.a``, ``t.b`` and ``t.rel``."""

    def __init__(self, name: str, columns: str, first_id: int, nullable: bool = True):
        attrs = []
        for i, spec in enumerate(columns.split()):
            col, _, typ = spec.partition(":")
            attrs.append(AttributeReference(col, TYPES[typ or "int"], nullable, None,
                                            first_id + i))
        self.columns = tuple(attrs)
        self.rel = Relation("LocalRelation", self.columns, first_id, name)
        for a in attrs:
            setattr(self, a.name, a)


def agg(fn: str, *args, handle: int = 90) -> OpaqueExpression:
    """An aggregate function call as Spark sends it: AggregateExpression(fn(args))."""
    return OpaqueExpression("AggregateExpression", (OpaqueExpression(fn, args, handle + 1),),
                            handle, _type=T.LONG)
