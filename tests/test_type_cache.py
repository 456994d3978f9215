"""The JVM's caches of data types stay bounded: a long-lived driver meets any number of
distinct struct types, and each used to stay cached for good."""

from __future__ import annotations

import json


def test_the_jvm_type_caches_stay_bounded(spark):
    codec = spark._jvm.io.sparkext.PlanCodec
    limit = codec.TypeCacheSize()
    for i in range(limit + 10):
        field = {"name": f"f{i}", "type": "integer", "nullable": True, "metadata": {}}
        t = codec.parseType(json.dumps({"type": "struct", "fields": [field]}))
        assert json.loads(codec.typeJson(t))["fields"][0]["name"] == f"f{i}"
    assert 0 < codec.cachedTypes() <= limit
