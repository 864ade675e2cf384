"""The README and the docs/ pages stay true: short, every link resolves, every command they show runs.

The README is what a newcomer reads first (issue 24: it had grown to 1,096 lines); the per-role
pages under docs/ hold the rest. These checks read the files as GitHub renders them.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from ci_tools.cli import cli
from tests.conftest import dev_py

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
PAGES = sorted((REPO / "docs").glob("*.md"))
DOCS = [README, *PAGES]

FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
LINK = re.compile(r"(?<!\!)\[[^\]]*\]\(([^)\s]+)\)|\!\[[^\]]*\]\(([^)\s]+)\)")
# Codes that point into documents outside this repository (the weakness list and spec of the
# reference, the issue tracker): a reader of the docs cannot look them up, so they are not used.
UNDEFINED_CODE = re.compile(r"\bW\d{1,2}\b|§\s*\d|\bspec (§|[A-Z]\d)|\b[Ii]ssue \d+\b")


def rel(path: Path) -> str:
    return str(path.relative_to(REPO))


def prose(text: str) -> str:
    """The text outside fenced blocks (links and headings inside code are not links)."""
    return FENCE.sub("", text)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, markup and punctuation dropped, spaces to '-'."""
    text = re.sub(r"`|\*|_(?=\W)|(?<=\W)_", "", heading.strip().lower())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    for line in prose(path.read_text(encoding="utf-8")).splitlines():
        if line.startswith("#"):
            base = slug(line.lstrip("#"))
            n, name = 0, base
            while name in found:          # GitHub numbers repeated headings: x, x-1, x-2
                n += 1
                name = f"{base}-{n}"
            found.add(name)
    return found


def test_readme_is_short():
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= 300, f"README.md has {lines} lines; move detail into a docs/ page and link it"


@pytest.mark.parametrize("doc", DOCS, ids=rel)
def test_every_relative_link_resolves(doc):
    broken = []
    for m in LINK.finditer(prose(doc.read_text(encoding="utf-8"))):
        url = m.group(1) or m.group(2)
        if re.match(r"[a-z]+:", url):
            continue
        target, _, anchor = url.partition("#")
        path = (doc.parent / target).resolve() if target else doc
        if not path.exists():
            broken.append(f"{url}: {path} does not exist")
        elif anchor and path.suffix == ".md" and anchor not in anchors(path):
            broken.append(f"{url}: no heading with anchor #{anchor} in {rel(path)}")
    assert not broken, f"{rel(doc)}:\n" + "\n".join(broken)


def test_every_docs_page_is_linked_from_the_readme():
    text = prose(README.read_text(encoding="utf-8"))
    linked = {(REPO / (m.group(1) or m.group(2)).partition("#")[0]).resolve() for m in LINK.finditer(text)}
    missing = [rel(p) for p in PAGES if p.resolve() not in linked]
    assert not missing, f"README.md links no page {missing}"


@pytest.mark.parametrize("doc", DOCS, ids=rel)
def test_no_code_defined_nowhere(doc):
    hits = [f"{rel(doc)}:{n}: {m.group(0)!r}" for n, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1)
            for m in UNDEFINED_CODE.finditer(line)]
    assert not hits, "say what the code stands for instead:\n" + "\n".join(hits)


def readme_commands() -> list[list[str]]:
    """Every `ci-tools ...` command line of the README's shell and console blocks, as argv after `ci-tools`."""
    found = []
    for lang, body in FENCE.findall(README.read_text(encoding="utf-8")):
        if lang not in ("sh", "console", "bash"):
            continue
        joined = re.sub(r"\\\n\s*", " ", body)
        for line in joined.splitlines():
            line = line.removeprefix("$ ").strip()
            if line.startswith("ci-tools "):
                line = line.split(" #", 1)[0]
                found.append(shlex.split(line.replace("<", "'<").replace(">", ">'"))[1:])
    return found


