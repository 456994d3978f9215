"""Turning sparkext on: the jar and extension class for a session builder, and the Python
rules for a running session.

    import sparkext
    spark = sparkext.configure(SparkSession.builder).getOrCreate()
    sparkext.enable(spark)                 # the built-in rules
    sparkext.metrics(spark)["accepted"]    # rewrites Spark took

A Spark Connect client cannot add an extension to its server nor register rules there: the
server is started with sparkext (:func:`connect_server_args`) and runs the rules that
``spark.sparkext.rules`` names. :func:`metrics` and :func:`reset_metrics` work on a Connect
session too (through the ``sparkext_metrics()`` table function). See docs/connect.md.
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import re
import shlex
import sys
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from py4j.protocol import Py4JJavaError

from sparkext import versions
from sparkext.bridge import RuleBridge, defined_at, registration
from sparkext.channel import channel
from sparkext.optimizer import (
    POSITIONS,
    Batch,
    FixedPoint,
    Rule,
    RuleFunction,
    as_rule,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.connect.session import SparkSession as ConnectSession
    from typing_extensions import TypeIs  # (typing has it from 3.13; mypy ships this)

log = logging.getLogger("sparkext")

#: The class to name in ``spark.sql.extensions``.
EXTENSION_CLASS = "io.sparkext.SparkextExtensions"
#: The shim jars, one per supported (Spark line, Scala) of sparkext.versions.LINES.
JARS_DIR = Path(__file__).resolve().parent / "jars"


class SparkextError(RuntimeError):
    """sparkext cannot run in this session; the message says what to do."""


def local_spark() -> tuple[str, str | None]:
    """The Spark version and Scala binary version pyspark runs here: pyspark's version, and
    the Scala of the ``scala-library`` jar in the Spark home it launches (its own jars, or
    ``SPARK_HOME``'s), None when that home has none."""
    import pyspark
    from pyspark.find_spark_home import _find_spark_home

    jars = Path(_find_spark_home()) / "jars"
    return pyspark.__version__, versions.scala_of(jars) or versions.scala_of(
        Path(pyspark.__file__).parent / "jars")


def jar_path(spark: str | None = None, scala: str | None = None) -> str:
    """The path of the bundled shim jar (for ``--jars`` or ``spark.jars``) for the local
    pyspark, or for the Spark version or line ``spark`` and Scala ``scala`` ("2.12",
    "2.13"; by default the line's first) of another cluster."""
    if spark is None:
        spark, found_scala = local_spark()
        scala = scala or found_scala
    try:
        line = versions.find(spark, scala)
    except versions.UnsupportedSpark as e:
        raise SparkextError(str(e)) from None
    path = JARS_DIR / line.jar
    if not path.is_file():
        carried = sorted(p.name for p in JARS_DIR.glob("*.jar")) or ["none"]
        raise SparkextError(
            f"the sparkext shim jar for Spark {line.spark} / Scala {line.scala} is missing "
            f"({path}; this copy carries: {', '.join(carried)}). In a source checkout, build "
            "it with `make jar` (the local pyspark's line) or `make jars` (every line).")
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
    # (pyspark types _jvm optional: None until a context starts, as it now has)
    conf = SparkContext._jvm.org.apache.spark.SparkConf(True)  # type: ignore[union-attr]
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


def configure(builder: SparkSession.Builder) -> SparkSession.Builder:
    """Adds the shim jar and the extension class to a ``SparkSession.Builder``.

    Appends to ``spark.jars`` and ``spark.sql.extensions`` (set on the builder, by
    spark-submit, in spark-defaults.conf or in ``PYSPARK_SUBMIT_ARGS``), never replaces
    them, so Delta, Iceberg and other extensions keep working (a ``--jars`` in
    ``PYSPARK_SUBMIT_ARGS`` gets the jar too). Call it before the session exists: a running
    JVM cannot load the extension.

    A Spark Connect builder (``builder.remote("sc://...")``) is returned unchanged, with one
    warning: the extension lives in the server's JVM, which the server's own command line
    sets up (:func:`connect_server_args`). Setting the jar and extension from a client
    would only draw pyspark's ``CANNOT_MODIFY_CONFIG`` warnings.
    """
    options = getattr(builder, "_options", {})
    if _remote_url(options).startswith("sc://"):
        warnings.warn(_CONNECT_BUILDER_ADVICE, stacklevel=2)
        return builder
    defaults = _jvm_defaults()
    _check_running_jvm_has_the_jar()
    _check_no_session_without_the_extension()
    for key, item in zip(_APPENDED, (jar_path(), EXTENSION_CLASS)):
        current = options.get(key) or defaults.get(key)
        builder = builder.config(key, _append(current, item))
    if not _jvm_started_outside():
        _add_to_submit_jars(jar_path())
    return builder


def _remote_url(options: dict) -> str:
    """The Spark Connect URL a builder will connect to ("" for a classic session). A
    ``local`` URL is not a remote server: pyspark starts that Connect server itself, with
    the builder's settings, so the jar and extension do reach it."""
    return str(options.get("spark.remote") or os.environ.get("SPARK_REMOTE") or "")


_SERVER_ADVICE = ("start the server with sparkext: `python -m sparkext server-conf` (or "
                  "sparkext.connect_server_args()) prints the --jars and --conf arguments "
                  "that add the jar, the extension and the rules (spark.sparkext.rules)")

_CONNECT_BUILDER_ADVICE = (
    "sparkext.configure() leaves this Spark Connect builder unchanged: a client cannot add "
    "the jar or the extension to a running server, and its rules run on the server's driver. "
    f"If the server already runs sparkext, its rules apply to this session; otherwise "
    f"{_SERVER_ADVICE}.")


def connect_server_args(rules: Iterable[str] = (), *, builtin: bool = True,
                        python: str | None = sys.executable) -> list[str]:
    """The ``spark-submit`` arguments that start a server (Spark Connect, the Thrift server,
    any Spark application) with sparkext: the jar, the extension class and
    ``spark.sparkext.rules``.

    ``rules``: more ``module:attribute`` entries (rules, rule lists or batches), run after
    the built-in rules unless ``builtin=False``. ``python``: the interpreter that runs the
    rule worker on the server's driver (``spark.sparkext.python``); it must import sparkext
    and the rule modules. The default is this interpreter, right when the server runs on
    this machine; ``None`` leaves Spark's choice (``spark.pyspark.python``, ...).

    >>> args = connect_server_args(["mycompany.rules:RULES"], python=None)
    >>> for flag, value in zip(args[2::2], args[3::2]):
    ...     print(flag, value)
    --conf spark.sql.extensions=io.sparkext.SparkextExtensions
    --conf spark.sparkext.rules=sparkext.rules:BATCHES,mycompany.rules:RULES
    """
    entries = (["sparkext.rules:BATCHES"] if builtin else []) + list(rules)
    if not entries:
        raise ValueError("no rules: pass rules=[...] or leave builtin=True")
    args = ["--jars", jar_path(), "--conf", f"spark.sql.extensions={EXTENSION_CLASS}",
            "--conf", f"spark.sparkext.rules={','.join(entries)}"]
    if python is not None:
        args += ["--conf", f"spark.sparkext.python={python}"]
    return args


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


def _has_jar(jvm: Any) -> bool:
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


def _check_no_session_without_the_extension() -> None:
    """Refuses a builder whose session already runs without the extension: its
    ``getOrCreate()`` would return that session as it is, and :func:`enable` would then say
    to use ``configure()``, which was used."""
    from pyspark.sql import SparkSession

    session = getattr(SparkSession, "_instantiatedSession", None)
    if session is None or getattr(session._sc, "_jsc", None) is None:
        return  # none, or stopped: getOrCreate() makes a new one, with the extension
    if session._jvm.io.sparkext.Sparkext.isInstalled(session._jsparkSession):
        return
    raise SparkextError(
        "a SparkSession without the sparkext extension already runs in this process, and "
        "getOrCreate() would return it unchanged: stop that session first (spark.stop()), "
        "then call sparkext.configure(SparkSession.builder).getOrCreate().")


def is_connect(spark: object) -> TypeIs[ConnectSession]:
    # Without the module loaded, no Connect session exists (and importing it needs grpc).
    connect = sys.modules.get("pyspark.sql.connect.session")
    return connect is not None and isinstance(spark, connect.SparkSession)


def _jsession(spark: SparkSession | ConnectSession) -> Any:
    js = getattr(spark, "_jsparkSession", None)
    if js is None:
        if is_connect(spark):
            raise SparkextError(
                "a Spark Connect client cannot register Python rules: they run on the "
                "server's driver, which names them in spark.sparkext.rules when it starts. "
                f"To run sparkext there, {_SERVER_ADVICE}. sparkext.metrics(spark) reads "
                "the counters from this client.")
        raise SparkextError("sparkext needs a classic SparkSession with a JVM driver "
                            f"(got {type(spark).__module__}.{type(spark).__name__}).")
    return js


def _registry(spark: SparkSession) -> Any:
    if not _has_jar(spark._jvm):
        if "PYSPARK_GATEWAY_PORT" in os.environ:  # spark-submit's JVM: only its flags help
            raise SparkextError(f"the sparkext jar is not on this session's classpath: "
                                f"{_SUBMIT_ADVICE}.")
        raise SparkextError(
            "the sparkext jar is not on this session's classpath. Build the session with "
            f"sparkext.configure(SparkSession.builder), or {_SUBMIT_ADVICE}.")
    return spark._jvm.io.sparkext.Sparkext  # type: ignore[union-attr]  # (live: _has_jar read it)


class Enabled:
    """What :func:`enable` returns: the registration, which :meth:`disable` undoes."""

    def __init__(self, spark: SparkSession, bridge: RuleBridge, rules: tuple[Rule, ...],
                 version: int, dropped: list[dict[str, str]]) -> None:
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

    def __enter__(self) -> Enabled:
        return self

    def __exit__(self, *exc: object) -> None:
        self.disable()

    def __repr__(self) -> str:
        return f"<sparkext enabled: {', '.join(r.name for r in self.rules)}>"


#: What ``enable(rules=...)`` takes: a :class:`~sparkext.Rule`, or a function ``plan -> plan``.
RuleLike = Rule | RuleFunction


def enable(spark: SparkSession, rules: RuleLike | Iterable[RuleLike] | None = None, *,
           builtin: bool = True, batches: Iterable[Batch] | None = None) -> Enabled:
    """Runs Python rules in this session's optimizer; replaces whatever it ran before.

    - ``enable(spark)``: sparkext's built-in rules.
    - ``enable(spark, rules=[mine])``: the built-in rules, then ``mine``.
    - ``enable(spark, rules=[mine], builtin=False)``: ``mine`` only.

    ``rules`` is a rule (a :class:`~sparkext.Rule`, or a function ``plan -> plan``) or a
    list of them; they run as one batch, to a fixed point, after the built-in batches.
    Built-in first, because they put the plan in the shape a user's rule is written
    against (filters pushed down, columns pruned), as Catalyst runs an injected rule after
    its own in a batch; and the rule worker (``spark.sparkext.rules``,
    :func:`connect_server_args`) runs the built-in rules first too. ``batches`` gives full
    control: exactly those batches run (not with ``rules``; ``builtin`` does not apply).

    Each rule must take exactly one argument, the plan: checked here, naming the rule and
    where it is defined. One INFO line on the ``sparkext`` logger names the rules
    registered and their positions.
    """
    from pyspark.java_gateway import ensure_callback_server_started

    batches = _rule_batches(rules, builtin=builtin, batches=batches)
    jsession = _jsession(spark)
    registry = _registry(spark)
    # A session builds its conf on first use, checking every value: a bad spark.sparkext.*
    # value from the builder or --conf raises here with Spark's error, converted by pyspark.
    spark.conf.get("spark.sparkext.enabled", "true")
    if not registry.isInstalled(jsession):
        raise SparkextError(
            f"{EXTENSION_CLASS} is not in this session's spark.sql.extensions (the jar is "
            "loaded, the extension is not). Use sparkext.configure(SparkSession.builder) "
            "before the first getOrCreate().")
    # py4j carries the bridge object itself: it keeps it alive while the JVM's registration
    # refers to it. The calls themselves come over sparkext's own channel
    # (sparkext/channel.py), as they do to a rule worker the JVM starts (sparkext/worker.py).
    ensure_callback_server_started(spark.sparkContext._gateway)
    # (a live session's context has its JVM; pyspark types _jvm optional)
    jvm = spark.sparkContext._jvm
    java = jvm.java.lang.System.getProperty("java.specification.version")  # type: ignore[union-attr]
    reg = registration(batches, channel(java), spark.version)
    bridge, all_rules, spec = reg.bridge, reg.rules, reg.spec
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
    # Unknown spark.sparkext.* keys and excluded rule names, each once per JVM.
    for warning in answer.get("warnings", []):
        log.warning("%s", warning)
    log.info("sparkext: enabled %s", _describe_positions(all_rules))
    return Enabled(spark, bridge, all_rules, answer["version"], dropped)


def _rule_batches(rules: RuleLike | Iterable[RuleLike] | None = None, *,
                  builtin: bool = True, batches: Iterable[Batch] | None = None
                  ) -> tuple[Batch, ...]:
    """The batches ``enable`` runs for these arguments (and ``sparkext.explain``, through
    ``enable``): the built-in batches unless ``builtin=False``, then ``rules`` as one
    fixed-point batch; or ``batches`` as given. Every rule's signature is checked here."""
    from sparkext.rules import builtin_batches

    if rules is not None and batches is not None:
        raise ValueError("pass rules= or batches=, not both")
    if batches is None:
        if rules is None and not builtin:
            raise ValueError("no rules to run: pass rules=[...], or leave builtin=True")
        batches = tuple(builtin_batches()) if builtin else ()
        if rules is not None:
            batches += (Batch("user rules", FixedPoint(100), _as_rules(rules)),)
    batches = tuple(batches)
    for batch in batches:
        for r in batch.rules:
            _check_takes_one_plan(r)
    return batches


def _as_rules(rules: RuleLike | Iterable[RuleLike]) -> tuple[Rule, ...]:
    """One rule or several, as a tuple of rules."""
    if isinstance(rules, Rule) or callable(rules):
        return (as_rule(rules),)
    return tuple(as_rule(r) for r in rules)


def _check_takes_one_plan(r: Rule) -> None:
    """Refuses a rule that cannot be called with one plan: it would fail at every query."""
    try:
        signature = inspect.signature(r.fn)
    except (TypeError, ValueError):  # a builtin without introspection: nothing to check
        return
    try:
        signature.bind(None)
    except TypeError as e:
        raise TypeError(f"rule {r.name!r} (defined at {defined_at(r)}) must take exactly one "
                        f"argument, the plan; its signature is {signature} ({e})") from None


def _describe_positions(rules: tuple[Rule, ...]) -> str:
    """The rules in run order per position, numbered:
    ``2 rules: once per query: 1 a, 2 b``."""
    parts = []
    for position in POSITIONS:
        here = [r.name for r in rules if r.position is position]
        if here:
            numbered = ", ".join(f"{i} {n}" for i, n in enumerate(here, 1))
            parts.append(f"{position.description}: {numbered}")
    return f"{len(rules)} rule{'s' if len(rules) != 1 else ''}: " + "; ".join(parts)


def disable(spark: SparkSession) -> None:
    """Removes every Python rule from this session."""
    _registry(spark).unregister(_jsession(spark), 0)


def metrics(spark: SparkSession | ConnectSession) -> dict[str, Any]:
    """The bridge's counters for this session (README.md, "Metrics", lists every
    key). Counts are integers; times are integer nanoseconds (``*_nanos``); ``warnings``
    holds the last warnings; ``rules`` maps each Python rule's name to
    ``{"invocations", "effective", "nanos", "refused", "refusal_reasons"}``, ``guards`` each
    guard's to ``{"judged", "refused_queries", "warned", "errors", "nanos", "reasons"}``
    (docs/guards.md).

    On a Spark Connect session they come from ``SELECT * FROM sparkext_metrics()``, the
    table function the extension adds on the server (same counters, same names; there
    ``rules`` and ``guards`` are JSON columns, decoded here)."""
    if is_connect(spark):
        m = _metrics_row(spark, "sparkext_metrics")
        for key in ("rules", "guards"):
            m[key] = json.loads(m[key]) if m.get(key) else {}
        return m
    return json.loads(_registry(spark).metrics(_jsession(spark)))


def reset_metrics(spark: SparkSession | ConnectSession) -> None:
    if is_connect(spark):
        _metrics_row(spark, "sparkext_reset_metrics")
    else:
        _registry(spark).resetMetrics(_jsession(spark))


def error_class(e: BaseException) -> str | None:
    """The error class (condition) of a pyspark error, e.g. ``SPARKEXT_QUERY_REFUSED``:
    ``getCondition()`` since pyspark 4.0, ``getErrorClass()`` in 3.5; None for others."""
    for name in ("getCondition", "getErrorClass"):
        if hasattr(e, name):
            return getattr(e, name)()
    return None


def _metrics_row(spark: SparkSession | ConnectSession, function: str) -> dict[str, Any]:
    """The one row of a metrics table function, as a dict (``warnings`` as a list)."""
    from pyspark.errors import AnalysisException

    try:
        row = spark.sql(f"SELECT * FROM {function}()").collect()[0]
    except AnalysisException as e:
        # (the name of the error depends on the server's Spark version)
        if error_class(e) not in ("UNRESOLVABLE_TABLE_VALUED_FUNCTION", "UNRESOLVED_ROUTINE"):
            raise
        raise SparkextError(
            f"the Spark Connect server does not run sparkext ({function}() is unknown "
            f"there): {_SERVER_ADVICE}.") from None
    return {k: list(v) if k == "warnings" else v for k, v in row.asDict().items()}
