"""Turning sparkext on: the jar and extension class for a session builder, and the Python
rules for a running session.

    import sparkext
    spark = sparkext.configure(SparkSession.builder).getOrCreate()
    sparkext.enable(spark)                 # the built-in rules
    sparkext.metrics(spark)["accepted"]    # rewrites Spark took
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import re
import shlex
from collections.abc import Iterable
from pathlib import Path

from py4j.protocol import Py4JJavaError

from sparkext._tree import mirror_spec
from sparkext.bridge import RuleBridge
from sparkext.channel import channel
from sparkext.optimizer import POSITIONS, Batch, FixedPoint, Rule, RuleExecutor, as_rule
from sparkext.wire import handshake

log = logging.getLogger("sparkext")

#: The class to name in ``spark.sql.extensions``.
EXTENSION_CLASS = "io.sparkext.SparkextExtensions"
JAR_NAME = "sparkext-shim.jar"


class SparkextError(RuntimeError):
    """sparkext cannot run in this session; the message says what to do."""


def jar_path() -> str:
    """The path of the bundled shim jar (for ``--jars`` or ``spark.jars``)."""
    path = Path(__file__).resolve().parent / "jars" / JAR_NAME
    if not path.is_file():
        raise SparkextError(
            f"the sparkext shim jar is missing ({path}). In a source checkout, build it with "
            "`make jar`; an installed wheel always carries it.")
    return str(path)


def _append(existing: str | None, item: str) -> str:
    parts = [p.strip() for p in (existing or "").split(",") if p.strip()]
    if item not in parts:
        parts.append(item)
    return ",".join(parts)


_APPENDED = ("spark.jars", "spark.sql.extensions")


def _jvm_defaults() -> dict[str, str]:
    """``spark.jars`` and ``spark.sql.extensions`` as the driver JVM has them, or will have
    them, before the builder's settings: spark-submit's ``--jars``/``--conf`` and the
    properties file (spark-defaults.conf)."""
    from pyspark import SparkContext

    if SparkContext._jvm is None and "PYSPARK_GATEWAY_PORT" not in os.environ:
        return _launch_defaults()
    SparkContext._ensure_initialized()  # connects to spark-submit's JVM; launches nothing
    conf = SparkContext._jvm.org.apache.spark.SparkConf(True)
    return {k: conf.get(k, "") for k in _APPENDED}


def _launch_defaults() -> dict[str, str]:
    """What the JVM pyspark is about to launch will read, as spark-submit reads it: the
    properties file (``--properties-file``, else ``spark-defaults.conf`` in
    ``SPARK_CONF_DIR`` or ``SPARK_HOME/conf``), then ``PYSPARK_SUBMIT_ARGS``'s ``--conf``
    and ``--jars`` over it. Without this, a builder value would replace them: Delta or
    Iceberg named in spark-defaults.conf would silently go."""
    args = shlex.split(os.environ.get("PYSPARK_SUBMIT_ARGS", ""))
    given: dict[str, str] = {}
    properties_file = None
    for flag, value in zip(args, args[1:]):
        if flag in ("--conf", "-c") and "=" in value:
            key, _, v = value.partition("=")
            given[key.strip()] = v
        elif flag == "--jars":
            given["spark.jars"] = value
        elif flag == "--properties-file":
            properties_file = value
    out = _read_properties(properties_file or _defaults_file())
    out.update(given)
    return {k: out[k] for k in _APPENDED if k in out}


def _defaults_file() -> str:
    conf_dir = os.environ.get("SPARK_CONF_DIR")
    if not conf_dir:
        from pyspark.find_spark_home import _find_spark_home

        conf_dir = os.path.join(_find_spark_home(), "conf")
    return os.path.join(conf_dir, "spark-defaults.conf")


_PROPERTY = re.compile(r"^\s*([^\s#!=:][^\s=:]*)\s*[=:\s]\s*(.*)$")


def _read_properties(path: str | None) -> dict[str, str]:
    """A Java properties file the way Spark writes spark-defaults.conf: ``key value`` or
    ``key=value`` per line, ``#`` comments."""
    if not path or not os.path.isfile(path):
        return {}
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = _PROPERTY.match(line)
            if m:
                out[m.group(1)] = m.group(2).strip()
    return out


