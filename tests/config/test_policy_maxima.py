"""Every number of ci-policy.yaml has a schema maximum (issue 35): `results.concurrency-slack: 100000` was
accepted and switched the concurrency check off; an estimate or a compare history of 10^9 was read as
given. `config validate` names each at its line, and reading the policy (plan, reuse, compare) refuses it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from clirun import run

from ci_tools.config import schemas
from ci_tools.errors import InputError
from ci_tools.sweep.labels import policy_from_text

REPO = Path(__file__).resolve().parents[2]


def _numbers(node, path=()):
    if isinstance(node, dict):
        kinds = node.get("type") if isinstance(node.get("type"), list) else [node.get("type")]
        if "integer" in kinds or "number" in kinds:
            yield path, node
        for key, value in node.items():
            yield from _numbers(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _numbers(value, (*path, str(i)))


def test_every_number_of_the_policy_schema_has_a_maximum():
    found = list(_numbers(schemas.schema("ci-policy")))
    assert len(found) >= 15
    missing = ["/".join(p) for p, node in found if "maximum" not in node and "exclusiveMaximum" not in node]
    assert not missing, f"numbers of ci-policy.schema.json without a maximum: {missing}"


def _policy_with(text: str, key: str, value: str) -> str:
    """The shipped policy with the first `  key: ...` line of its section given VALUE."""
    lines = text.splitlines()
    section, name = key.split(".")
    at = lines.index(f"{section}:")
    for i in range(at + 1, len(lines)):
        if lines[i].startswith(f"  {name}:"):
            lines[i] = f"  {name}: {value}"
            return "\n".join(lines) + "\n"
    raise AssertionError(f"no {key} in the policy")


CASES = [
    ("results.concurrency-slack", "100000", "'concurrency-slack' must be at most 4, got 100000"),
    ("results.itl-outlier-factor", "1.0e+308", "'itl-outlier-factor' must be at most 1000"),
    ("results.ttft-outlier-factor", "50000", "'ttft-outlier-factor' must be at most 10000"),
    ("compare.history", "1000000000", "'history' must be at most 100, got 1000000000"),
    ("compare.min-history", "1000", "'min-history' must be at most 100"),
    ("estimates.eval-seconds", "1000000000000", "'eval-seconds' must be at most 86400"),
    ("agentx-profiles.default", "1000000000000", "'default' must be at most 86400"),
    ("evals.timeout-seconds", "999999999", "'timeout-seconds' must be at most 86400"),
]


@pytest.mark.parametrize("key,value,words", CASES, ids=[c[0] for c in CASES])
def test_config_validate_names_a_huge_knob_at_its_line(tmp_path: Path, key, value, words):
    for part in ("inferencex-e2e", "recipes"):
        shutil.copytree(REPO / part, tmp_path / part)
    policy = tmp_path / "inferencex-e2e/ci-policy.yaml"
    text = _policy_with(policy.read_text(), key, value)
    policy.write_text(text)
    line = text.splitlines().index(f"  {key.split('.')[1]}: {value}") + 1
    res = run(["config", "validate", "--root", str(tmp_path), "--format", "json"])
    assert res.code == 1, res.out + res.err
    found = [e for e in json.loads(res.out)["errors"] if e["file"] == "inferencex-e2e/ci-policy.yaml"]
    assert [(e["line"], words in e["message"]) for e in found] == [(line, True)], found


@pytest.mark.parametrize("key,value,words", [c for c in CASES if c[0].split(".")[0] in
                                             ("compare", "estimates", "agentx-profiles")])
def test_reading_the_policy_refuses_a_huge_knob(key, value, words):
    text = _policy_with((REPO / "inferencex-e2e/ci-policy.yaml").read_text(), key, value)
    with pytest.raises(InputError) as exc:
        policy_from_text(text, "ci-policy.yaml")
    assert words in exc.value.message and exc.value.findings[0].line is not None
