"""The wall between decisions and I/O, checked on the source (issue 12).

Every module of `ci_tools` is either *shell* (it may read files, run processes, talk to GitHub, parse
options) or *core* (decisions over plain data). A core module imports from outside ci_tools only what
`ALLOWED_IMPORTS` lists (computation over data: no process, network, file system, environment or
interpreter machinery), may not touch files, and may not import a shell module of ci_tools either,
since that would carry the I/O in. Which modules are shell is decided here, by name, so that a new
module is core unless its name says otherwise:

- the `cli/` and `github/` packages, `gitio.py` and `__main__.py` (except `github/models.py`, GitHub's
  objects as plain data, and its `fork.py`, which the core takes: `CORE_IN_SHELL_PACKAGES`);
- any module named `flow.py`, `*_flow.py`, `shell.py`, `load.py` or `inputs.py`, in any package;
- the few adapters listed in `ADAPTERS`, each with the reason it is one.

`resources.py` is the one module that is neither: it reads ci-tools' own package data (schemas,
templates, the default policy), which is part of the code, not input, so core modules may import it;
`test_resources_reads_only_package_data` holds it to that.

The imports are read with `ast` (no module is imported), so the test also sees code that only runs on
one path.

The same imports also hold the package stack (issue 27, at the end of this file): the packages of
`ci_tools/` are floors (`FLOORS`, shown in docs/architecture.md), a module imports only packages of
lower floors, and no packages import each other; each import against it is named with file:line.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "ci_tools"

SHELL_PACKAGES = ("cli", "github")
SHELL_FILES = ("gitio.py", "__main__.py")
SHELL_NAMES = ("flow.py", "shell.py", "load.py", "inputs.py")
# Core modules inside a shell package, each with the reason.
CORE_IN_SHELL_PACKAGES = {
    "github/models.py": "GitHub's objects as plain dataclasses: the adapter fills them, the core decides over them",
    "github/fork.py": "the fork rule of those objects, apart so the gate need not build them",
}

# Adapters by nature: what they are for is the I/O itself.
ADAPTERS = {
    "runner/cleanup.py": "finds and stops what a job left behind (processes, containers, Slurm jobs)",
    "runner/early.py": "installs the signal handlers that remember an early cancel",
    "runner/supervise.py": "the one job lifecycle: signals, the phases, the ExitStack that stops what started",
    "runner/procs.py": "starts, stops and waits for the job's processes; its HTTP calls",
    "runner/allocation.py": "asks Slurm for the job's allocation, waits for it, cancels it",
    "runner/slack.py": "posts the digest to Slack",
    "runner/screen_git.py": "reads recipes from git at the head ref for plan-time screening",
    "runner/selftest_model.py": "a script the engine's own Python runs: builds and writes the self-test's model",
    "runner/seal.py": "hashes the client's exports into their record when the client exits",
    "custody/hashing.py": "reads the client's exports to hash them (the runner's seal and results' check alike)",
    "results/custody_files.py": "reads a job's custody record and hashes its exports again",
    "results/records.py": "streams AIPerf's profile_export.jsonl, in parallel for big files",
    "results/process.py": "one job directory in, result.json out",
    "results/collect.py": "a run's downloaded artifacts in, results.json out",
    "results/sources.py": "collections, result directories and CSVs in",
    "results/baselines.py": "main's results from its sweep runs' artifacts, through the GitHub client",
    "results/render.py": "writes the Pareto PNG with matplotlib",
    "evals/driver.py": "runs the eval harness per concurrency",
    "evals/process.py": "one eval job directory in, eval_result.json out",
    "evals/swebench.py": "the agentic harness command of runner hosts",
}

# What a core module may import from outside ci_tools: an allow-list, so a new way to reach the world
# (a module, or a name of a module that also does I/O) fails until someone decides it is pure. The
# value is None for a module that is computation over data throughout, or the names it may take from a
# module that also reaches the world (checked in `from m import name` and in `m.name` alike).
ALLOWED_IMPORTS: dict[str, frozenset[str] | None] = {
    # the language and its data types
    "__future__": None, "abc": None, "collections": None, "collections.abc": None, "dataclasses": None, "enum": None,
    "functools": None, "itertools": None, "operator": None, "types": None, "typing": None,
    # numbers, text and formats, computed in memory
    "array": None, "bisect": None, "datetime": None, "decimal": None, "difflib": None, "fnmatch": None,
    "hashlib": None, "heapq": None, "html": None, "json": None, "math": None, "re": None,
    "shlex": None, "statistics": None, "string": None, "unicodedata": None,
    "urllib.parse": None,
    # in-memory streams only (io also opens files); paths as values (their file methods: FILE_METHODS)
    "io": frozenset({"StringIO", "BytesIO"}),
    "pathlib": frozenset({"Path", "PurePath", "PurePosixPath"}),
    # third-party parsers and numerics over data handed in
    "yaml": None, "ruamel.yaml": None, "jsonschema": None, "numpy": None, "codeowners": None, "msgspec": None,
}
# the ci_tools modules a core module may never import (besides every shell module)
FORBIDDEN_MODULES = ("ci_tools.github", "ci_tools.gitio", "ci_tools.cli")
FILE_METHODS = {"read_text", "read_bytes", "write_text", "write_bytes", "open", "iterdir", "glob", "rglob",
                "mkdir", "unlink", "rmdir", "touch", "exists", "is_file", "is_dir", "stat", "cwd", "home",
                "expanduser", "absolute", "chmod", "samefile", "symlink_to", "readlink", "lstat"}
# functions whose job is to read a file, imported by name from wherever they live
IO_HELPERS = {"load_yaml_file", "read_text", "read_bytes", "write_text", "write_bytes"}
# builtins that reach the world or run code chosen at run time (`open` is FILE_METHODS' own check)
BUILTIN_CALLS = {"open", "__import__", "exec", "eval", "compile", "input", "breakpoint"}

# Today's violations, each to be removed by making the module clean. Never add to this list for new
# code; an entry may follow its module when the module moves unchanged. The test fails on an entry that
# is no longer a violation, so the list only shrinks; issue 12 is done when it is empty.
KNOWN: dict[str, set[str]] = {
}


def _relative(path: Path) -> str:
    return path.relative_to(PKG).as_posix()


def _module_name(rel: str) -> str:
    parts = rel[:-3].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(["ci_tools", *parts])


def is_shell(rel: str) -> bool:
    parts = rel.split("/")
    name = parts[-1]
    if rel in CORE_IN_SHELL_PACKAGES:
        return False
    return (parts[0] in SHELL_PACKAGES or rel in SHELL_FILES or name in SHELL_NAMES
            or name.endswith("_flow.py") or rel in ADAPTERS)


def _all_modules() -> dict[str, str]:
    return {_module_name(_relative(p)): _relative(p) for p in sorted(PKG.rglob("*.py"))}


MODULES = _all_modules()
SHELL_MODULES = {name for name, rel in MODULES.items() if is_shell(rel)}
CORE_MODULES = {name for name, rel in MODULES.items() if not is_shell(rel)} - {"ci_tools"}


def _owner(name: str) -> str:
    """The module of `ci_tools` an imported name lives in (the longest module name it is under)."""
    return max((m for m in MODULES if _under(name, m)), key=len, default="")


def _resolve(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def allowed_outside(name: str) -> bool:
    """May a core module import `name` (a module, or `module.name` of a `from` import) from outside ci_tools?
    The longest entry of ALLOWED_IMPORTS the name lies under decides."""
    key = max((k for k in ALLOWED_IMPORTS if _under(name, k)), key=len, default=None)
    if key is None:
        return False
    names = ALLOWED_IMPORTS[key]
    return names is None or name == key or name[len(key) + 1:].split(".")[0] in names


@dataclass(frozen=True)
class Violation:
    line: int
    what: str


def violations(rel: str, source: str) -> list[Violation]:
    module = _module_name(rel)
    tree = ast.parse(source, filename=rel)
    found: list[Violation] = []

    # modules bound by `import m` whose names are limited (ALLOWED_IMPORTS): local name -> module
    limited: dict[str, str] = {}

    def imported(name: str, line: int) -> bool:
        if not _under(name, "ci_tools"):
            if not allowed_outside(name):
                found.append(Violation(line, f"imports {name}"))
                return True
            return False
        if _owner(name) in CORE_MODULES:
            return False
        for bad in FORBIDDEN_MODULES:
            if _under(name, bad):
                found.append(Violation(line, f"imports {name}"))
                return True
        for shell in SHELL_MODULES:
            if _under(name, shell) and shell != "ci_tools":
                found.append(Violation(line, f"imports shell module {shell}"))
                return True
        return False

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if not imported(alias.name, node.lineno) and ALLOWED_IMPORTS.get(alias.name) is not None:
                    limited[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(node, module, rel.endswith("__init__.py"))
            if not _under(base, "ci_tools"):
                for alias in node.names:    # judged by name: `from os import environ` is os's environ
                    imported(f"{base}.{alias.name}", node.lineno)
            elif not imported(base, node.lineno):
                for alias in node.names:  # `from ci_tools import gitio` names the module in the alias
                    if alias.name in IO_HELPERS:
                        found.append(Violation(node.lineno, f"imports the file reader {alias.name}"))
                    else:
                        imported(f"{base}.{alias.name}", node.lineno)
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in BUILTIN_CALLS:
                found.append(Violation(node.lineno, f"calls {func.id}()"))
            elif isinstance(func, ast.Attribute) and func.attr in FILE_METHODS:
                found.append(Violation(node.lineno, f"calls .{func.attr}()"))
    for node in ast.walk(tree):     # `io.FileIO` after `import io`: a name the module may not take
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in limited \
                and not allowed_outside(f"{limited[node.value.id]}.{node.attr}"):
            found.append(Violation(node.lineno, f"uses {limited[node.value.id]}.{node.attr}"))
    # one entry per kind of reach, at its first line, so a message stays readable
    first: dict[str, Violation] = {}
    for v in sorted(found, key=lambda v: v.line):
        first.setdefault(v.what, v)
    return sorted(first.values(), key=lambda v: v.line)


PACKAGE_DATA_READER = "resources.py"
CORE = sorted(rel for name, rel in MODULES.items() if name not in SHELL_MODULES and rel != PACKAGE_DATA_READER)


def test_resources_reads_only_package_data():
    from ci_tools import resources
    source = (PKG / PACKAGE_DATA_READER).read_text(encoding="utf-8")
    imports = {a.name if isinstance(n, ast.Import) else n.module
               for n in ast.walk(ast.parse(source)) if isinstance(n, (ast.Import, ast.ImportFrom))
               for a in n.names}
    assert imports <= {"__future__", "functools", "importlib"}, imports
    assert '"type": "object"' in resources.text("ci_tools.schemas", "master.schema.json")
    with pytest.raises(ValueError, match="own package data"):
        resources.text("tests", "conftest.py")


def test_the_wall_sees_core_and_shell_modules():
    # guards the test itself: if the naming rules stopped matching, every module would be "core" or
    # none would, and the wall would check nothing or everything
    assert len(CORE) > 40 and len(SHELL_MODULES) > 20


@pytest.mark.parametrize("rel", CORE)
def test_core_module_does_no_io(rel):
    found = violations(rel, (PKG / rel).read_text(encoding="utf-8"))
    kinds = {v.what for v in found}
    allowed = KNOWN.get(rel, set())
    stale = allowed - kinds
    assert not stale, (f"ci_tools/{rel} no longer {', '.join(sorted(stale))}: remove that from KNOWN in "
                       "tests/test_layers.py")
    new = [v for v in found if v.what not in allowed]
    assert not new, (f"ci_tools/{rel} is a core module (decisions over plain data) but:\n"
                     + "\n".join(f"  ci_tools/{rel}:{v.line}: {v.what}" for v in new)
                     + "\nmove the I/O into the feature's shell module (flow.py, shell.py, load.py or inputs.py) "
                     "and pass the data in; see the rules at the top of tests/test_layers.py")


def test_known_list_names_only_core_modules():
    assert not [rel for rel in KNOWN if rel not in CORE], "KNOWN lists a module that is not core (or gone)"


CASES = [
    ("import subprocess\n", ["imports subprocess"]),
    ("from ci_tools import gitio\n", ["imports ci_tools.gitio"]),
    ("from ..github.client import GitHub\n", ["imports ci_tools.github.client"]),
    ("from ci_tools.github import client\n", ["imports ci_tools.github"]),
    ("from ci_tools.github.models import Comment\n", []),
    ("from ci_tools.cli import main\n", ["imports ci_tools.cli"]),
    ("import os\nx = os.environ['A']\n", ["imports os"]),
    ("from pathlib import Path\nPath('x').read_text()\n", ["calls .read_text()"]),
    ("with open('x') as f: pass\n", ["calls open()"]),
    ("from ci_tools.somewhere import load_yaml_file\n", ["imports the file reader load_yaml_file"]),
    ("from importlib.resources import files\n", ["imports importlib.resources.files"]),
    ("from importlib import resources\n", ["imports importlib.resources"]),
    ("import json\nfrom dataclasses import dataclass\nfrom ..errors import Finding\n", []),
    ("import io\nfrom io import StringIO\nb = io.BytesIO()\n", []),
    ("from collections.abc import Mapping\nimport ruamel.yaml\nfrom pathlib import PurePosixPath\n", []),
]
# Ways to reach the world that the wall let through while it was a list of forbidden modules (every
# one of them passed it): the allow-list stops each, at its line.
SLIPPED_PAST_A_DENYLIST = [
    ("from os import environ\n", ["imports os.environ"]),
    ("import os.path\nos.path.isfile('x')\n", ["imports os.path"]),
    ("import shutil\nshutil.copy('a', 'b')\n", ["imports shutil"]),
    ("import tempfile\ntempfile.mkdtemp()\n", ["imports tempfile"]),
    ("import importlib\nimportlib.import_module('ci_tools.gitio')\n", ["imports importlib"]),
    ("__import__('subprocess')\n", ["calls __import__()"]),
    ("import sys\nsys.stdin.read()\n", ["imports sys"]),
    ("import http.client\n", ["imports http.client"]),
    ("import asyncio\n", ["imports asyncio"]),
    ("import multiprocessing\n", ["imports multiprocessing"]),
    ("import signal\n", ["imports signal"]),
    ("import zipfile\nzipfile.ZipFile('x.zip')\n", ["imports zipfile"]),
    ("import glob\nglob.iglob('*')\n", ["imports glob"]),
    ("import io\nio.FileIO('x')\n", ["uses io.FileIO"]),
    ("import sqlite3\n", ["imports sqlite3"]),
    ("from pathlib import Path\nPath.cwd()\n", ["calls .cwd()"]),
]


@pytest.mark.parametrize("source,expected", CASES + SLIPPED_PAST_A_DENYLIST)
def test_the_checker_finds_each_kind_of_reach(source, expected):
    assert [v.what for v in violations("sweep/example.py", source)] == expected


def test_a_planted_reach_fails_the_wall_at_its_line():
    """What `test_core_module_does_no_io` reports for a core module with one of those forms in it."""
    source = (PKG / "sweep" / "matrix.py").read_text(encoding="utf-8") + "\nfrom os import environ\n"
    assert [(v.line, v.what) for v in violations("sweep/matrix.py", source)] == [
        (source.count("\n"), "imports os.environ")]


def test_every_allowed_import_is_used():
    """The allow-list names what core modules do import, no more: an entry nobody needs goes."""
    used = set()
    for rel in CORE:
        for node in ast.walk(ast.parse((PKG / rel).read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [f"{node.module}.{a.name}" for a in node.names]
                     if isinstance(node, ast.ImportFrom) and node.module and not node.level else [])
            used |= {k for k in ALLOWED_IMPORTS for n in names if _under(n, k)}
    assert not set(ALLOWED_IMPORTS) - used, f"no core module imports {sorted(set(ALLOWED_IMPORTS) - used)}"


# One writer per surface: GitHub Actions' files and workflow commands are written by
# `ci_tools/github/actions.py` only, and git runs through `ci_tools/gitio.py` only.
SURFACES = {
    "the Actions step files": ("github/actions.py",
                               lambda s: s in ("GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_ENV")),
    "Actions workflow commands": ("github/actions.py",
                                  lambda s: s.startswith(("::error", "::warning", "::notice", "::group"))),
    "git": ("gitio.py", lambda s: s == "git"),
}
# Today's other writers; the list only shrinks (the test fails on a stale entry).
KNOWN_SURFACES: dict[str, set[str]] = {
}


def surface_reaches(rel: str, source: str) -> set[str]:
    tree = ast.parse(source, filename=rel)
    reached = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            for surface, (owner, matches) in SURFACES.items():
                if rel != owner and matches(node.value):
                    reached.add(surface)
    return reached


@pytest.mark.parametrize("rel", sorted(MODULES.values()))
def test_one_writer_per_surface(rel):
    reached = surface_reaches(rel, (PKG / rel).read_text(encoding="utf-8"))
    allowed = KNOWN_SURFACES.get(rel, set())
    assert not allowed - reached, f"ci_tools/{rel}: remove {sorted(allowed - reached)} from KNOWN_SURFACES"
    extra = sorted(reached - allowed)
    assert not extra, (f"ci_tools/{rel} writes {', '.join(extra)} itself; go through "
                       + ", ".join(f"ci_tools/{SURFACES[s][0]}" for s in extra))


# Each package says, in its __init__ docstring, what lives there and what it may import, so that a
# maintainer reading one folder knows its side of the wall without this file.
PACKAGES = sorted(rel for rel in MODULES.values() if rel.endswith("__init__.py") and rel != "__init__.py")
KNOWN_UNDOCUMENTED = {
}


@pytest.mark.parametrize("rel", PACKAGES)
def test_each_package_says_what_it_may_import(rel):
    doc = ast.get_docstring(ast.parse((PKG / rel).read_text(encoding="utf-8"))) or ""
    documented = "may import" in doc.lower()
    if rel in KNOWN_UNDOCUMENTED:
        assert not documented, f"ci_tools/{rel} is documented now: remove it from KNOWN_UNDOCUMENTED"
        return
    assert documented, (f"ci_tools/{rel}: the package docstring must say what lives here and what it may "
                        "import (a line such as 'May import: ci_tools.errors, ci_tools.yaml; no I/O.')")


# ---- the package stack (issue 27) -------------------------------------------------------------------
# The packages of ci_tools/ as floors, lowest first (docs/architecture.md, "The package stack", shows
# the same table; `test_the_architecture_doc_shows_these_floors` holds the two equal). A module may
# import a package of a lower floor only: never one of its own floor or above. Top-level modules count
# as packages of their own (`gitio.py` is `gitio`). No exception list: a check a lower floor needs from
# a higher one is passed in by the higher floor's flow or the command, or the knowledge moves down.
# The runner and results share a floor, so neither imports the other: what both must agree on (the
# telemetry CSV's columns, the custody record) lies below them (`names`, `custody`).
FLOORS: tuple[tuple[str, ...], ...] = (
    ("errors", "names", "resources", "schemas"),
    ("yaml", "gitio", "render", "custody"),
    ("github", "engines"),
    ("config",),
    ("changelog",),
    ("sweep",),
    ("evals",),
    ("runner", "results"),
    ("prbot",),
    ("cli",),
    ("__main__",),
)
FLOOR_OF = {pkg: n for n, floor in enumerate(FLOORS) for pkg in floor}
DOC = PKG.parent / "docs" / "architecture.md"


def _package(module: str) -> str | None:
    """The package of `ci_tools` a module name lies in (`ci_tools.sweep.flow` -> `sweep`); None for the
    root package itself or a name outside ci_tools."""
    parts = module.split(".")
    return parts[1] if parts[0] == "ci_tools" and len(parts) > 1 else None


@dataclass(frozen=True)
class Import:
    rel: str       # the importing file, relative to ci_tools/
    line: int
    source: str    # its package
    target: str    # the imported package

    def __str__(self) -> str:
        return f"ci_tools/{self.rel}:{self.line}: {self.source} imports {self.target}"


def package_imports(rel: str, source: str) -> list[Import]:
    """Every import of another ci_tools package by `rel` (at module level or inside a function)."""
    module = _module_name(rel)
    src = _package(module)
    out = []
    for node in ast.walk(ast.parse(source, filename=rel)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(node, module, rel.endswith("__init__.py"))
            # `from ci_tools import gitio` names the package in the alias (`__version__` names none)
            names = ([f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in MODULES]
                     if base == "ci_tools" else [base])
        for name in names:
            target = _package(name)
            if src is not None and target is not None and target != src:
                out.append(Import(rel, node.lineno, src, target))
    return out


def _all_package_imports() -> list[Import]:
    return [imp for rel in sorted(MODULES.values()) for imp in package_imports(rel, (PKG / rel).read_text(encoding="utf-8"))]


def against_the_stack(imports: list[Import], floor_of: dict[str, int]) -> list[str]:
    """The imports that run sideways or up the stack, and the packages on no floor."""
    bad = []
    for imp in imports:
        for pkg in (imp.source, imp.target):
            if pkg not in floor_of:
                bad.append(f"ci_tools/{imp.rel}:{imp.line}: package {pkg} is on no floor: add it to FLOORS in "
                           "tests/test_layers.py and to the table in docs/architecture.md")
        if imp.source in floor_of and imp.target in floor_of and floor_of[imp.target] >= floor_of[imp.source]:
            where = "its own floor" if floor_of[imp.target] == floor_of[imp.source] else "a higher floor"
            bad.append(f"{imp} (floor {floor_of[imp.source]} imports {where}, {floor_of[imp.target]})")
    return sorted(set(bad))


def package_cycles(imports: list[Import]) -> list[str]:
    """Each set of packages that import each other (a strongly connected component of the package
    graph), with the imports that close it."""
    graph: dict[str, set[str]] = {}
    for imp in imports:
        graph.setdefault(imp.source, set()).add(imp.target)
        graph.setdefault(imp.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(v: str) -> None:          # Tarjan's algorithm; a handful of packages, recursion is fine
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    first: dict[tuple[str, str], Import] = {}
    for imp in sorted(imports, key=lambda i: (i.rel, i.line)):
        first.setdefault((imp.source, imp.target), imp)
    out = []
    for component in sorted(components):
        loops = set()
        for (u, v) in sorted(first):
            if u in component and v in component:
                path = _shortest_path(graph, v, u, set(component))
                loop = [u, *path[:-1]]                 # u -> v -> ... -> (back to u)
                turn = loop.index(min(loop))           # one spelling per loop, whichever edge found it
                loops.add(tuple(loop[turn:] + loop[:turn]))
        lines = []
        for loop in sorted(loops, key=lambda lp: (len(lp), lp)):
            hops = list(zip(loop, loop[1:] + loop[:1]))
            lines.append(f"    {' -> '.join([*loop, loop[0]])}: " + ", ".join(
                f"ci_tools/{first[h].rel}:{first[h].line}" for h in hops))
        out.append(f"packages {', '.join(component)} import each other; the loops:\n" + "\n".join(lines))
    return out


def _shortest_path(graph: dict[str, set[str]], start: str, goal: str, allowed: set[str]) -> list[str]:
    """The packages from `start` to `goal` (both included) by the fewest imports, within `allowed`."""
    paths = {start: [start]}
    queue = [start]
    for v in queue:
        if v == goal:
            return paths[v]
        for w in sorted(graph[v] & allowed):
            if w not in paths:
                paths[w] = paths[v] + [w]
                queue.append(w)
    raise AssertionError(f"{goal} is not reachable from {start}")   # cannot happen inside a component


def test_the_packages_form_a_stack():
    imports = _all_package_imports()
    bad = against_the_stack(imports, FLOOR_OF)
    cycles = package_cycles(imports)
    assert not bad and not cycles, (
        "the packages of ci_tools/ are floors (FLOORS here, the table in docs/architecture.md); a module "
        "imports only packages of lower floors:\n" + "\n".join(f"  {b}" for b in bad)
        + ("\n" + "\n".join(f"  {c}" for c in cycles) if cycles else "")
        + "\npass what the lower floor needs in from the higher floor's flow or the command, or move the "
        "knowledge down; see docs/architecture.md, 'The package stack'")


def test_every_package_is_on_a_floor():
    packages = {_package(name) for name in MODULES} - {None}
    assert packages == set(FLOOR_OF), (f"on no floor: {sorted(packages - set(FLOOR_OF))}; "
                                       f"on a floor but gone: {sorted(set(FLOOR_OF) - packages)}")


def _doc_floors(text: str) -> dict[str, int]:
    if "## The package stack" not in text:
        return {}
    section = text.split("## The package stack", 1)[1].split("\n## ", 1)[0]
    floors = {}
    for row in section.splitlines():
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[0].isdigit():
            for name in re.findall(r"`([^`]+)`", cells[1]):
                floors[name.strip("/").removesuffix(".py")] = int(cells[0])
    return floors


def test_the_architecture_doc_shows_these_floors():
    assert _doc_floors(DOC.read_text(encoding="utf-8")) == FLOOR_OF, (
        "docs/architecture.md's table of floors and FLOORS in tests/test_layers.py differ: make them one")


STACK = {"a": 0, "b": 1, "c": 2}
STACK_CASES = [
    ("c/x.py", "from ci_tools.a import y\nfrom ci_tools import __version__\n", []),
    ("a/x.py", "def f():\n    from ci_tools.c.z import y\n", ["ci_tools/a/x.py:2: a imports c (floor 0 imports a higher floor, 2)"]),
    ("b/x.py", "from ..c import y\n", ["ci_tools/b/x.py:1: b imports c (floor 1 imports a higher floor, 2)"]),
    ("b/x.py", "import ci_tools.b.y\nfrom . import z\n", []),
    ("b/x.py", "from ci_tools.d import y\n", ["ci_tools/b/x.py:1: package d is on no floor: add it to FLOORS in "
                                            "tests/test_layers.py and to the table in docs/architecture.md"]),
]


@pytest.mark.parametrize("rel,source,expected", STACK_CASES)
def test_the_stack_check_names_each_import(rel, source, expected):
    assert against_the_stack(package_imports(rel, source), STACK) == expected


def test_results_may_not_import_runner():
    """A results module that imports the runner (as results once did for the telemetry parser) fails the
    stack with the real floors, and so does the runner importing results."""
    planted = package_imports("results/process.py", "def f():\n    from ci_tools.runner import telemetry\n")
    assert against_the_stack(planted, FLOOR_OF) == [
        "ci_tools/results/process.py:2: results imports runner (floor 7 imports its own floor, 7)"]
    planted = package_imports("runner/seal.py", "from ci_tools.results.custody import judge\n")
    assert against_the_stack(planted, FLOOR_OF) == [
        "ci_tools/runner/seal.py:1: runner imports results (floor 7 imports its own floor, 7)"]


def test_the_cycle_check_names_the_loop():
    imports = package_imports("a/x.py", "from ci_tools.b import y\n") + package_imports(
        "b/x.py", "import os\n\ndef f():\n    from ci_tools.a.z import w\n") + package_imports(
        "c/x.py", "from ci_tools.a import y\n")
    assert package_cycles(imports) == ["packages a, b import each other; the loops:\n"
                                       "    a -> b -> a: ci_tools/a/x.py:1, ci_tools/b/x.py:4"]
