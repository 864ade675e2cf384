"""The shipped schemas are valid Draft 2020-12 and the config files' editor hints point at them."""

from __future__ import annotations

import re

import pytest
from cfgdata import REPO
from jsonschema import Draft202012Validator

from ci_tools.config import schemas


@pytest.mark.parametrize("name", sorted(schemas.SCHEMA_FILES))
def test_schema_is_valid_draft_2020_12(name):
    sch = schemas.schema(name)
    assert sch["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(sch)


@pytest.mark.parametrize("rel,name", [
    ("inferencex-e2e/configs/nvidia-master.yaml", "master.schema.json"),
    ("inferencex-e2e/configs/runners.yaml", "runners.schema.json"),
    ("recipes/gb300-dsv41flash-fp4-sglang/agentic.yaml", "recipe.schema.json"),
])
def test_editor_schema_line_points_at_the_shipped_file(rel, name):
    first = (REPO / rel).read_text(encoding="utf-8").splitlines()[0]
    m = re.fullmatch(r"# yaml-language-server: \$schema=(\S+)", first)
    assert m, first
    target = ((REPO / rel).parent / m.group(1)).resolve()
    assert target == (REPO / "ci_tools" / "schemas" / name).resolve() and target.is_file()


def test_inlined_validator_agrees_with_the_schema_as_written():
    """Inlining $refs is an optimisation: it must accept and reject exactly what the file says."""
    import yaml

    from cfgdata import BASES, mutate

    plain = Draft202012Validator(schemas.schema("master"))
    for key, data in BASES.values():
        for variant in (data, mutate(data, {"runner": 5}), mutate(data, {"scenarios": {"x": []}}),
                        mutate(data, {"multinode": not data["multinode"]})):
            doc = {key: yaml.safe_load(yaml.safe_dump(variant))}
            ref = "mnEntry" if variant["multinode"] else "snEntry"
            assert plain.is_valid(doc) == schemas.validator("master", ref).is_valid(doc[key]), (key, variant)


def test_the_framework_enum_names_every_engine_and_every_multinode_framework():
    """A master's `framework` is one of a known list (an unknown one was accepted); that list keeps every
    engine plug-in and every framework the multi-node rules know (config/disaggcheck.py)."""
    from ci_tools import engines
    from ci_tools.config.disaggcheck import ENGINE_OF_FRAMEWORK

    known = set(schemas.schema("master")["$defs"]["framework"]["enum"])
    assert set(engines.ENGINE_NAMES) <= known and set(ENGINE_OF_FRAMEWORK) <= known