def configure(builder):
    """Adds the shim jar and the extension class to a ``SparkSession.Builder``.

    Appends to ``spark.jars`` and ``spark.sql.extensions`` (set on the builder, by
    spark-submit, in spark-defaults.conf or in ``PYSPARK_SUBMIT_ARGS``), never replaces
    them, so Delta, Iceberg and other extensions keep working (a ``--jars`` in
    ``PYSPARK_SUBMIT_ARGS`` gets the jar too). Call it before the session exists: a running
    JVM cannot load the extension.
    """
    options = getattr(builder, "_options", {})
    defaults = _jvm_defaults()
    _check_running_jvm_has_the_jar()
    for key, item in zip(_APPENDED, (jar_path(), EXTENSION_CLASS)):
        current = options.get(key) or defaults.get(key)
        builder = builder.config(key, _append(current, item))
    if not _jvm_started_outside():
        _add_to_submit_jars(jar_path())
    return builder


def _add_to_submit_jars(jar: str) -> None:
    """Adds ``jar`` to the ``--jars`` of ``PYSPARK_SUBMIT_ARGS``, if it has one (Delta's or
    Iceberg's jars, say): spark-submit takes ``--jars`` over every ``spark.jars`` setting,
    the builder's included, so the JVM pyspark is about to launch would not see the jar."""
    args = shlex.split(os.environ.get("PYSPARK_SUBMIT_ARGS", ""))
    if "--jars" in args[:-1]:
        at = args.index("--jars") + 1
        args[at] = _append(args[at], jar)
        os.environ["PYSPARK_SUBMIT_ARGS"] = shlex.join(args)


_SUBMIT_ADVICE = (f'pass --jars "$(python -m sparkext jar)" --conf '
                  f"spark.sql.extensions={EXTENSION_CLASS} to spark-submit (or pyspark)")


def _jvm_started_outside() -> bool:
    """Whether the driver JVM was started before this Python process (spark-submit, the
    pyspark shell): its classpath is fixed, and no builder setting can add a jar to it."""
    from pyspark import SparkContext

    return "PYSPARK_GATEWAY_PORT" in os.environ or SparkContext._jvm is not None


def _has_jar(jvm) -> bool:
    # An unknown class resolves to a py4j JavaPackage rather than failing.
    return type(jvm.io.sparkext.Sparkext).__name__ != "JavaPackage"


def _check_running_jvm_has_the_jar() -> None:
    from pyspark import SparkContext

    if not _jvm_started_outside():
        return
    SparkContext._ensure_initialized()  # connects to the running JVM; launches nothing
    if not _has_jar(SparkContext._jvm):
        raise SparkextError(
            "the driver JVM is already running (started by spark-submit, the pyspark shell or "
            "an earlier session) and the sparkext jar is not on its classpath; a running JVM "
            "cannot load it "
            f"now, so configure() cannot help. Instead, {_SUBMIT_ADVICE}.")


def _jsession(spark):
    js = getattr(spark, "_jsparkSession", None)
    if js is None:
        raise SparkextError(
            "sparkext needs a classic SparkSession with a JVM driver; Spark Connect sessions "
            "cannot run Catalyst extensions from the client.")
    return js


def _registry(spark):
    if not _has_jar(spark._jvm):
        if "PYSPARK_GATEWAY_PORT" in os.environ:  # spark-submit's JVM: only its flags help
            raise SparkextError(f"the sparkext jar is not on this session's classpath: "
                                f"{_SUBMIT_ADVICE}.")
        raise SparkextError(
            "the sparkext jar is not on this session's classpath. Build the session with "
            f"sparkext.configure(SparkSession.builder), or {_SUBMIT_ADVICE}.")
    return spark._jvm.io.sparkext.Sparkext


class Enabled:
    """What :func:`enable` returns: the registration, which :meth:`disable` undoes."""

    def __init__(self, spark, bridge: RuleBridge, rules: tuple[Rule, ...], version: int,
                 dropped: list[dict]):
        self.spark = spark
        self.bridge = bridge
        self.version = version
        self.rules = rules
        #: mirror classes this Spark could not build (they travel as opaque nodes)
        self.dropped = dropped

    def disable(self) -> None:
        """Stops running these rules in the session, unless a later :func:`enable` replaced
        them (other sessions are not affected)."""
        _registry(self.spark).unregister(_jsession(self.spark), self.version)

    def metrics(self) -> dict:
        return metrics(self.spark)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.disable()

    def __repr__(self) -> str:
        return f"<sparkext enabled: {', '.join(r.name for r in self.rules)}>"


