"""``python -m sparkext.worker``: the rule worker (or guard worker) a driver JVM starts for
itself.

A ``spark-sql`` script, the Thrift server, a Spark Connect server or a Scala application
has no PySpark driver to call ``sparkext.enable``; with ``spark.sparkext.rules`` set, the
shim starts this process instead (``jvm-shim/.../RuleWorker.scala``), once per driver, at
the first optimizer call that needs it. Everything after the start is what
``sparkext.enable`` does: the same :func:`sparkext.bridge.registration` (bridge, executor,
mirror), served by the same :class:`sparkext.channel.Channel`; only who starts the
process and how the registration reaches the JVM differ.

The conversation over the pipes the JVM holds (docs/wire-format.md, "Rule worker"):

  stdin, one JSON line   ``{"secret": hex, "rules": "mod:attr,...", "spark_version": v,
                         "transport": "auto"|"tcp"}``; the secret comes this way because
                         a command line or the environment is visible to other users
  stdout, one JSON line  the registration, as ``sparkext.enable`` sends it through py4j,
                         without the secret (the JVM has it)
  stderr                 anything else: tracebacks, logging, what rules print

With ``"guards"`` (and ``"builtin_guards"``, the built-in guards' settings) in place of
``"rules"``, it is the guard worker (``Guards.scala``, docs/guards.md): it loads the guards
and serves their calls (:mod:`sparkext.guards.bridge`) the same way.

Then the worker serves calls until its stdin closes: the JVM closes it to stop the worker,
and the operating system closes it when the JVM exits, however it exits.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from collections.abc import Iterable, Iterator

from sparkext.bridge import Registration, registration
from sparkext.channel import Channel
from sparkext.guards import Guard, as_guard, builtin_guards
from sparkext.guards.bridge import GuardRegistration, guard_registration
from sparkext.optimizer import Batch, FixedPoint, Rule, as_rule


class RulesNotFound(Exception):
    """A ``spark.sparkext.rules`` entry that names nothing usable; the message says which."""


def load_batches(entries: str) -> tuple[Batch, ...]:
    """The batches ``spark.sparkext.rules`` names: comma-separated ``module:attribute``
    entries, each a rule, a batch, or a list of either (rules of one entry run as one
    batch to a fixed point, as ``sparkext.enable(spark, rules)`` runs them)."""
    batches: list[Batch] = []
    for entry, target in _targets("spark.sparkext.rules", entries, "sparkext.rules:BATCHES"):
        batches.extend(_as_batches(entry, target))
    if not batches:
        raise RulesNotFound("spark.sparkext.rules names no rules")
    return tuple(batches)


def load_guards(entries: str) -> tuple[Guard, ...]:
    """The guards ``spark.sparkext.guards`` names: comma-separated ``module:attribute``
    entries, each a guard (or a function ``query -> None``) or a list of them."""
    guards: list[Guard] = []
    for entry, target in _targets("spark.sparkext.guards", entries, "mycompany.guards:GUARDS"):
        if isinstance(target, Iterable) and not isinstance(target, (str, bytes)):
            guards.extend(as_guard(g) for g in target)
        else:
            guards.append(as_guard(target))
    return tuple(guards)


def _targets(key: str, entries: str, example: str) -> Iterator[tuple[str, object]]:
    """Each ``module:attribute`` entry of ``key``'s value, with what it names (its module
    imported: an import error propagates, and the JVM reports the worker's traceback)."""
    for entry in (e.strip() for e in entries.split(",")):
        if not entry:
            continue
        module, _, attribute = entry.partition(":")
        if not module or not attribute:
            raise RulesNotFound(f"{key} entry {entry!r} is not 'module:attribute' (e.g. "
                                f"{example})")
        target = importlib.import_module(module)
        for name in attribute.split("."):
            try:
                target = getattr(target, name)
            except AttributeError:
                raise RulesNotFound(f"{key} entry {entry!r}: module {module!r} has no "
                                    f"attribute {attribute!r}") from None
        yield entry, target


def _as_batches(entry: str, target) -> list[Batch]:
    if isinstance(target, Batch):
        return [target]
    if isinstance(target, Rule) or callable(target):
        return [Batch(entry, FixedPoint(100), (as_rule(target),))]
    if not isinstance(target, Iterable) or isinstance(target, (str, bytes)):
        raise RulesNotFound(f"spark.sparkext.rules entry {entry!r} is a "
                            f"{type(target).__name__}: expected a rule, a batch or a list")
    items = list(target)
    if items and all(isinstance(i, Batch) for i in items):
        return items
    if any(isinstance(i, Batch) for i in items):
        raise RulesNotFound(f"spark.sparkext.rules entry {entry!r} mixes batches and rules")
    return [Batch(entry, FixedPoint(100), tuple(as_rule(i) for i in items))]


def main() -> int:
    # stdout carries the registration and nothing else: whatever importing the rules or
    # running them prints goes to stderr (fd 1 too, for code below Python).
    answer = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    config = json.loads(sys.stdin.readline() or "{}")
    transport = config.get("transport") or os.environ.get("SPARKEXT_CHANNEL", "auto")
    channel = Channel(bytes.fromhex(config["secret"]), transport=transport)
    reg: Registration | GuardRegistration
    if "guards" in config:  # a guard worker (Guards.scala)
        guards = load_guards(config["guards"]) + builtin_guards(config.get("builtin_guards", {}))
        reg = guard_registration(guards, channel, config.get("spark_version"))
    else:
        batches = load_batches(config.get("rules", ""))
        reg = registration(batches, channel, config.get("spark_version"))
    spec = dict(reg.spec, channel={k: v for k, v in reg.spec["channel"].items()
                                   if k != "secret"}, pid=os.getpid())
    answer.write(json.dumps(spec) + "\n")
    answer.flush()
    # Until the JVM closes the pipe (or exits). The channel holds bridges weakly: ``reg``,
    # alive until this function returns, holds this one.
    while sys.stdin.buffer.read(1 << 16):
        pass
    channel.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