def resolve(argv: list[str]) -> tuple[list[str], click.Command, list[str]]:
    """The command path an argv names (group by group), the command, and the rest of the argv."""
    command: click.Command = cli
    path: list[str] = []
    rest = list(argv)
    while isinstance(command, click.Group) and rest and not rest[0].startswith("-"):
        sub = command.get_command(click.Context(command), rest[0])
        assert sub is not None, f"`ci-tools {' '.join(path + rest[:1])}`: no such command"
        path.append(rest.pop(0))
        command = sub
    return path, command, rest


def test_readme_shows_commands():
    assert len(readme_commands()) >= 6


@pytest.mark.parametrize("argv", readme_commands(), ids=" ".join)
def test_readme_command_exists_and_takes_those_options(argv):
    path, command, rest = resolve(argv)
    res = CliRunner().invoke(cli, [*path, "--help"])
    assert res.exit_code == 0, res.output
    known = {name for param in command.params for name in getattr(param, "opts", []) + getattr(param, "secondary_opts", [])}
    known |= {"--help", "-h"}
    unknown = [tok.split("=")[0] for tok in rest if tok.startswith("-") and tok.split("=")[0] not in known]
    assert not unknown, f"`ci-tools {' '.join(path)}` has no option {unknown}"


def test_the_two_quick_start_commands_are_dev_py_commands():
    text = README.read_text(encoding="utf-8")
    quick = text[text.index("## Quick start"):]
    block = FENCE.search(quick).group(2)
    shown = [line.split("#")[0].split() for line in block.splitlines() if line.strip()]
    assert shown == [["python3", "dev.py", "demo"], ["python3", "dev.py", "test"]]
    # dev.py accepts these (importing it installs nothing); an unknown word prints the usage and exits 2
    # (tests/test_dev.py checks its other answers)
    assert {"demo", "test"} <= set(dev_py().COMMANDS)
    out = subprocess.run([sys.executable, str(REPO / "dev.py"), "no-such-command"], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 2 and "python3 dev.py demo" in out.stdout and "python3 dev.py test" in out.stdout


# ---- the README's input size limits (issue 25) -----------------------------------------------------------

LIMIT_ROW = re.compile(r"^\| (?P<what>[^|]+) \| (?P<value>[0-9,]+) \| `(?P<where>[^`]+)`(?: `(?P<field>[^`]+)`)? \|$", re.M)


def _schema_maximum(node, field: str):
    """The `maximum` of property `field` anywhere in a JSON Schema."""
    if isinstance(node, dict):
        if isinstance(node.get("properties"), dict) and field in node["properties"]:
            return node["properties"][field]["maximum"]
        for value in node.values():
            found = _schema_maximum(value, field)
            if found is not None:
                return found
    if isinstance(node, list):
        for value in node:
            found = _schema_maximum(value, field)
            if found is not None:
                return found
    return None


def _limit(where: str, field: str | None):
    import importlib
    import json

    if where.endswith(".json"):
        return _schema_maximum(json.loads((REPO / where).read_text(encoding="utf-8")), field)
    module, name = where.rsplit(".", 1)
    return getattr(importlib.import_module(module), name)


def test_the_readme_limits_are_the_codes():
    section = README.read_text(encoding="utf-8").split("## Input size limits", 1)[1].split("\n## ", 1)[0]
    rows = list(LIMIT_ROW.finditer(section))
    assert len(rows) == section.count("\n| ") - 1, "a row of the limits table does not read as | what | N | `where` |"
    wanted = {"ci_tools.errors.MAX_FINDINGS_PER_FILE", "ci_tools.yaml.located.MAX_DEPTH",
              "ci_tools.yaml.located.ALIAS_FACTOR", "ci_tools.yaml.located.ALIAS_SLACK",
              "ci_tools.results.record_fields.MAX_LINE_BYTES", "ci_tools.results.record_fields.MAX_DEPTH"}
    assert wanted <= {r["where"] for r in rows}
    wrong = {r["where"]: (r["value"], _limit(r["where"], r["field"])) for r in rows
             if int(r["value"].replace(",", "")) != _limit(r["where"], r["field"])}
    assert not wrong, f"README.md's input size limits differ from the code (README, code): {wrong}"
