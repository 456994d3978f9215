"""The package and the jar compare what they must agree on once, at ``enable``.

A package and a jar from different builds used to register fine and then warn on every
query; now ``enable`` raises one :class:`SparkextError` naming both sides' values, and
the registration in force stays as it was.
"""

from __future__ import annotations

import json

import pytest

import sparkext
from sparkext import wire
from sparkext.kinds import wire_codes
from sparkext.session import SparkextError
from tests.conftest import registry


def test_the_jar_knows_exactly_the_packages_argument_kinds_version_and_limit(spark):
    jar = json.loads(registry(spark).handshake())
    assert jar["kinds"] == sorted(wire_codes())
    assert jar == wire.handshake()


@pytest.mark.parametrize("field,value,words", [
    ("VERSION", wire.VERSION + 1, f"version: the package has {wire.VERSION + 1}, the jar {wire.VERSION}"),
    ("MAX_ANSWER_BYTES", 2**20, f"max_answer_bytes: the package has {2**20}, the jar {wire.MAX_ANSWER_BYTES}"),
])
def test_a_different_constant_is_refused_at_enable(spark, monkeypatch, field, value, words):
    monkeypatch.setattr(wire, field, value)
    with pytest.raises(SparkextError, match=words):
        sparkext.enable(spark)
    monkeypatch.undo()
    assert registry(spark).isRegistered(spark._jsparkSession)
    sparkext.enable(spark)


@pytest.mark.parametrize("field,value,words", [
    ("HEADER_FIELDS", (*wire.HEADER_FIELDS, "new"), 'header: the package has .*"new".*, the jar'),
    ("UNCHANGED_WITH_STATS", '{"unchanged":1,"stats":[', "unchanged: the package has"),
])
def test_a_different_header_or_unchanged_answer_is_refused_at_enable(spark, monkeypatch, field,
                                                                     value, words):
    monkeypatch.setattr(wire, field, value)
    with pytest.raises(SparkextError, match=words):
        sparkext.enable(spark)
    monkeypatch.undo()
    sparkext.enable(spark)


def test_a_request_header_field_the_package_does_not_declare_is_refused():
    from sparkext.codec import Decoded
    from sparkext.codec.errors import WireError

    header = {"v": wire.VERSION, "id": 1, "pos": "once", "shiny": True}
    with pytest.raises(WireError, match=r"does not read: \['shiny'\]"):
        Decoded.from_json(json.dumps(header) + "\n{}")


def test_the_unchanged_answer_is_what_the_jar_reads(spark):
    answer = wire.unchanged_answer([3, 0, 12])
    got = spark._jvm.io.sparkext.BridgeCall.unchangedStats(answer)
    assert list(got) == [3, 0, 12]
    assert list(spark._jvm.io.sparkext.BridgeCall.unchangedStats(wire.UNCHANGED_ANSWER)) == []


def test_a_different_kind_list_is_refused_at_enable(spark, monkeypatch):
    monkeypatch.setattr(wire, "wire_codes", lambda: wire_codes() + ["ee"])
    with pytest.raises(SparkextError, match=r"kinds: the package has \[.*\"ee\".*\], the jar \["):
        sparkext.enable(spark)
    monkeypatch.undo()
    sparkext.enable(spark)


def test_a_registration_without_a_handshake_is_refused(spark):
    """A package older than the handshake names nothing: the jar says so."""
    with pytest.raises(Exception, match="version: the package has nothing"):
        registry(spark).register(spark._jsparkSession, None, json.dumps({"rules": []}))


def test_the_jar_carries_the_package_version_it_was_built_from(spark):
    assert json.loads(registry(spark).handshake())["package_version"] == sparkext.__version__


def test_a_package_and_a_jar_of_different_sparkext_versions_are_refused_at_enable(spark,
                                                                                   monkeypatch):
    """A jar left over from another sparkext release (or a package upgraded beside an old
    jar on the cluster) fails once, naming both versions, instead of misbehaving later."""
    jar_version = sparkext.__version__  # the test above: the jar's is the package's
    monkeypatch.setattr(sparkext, "__version__", "0.0.1")
    with pytest.raises(SparkextError,
                       match=f'package_version: the package has "0.0.1", the jar "{jar_version}"'):
        sparkext.enable(spark)
    monkeypatch.undo()
    sparkext.enable(spark)
