"""`.github/constraints.txt` pins every package ci-tools installs (its runtime dependency closure), so
the workflows (through the setup-ci-tools action, with pip's cache keyed on that file) and `dev.py`
install exactly the same versions; and the closure of the renderer the tests read comments with as GitHub
does (`RENDERER`: cmark-gfm and html5lib), so that reading cannot change with a dependency's release.
Regenerate after a dependency change:

    .venv/bin/python tests/workflows/test_constraints.py --write
"""

from __future__ import annotations

import re
import sys
from importlib.metadata import distribution
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
CONSTRAINTS = ROOT / ".github" / "constraints.txt"
HEADER = ("# Exact versions of everything `pip install ci-tools[plot,report]` brings in (the runtime dependency closure\n"
          "# of pyproject.toml), and of the `test` extra's GitHub comment renderer (cmarkgfm, html5lib and theirs).\n"
          "# The workflows install with `-c` this file and cache pip on it; dev.py too.\n"
          "# Kept current by tests/workflows/test_constraints.py (`--write` regenerates it from .venv).\n")
# The test extra's packages pinned here with their closure: GitHub renders comments with cmark-gfm, and the
# comment grammar is checked against it (tests/github_markdown.py).
RENDERER = ("cmarkgfm", "html5lib")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def closure() -> dict[str, str]:
    """name -> installed version for every runtime dependency of ci-tools and its `plot` and `report` extras,
    and for the renderer's closure (`RENDERER`)."""
    seen: dict[str, tuple[str, set[str]]] = {}

    def walk(name: str, extras: frozenset[str]) -> None:
        key = _norm(name)
        dist = distribution(name)
        if key in seen and extras <= seen[key][1]:
            return
        seen.setdefault(key, (dist.version, set()))[1].update(extras)
        for text in dist.requires or []:
            req = Requirement(text)
            if req.marker and not any(req.marker.evaluate({"extra": e}) for e in {"", *extras}):
                continue
            walk(req.name, frozenset(req.extras))

    walk("ci-tools", frozenset({"plot", "report"}))  # the extras the collect job installs (--plot, results report)
    seen.pop("ci-tools")
    for name in RENDERER:
        walk(name, frozenset())
    return {k: v for k, (v, _) in sorted(seen.items())}


def render() -> str:
    return HEADER + "".join(f"{k}=={v}\n" for k, v in closure().items())


def pins() -> dict[str, str]:
    out = {}
    for line in CONSTRAINTS.read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            out[_norm(name)] = version
    return out


def test_constraints_pin_exactly_the_installed_closure():
    assert CONSTRAINTS.exists(), f"missing {CONSTRAINTS}; run: .venv/bin/python {Path(__file__).relative_to(ROOT)} --write"
    assert pins() == closure(), ("the constraints differ from what ci-tools installs; regenerate:"
                                 f" .venv/bin/python {Path(__file__).relative_to(ROOT)} --write")


def test_the_setup_action_installs_with_the_constraints_and_caches_pip():
    action = (ROOT / ".github/actions/setup-ci-tools/action.yml").read_text()
    # from the folder it installs (`source`: the trusted checkout beside a fork's data, issue 15)
    assert "cache: pip" in action and "cache-dependency-path: ${{ inputs.source }}/.github/constraints.txt" in action
    assert '-c "$GITHUB_WORKSPACE/$SOURCE/.github/constraints.txt"' in action


def test_dev_py_installs_with_the_constraints():
    assert '".github" / "constraints.txt"' in (ROOT / "dev.py").read_text()


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        CONSTRAINTS.write_text(render())
        print(f"wrote {CONSTRAINTS}")
    else:
        sys.exit(__doc__)