def _split_by_position(batches: Iterable[Batch]) -> dict[str, RuleExecutor]:
    executors = {}
    for pos in POSITIONS:
        kept = [Batch(b.name, b.strategy, tuple(r for r in b.rules if r.position == pos))
                for b in batches]
        kept = [b for b in kept if b.rules]
        if kept:
            executors[pos] = RuleExecutor(kept)
    return executors


def _defined_at(rule: Rule) -> str:
    """``module:line`` of a rule's function, for messages that must tell two rules apart."""
    fn = inspect.unwrap(rule.fn)
    code = getattr(fn, "__code__", None)
    where = getattr(fn, "__module__", None) or "?"
    return f"{where}:{code.co_firstlineno}" if code is not None else f"{where}:{fn!r}"


def _refuse_duplicate_names(batches: tuple[Batch, ...]) -> None:
    """Two different rules under one name cannot both run: the executor and the JVM's
    skip (by tree pattern) would each keep a different one, and
    ``spark.sparkext.excludedRules`` could not tell them apart. The same rule in several
    batches is fine."""
    first: dict[str, Rule] = {}
    for batch in batches:
        for rule in batch.rules:
            seen = first.setdefault(rule.name, rule)
            if seen != rule:
                raise ValueError(
                    f"two different rules are named {rule.name!r}: one defined at "
                    f"{_defined_at(seen)}, the other at {_defined_at(rule)}. Rule names must "
                    "be unique (spark.sparkext.excludedRules uses them): rename one.")


def enable(spark, rules=None, *, batches: Iterable[Batch] | None = None) -> Enabled:
    """Runs Python rules in this session's optimizer.

    ``rules=None`` and no ``batches``: sparkext's built-in rules. A list of rules (or plain
    functions ``plan -> plan``) runs as one batch to a fixed point. ``batches`` gives full
    control. Replaces whatever this session ran before.
    """
    from pyspark.java_gateway import ensure_callback_server_started

    from sparkext.rules import builtin_batches

    if rules is not None and batches is not None:
        raise ValueError("pass rules= or batches=, not both")
    if batches is None:
        if rules is None:
            batches = builtin_batches()
        else:
            batches = [Batch("user rules", FixedPoint(100), tuple(as_rule(r) for r in rules))]
    batches = tuple(batches)
    jsession = _jsession(spark)
    registry = _registry(spark)
    if not registry.isInstalled(jsession):
        raise SparkextError(
            f"{EXTENSION_CLASS} is not in this session's spark.sql.extensions (the jar is "
            "loaded, the extension is not). Use sparkext.configure(SparkSession.builder) "
            "before the first getOrCreate().")
    _refuse_duplicate_names(batches)
    executors = _split_by_position(batches)
    all_rules = tuple(r for e in executors.values() for r in e.rules)
    bridge = RuleBridge(executors)
    # py4j carries the bridge object itself: it keeps it alive while the JVM's registration
    # refers to it, and asks it which rule runs when a call times out. The calls themselves
    # come over sparkext's own channel (sparkext/channel.py).
    ensure_callback_server_started(spark.sparkContext._gateway)
    calls = channel()
    spec = {
        "handshake": handshake(),
        "channel": calls.address(calls.add(bridge)),
        "rules": [{"name": r.name, "position": r.position, "patterns": list(r.patterns)}
                  for r in all_rules],
        "mirror": mirror_spec(),
    }
    try:
        answer = json.loads(registry.register(jsession, bridge, json.dumps(spec)))
    except Py4JJavaError as e:
        cause = e.java_exception
        if cause.getClass().getName() != "io.sparkext.SparkextException":
            raise
        raise SparkextError(f"sparkext: {cause.getMessage()}") from None
    dropped = answer["dropped"]
    if dropped:
        log.warning("sparkext: these Catalyst classes differ in this Spark and travel as "
                    "opaque nodes: %s", "; ".join(f"{d['name']}: {d['reason']}" for d in dropped))
    return Enabled(spark, bridge, all_rules, answer["version"], dropped)


def disable(spark) -> None:
    """Removes every Python rule from this session."""
    _registry(spark).unregister(_jsession(spark), 0)


def metrics(spark) -> dict:
    """The bridge's counters for this session: calls, skipped, accepted, rejected, errors,
    timeouts, and milliseconds spent encoding, in Python and rebuilding."""
    m = json.loads(_registry(spark).metrics(_jsession(spark)))
    for key in [k for k in m if k.endswith("_nanos")]:
        m[key[:-len("_nanos")] + "_ms"] = m[key] / 1e6
    return m


def reset_metrics(spark) -> None:
    _registry(spark).resetMetrics(_jsession(spark))
