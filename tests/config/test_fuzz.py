"""Fuzzing the loader and the validator: whatever the input, findings come back, never an exception."""

from __future__ import annotations

import copy

import yaml
from cfgdata import BASES, REPO, RUNNERS, value_paths as _paths
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ci_tools.config.crossfile import Change
from ci_tools.config.validate import Sources, check
from ci_tools.errors import InputError
from ci_tools.yaml.located import load_yaml_text

RECIPE_TEXT = (REPO / "recipes/gb300-dsv41flash-fp4-sglang/agentic.yaml").read_text(encoding="utf-8")
RECIPE = yaml.safe_load(RECIPE_TEXT)
MASTERS = {key: data for key, data in BASES.values()}
MASTERS["dsv41flash-fp4-gb300-sglang-agentic-dspark"] = yaml.safe_load(
    (REPO / "inferencex-e2e/configs/nvidia-master.yaml").read_text(encoding="utf-8"))["dsv41flash-fp4-gb300-sglang-agentic-dspark"]

scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 300), st.floats(allow_nan=False, allow_infinity=False),
                    st.text(max_size=12), st.sampled_from(["none", "dram", "mtp", "cluster:b300-nv", "image:x",
                                                           "recipes/x.yaml", "*", "", "8"]))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(st.text(max_size=8), inner, max_size=3)),
                      max_leaves=8)


def _mutated(base, data):
    """Replace, delete or add at random places in a deep copy of `base`."""
    out = copy.deepcopy(base)
    all_paths = list(_paths(out))
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(all_paths))
        if not path:
            continue
        parent = out
        try:
            for p in path[:-1]:
                parent = parent[p]
            op = data.draw(st.sampled_from(["set", "delete", "add"]))
            if op == "set":
                parent[path[-1]] = data.draw(values)
            elif op == "delete" and isinstance(parent, dict):
                del parent[path[-1]]
            elif op == "add" and isinstance(parent, dict):
                parent[data.draw(st.text(max_size=10))] = data.draw(values)
        except (KeyError, IndexError, TypeError):
            continue  # an earlier mutation removed or replaced this path
    return out


def _check_texts(master_text: str, runners_text: str, recipe_text: str | None = None, change=Change()):
    """Run load + check like the CLI does (recipes need a root, so a fake one is used)."""
    src = Sources(REPO if recipe_text is not None else None)
    for name, text in (("m.yaml", master_text), ("r.yaml", runners_text), ("recipes/x/a.yaml", recipe_text)):
        if text is None:
            continue
        try:
            doc = load_yaml_text(text, name)
        except InputError as exc:
            assert exc.findings and all(f.message for f in exc.findings)
            src.findings.extend(exc.findings)
            continue
        if name == "m.yaml":
            src.masters.append(doc)
        elif name == "r.yaml":
            src.runners = doc
        else:
            src.recipes[name] = doc
            src.recipe_paths.add(name)
    report = check(src, change)
    for f in report.findings:
        assert f.file and f.message and f.severity in ("error", "warning")
        assert f.line is None or f.line >= 1
    return report


FUZZ = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FUZZ_DOCS = settings(FUZZ, max_examples=60)  # whole documents: each example validates 5 entries and a recipe


@FUZZ
@given(st.text(max_size=200))
def test_arbitrary_text_never_raises(text):
    _check_texts(text, text)


@FUZZ
@given(st.data())
def test_yaml_fragments_never_raise(data):
    pieces = data.draw(st.lists(st.sampled_from(
        ["a:", " b: 1", "- x", "  - {tp: 8}", "&a {x: 1}", "<<: *a", "*a", "? [1]", ": 2", "'", "\"", "\t", "\ufeff",
         "---", "...", "!!python/object:os.system", "k: [1, 2", "k: {", "%YAML 1.1", "\x00", "\u2028"]), max_size=8))
    _check_texts("\n".join(pieces), "\n".join(reversed(pieces)))


@FUZZ_DOCS
@given(st.data())
def test_mutated_masters_and_runners_never_raise(data):
    masters = _mutated(MASTERS, data)
    runners = _mutated(RUNNERS, data)
    keys = frozenset(data.draw(st.lists(st.sampled_from(list(MASTERS) + ["*"]), max_size=2)))
    _check_texts(yaml.safe_dump(masters), yaml.safe_dump(runners), change=Change(keys))


@FUZZ_DOCS
@given(st.data())
def test_mutated_recipes_never_raise(data):
    recipe = _mutated(RECIPE, data)
    masters = {k: dict(v, recipe="recipes/x/a.yaml") if isinstance(v, dict) else v for k, v in MASTERS.items()}
    _check_texts(yaml.safe_dump(_mutated(masters, data)), yaml.safe_dump(RUNNERS), yaml.safe_dump(recipe))
