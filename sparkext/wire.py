"""The constants the Python package and the jar must agree on, in one place.

Each has a twin on the JVM side (``PlanCodec.Version``, ``BridgeCall.Unchanged``,
``PythonChannel.MaxAnswerBytes``). They are compared once, when ``sparkext.enable``
registers rules (the handshake), so a package and a jar that disagree fail there with
one clear error rather than on every query.
"""

from __future__ import annotations

#: The wire format's version (docs/wire-format.md). Bump it together with the JVM's
#: ``PlanCodec.Version`` on any incompatible change.
VERSION = 2

#: The answer when no rule changed the plan; the JVM compares it as text.
UNCHANGED_ANSWER = '{"unchanged":true}'

#: The largest answer the JVM accepts (the channel's length prefix is checked against it).
MAX_ANSWER_BYTES = 2**30
