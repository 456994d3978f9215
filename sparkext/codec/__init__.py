"""The wire format, Python half (docs/wire-format.md is the reference; the JVM half is
``jvm-shim/.../PlanEncoder.scala``, ``PlanRebuilder.scala``, ``LiteralCodec.scala``),
one module per job:

- :mod:`sparkext.codec.requests`: :class:`Decoded` turns one request document into the
  mirror and remembers which mirror object came from which JVM handle;
- :mod:`sparkext.codec.answers`: :func:`encode_answer` writes the rewritten plan back,
  every object that is still the very object decoded as ``{"ref": h}``, new ones in full;
- :mod:`sparkext.codec.literals`: literal values of every Spark type, both ways, checked;
- :mod:`sparkext.codec.errors`: :class:`WireError`.

Writing a request (what the JVM does) is for tests only:
:func:`sparkext.testing.request_encoder.encode_request`.
"""

from sparkext.codec.answers import ITEM_WRITERS, AnswerEncoder, encode_answer
from sparkext.codec.errors import WireError
from sparkext.codec.literals import MapValue, value_in, value_out
from sparkext.codec.requests import ITEM_READERS, Decoded, request_document

__all__ = ["ITEM_READERS", "ITEM_WRITERS", "AnswerEncoder", "Decoded", "MapValue", "WireError",
           "encode_answer", "request_document", "value_in", "value_out"]
