"""The error of the codec's modules."""

from __future__ import annotations


class WireError(ValueError):
    """A document that does not follow the wire format, or a plan that cannot be sent."""
