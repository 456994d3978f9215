"""sparkext's built-in rules: one module per rule, each exporting one function of the
same name. ``BATCHES`` is the order they run in when ``sparkext.enable(spark)`` is called
without rules."""

from __future__ import annotations

BATCHES: tuple = ()
