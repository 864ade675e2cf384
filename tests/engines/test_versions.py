"""Engine versions as recipes declare them: published versions in PEP 440's order (pure)."""

from __future__ import annotations

import json

import pytest

from ci_tools import resources
from ci_tools.engines import VERSION_PATTERN, is_version, release_number_problems, version_key


@pytest.mark.parametrize("schema", ["recipe", "disagg-recipe"])
def test_the_schemas_take_the_versions_the_engines_take(schema):
    data = json.loads(resources.text("ci_tools.schemas", f"{schema}.schema.json"))
    assert data["properties"]["engine-versions"]["items"]["pattern"] == VERSION_PATTERN


@pytest.mark.parametrize("version,ok", [
    ("0.5.22", True), ("1.3.0rc24", True), ("0.5.8.post1", True), ("1.3.0.dev20260718", True),
    ("1.3.0rc23.post1", True), ("0.1.6rc1.dev323", True),
    ("v0.5.22", False), ("nightly", False), ("0.5.22+cu130", False), ("46520ca59afe992fb5ef61b3197b2316f8df9b2b", False),
    ("1.3.0-dev.1", False), ("", False),
])
def test_is_version(version, ok):
    assert is_version(version) is ok
    assert (release_number_problems((version,)) == []) is ok


def test_version_key_is_pep_440_order():
    ordered = ["1.3.0.dev1", "1.3.0a1", "1.3.0rc1", "1.3.0rc1.post1", "1.3.0rc24", "1.3.0", "1.3.0.post1", "1.3.1",
               "1.10.0"]
    assert sorted(reversed(ordered), key=version_key) == ordered
    assert version_key("not-a-version") < version_key("0.0.1")
    assert version_key("0.5.22") == version_key("0.5.22.0")
