"""Check command lines with the tool's own argument parser, built from a pinned wheel or pinned source files.

    from tests.engines.harness import parse_many
    results = parse_many("sglang", "0.5.22", [argv1, argv2])   # one process per (parser, version)
    assert all(r.ok for r in results), [r.error for r in results]

The wheels are those pinned in tests/engines/wheels.txt (SGLang, routers) and wheels-torch.txt (vLLM,
Dynamo: they need a CPU torch under them), installed by `python3 dev.py test` into .venv-engines and
.venv-engines-torch (or $CI_TOOLS_ENGINES_VENV / $CI_TOOLS_TORCH_ENGINES_VENV). ATOM and TensorRT-LLM have
no wheel to build from: their parsers are built from their own source files at pinned commits
(tests/engines/sources.json, laid out by tests/engines/sources.py into $CI_TOOLS_ENGINE_SOURCES or the
engines venv's `sources/`); TensorRT-LLM's runs in trtllm_host.py. A missing wheel or source release fails
the test with the fix, never skips.
`argv` is what the parser sees: the options after the launcher (`Command.args`), not the launcher.
"""

from __future__ import annotations

import atexit
import dataclasses
import hashlib
import json
import os
import select
import shlex
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

REPO = Path(__file__).resolve().parents[2]
HOST = Path(__file__).with_name("parser_host.py")


def end_host(proc: subprocess.Popen) -> None:
    """A host process answers on stdin until it closes: close it, wait, kill one that does not end."""
    if proc.poll() is None:
        proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


@dataclass(frozen=True)
class ParserVenv:
    variable: str        # set by dev.py (or to a shared venv)
    default: str         # the folder dev.py builds when the variable is unset
    wheels: str          # the pinned wheels file it is built from (tests/engines/)


VENVS = {"engines": ParserVenv("CI_TOOLS_ENGINES_VENV", ".venv-engines", "wheels.txt"),
         "torch": ParserVenv("CI_TOOLS_TORCH_ENGINES_VENV", ".venv-engines-torch", "wheels-torch.txt")}
# parser name -> (the distribution whose wheel provides it, the venv it runs in)
DISTRIBUTIONS = {"sglang": ("sglang", "engines"), "sglang-router": ("sglang-router", "engines"),
                 "smg": ("smg", "engines"), "vllm": ("vllm", "torch"), "vllm-router": ("vllm-router", "engines")}
# parser name -> (its release set in sources.json, the venv it runs in): built from pinned source files
SOURCES = {"atom": ("atom", "engines"), "trtllm": ("tensorrt-llm", "engines")}
# the host module of a parser that needs more than parser_host.py (its own way to run the tool's code)
HOSTS = {"trtllm": Path(__file__).with_name("trtllm_host.py")}
# environment a parser's process needs (vLLM picks its platform at import: no GPU here, the CPU one)
PARSER_ENV = {"vllm": {"VLLM_TARGET_DEVICE": "cpu"}}
WHEELS_TXT = Path(__file__).with_name(VENVS["engines"].wheels)


@dataclass(frozen=True)
class Parsed:
    ok: bool
    error: str
    deprecated: tuple[str, ...]


def venv(kind: str = "engines") -> Path:
    v = VENVS[kind]
    return Path(os.environ.get(v.variable, REPO / v.default))


def pinned(kind: str = "engines") -> dict[str, tuple[str, ...]]:
    """distribution -> pinned versions, from the venv's wheels file (the file dev.py installs from)."""
    out: dict[str, list[str]] = {}
    for line in Path(__file__).with_name(VENVS[kind].wheels).read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("deps ") and "==" in line:
            dist, version = line.split("==", 1)
            out.setdefault(dist, []).append(version)
    return {k: tuple(v) for k, v in out.items()}


def dist_dir(dist: str, version: str, kind: str = "engines") -> Path:
    """The installed wheel folder of one pinned distribution (fails the test with the fix when missing)."""
    wheels = VENVS[kind].wheels
    if version not in pinned(kind).get(dist, ()):
        pytest.fail(f"{dist} {version} is not pinned in tests/engines/{wheels}; add `{dist}=={version}` "
                    "there and run `python3 dev.py test` to install it")
    path = venv(kind) / "wheels" / f"{dist}-{version}"
    if not (path / ".complete").exists():
        pytest.fail(f"the {dist} {version} wheel is not installed in {path}: run `python3 dev.py test` "
                    f"(it builds {venv(kind)} from tests/engines/{wheels})")
    return path


def sources_root() -> Path:
    """Where tests/engines/sources.py laid out the pinned source releases."""
    return Path(os.environ.get("CI_TOOLS_ENGINE_SOURCES") or venv("engines") / "sources")


def pinned_sources() -> dict[str, tuple[str, ...]]:
    """release set -> pinned versions, from tests/engines/sources.json."""
    from tests.engines.sources import load

    return {name: tuple(src["releases"]) for name, src in load().items()}


def source_dir(name: str, version: str) -> Path:
    """The laid-out source files of one pinned release (fails the test with the fix when missing)."""
    if version not in pinned_sources().get(name, ()):
        pytest.fail(f"{name} {version} is not pinned in tests/engines/sources.json; pin it with "
                    "`python3 tests/engines/sources.py pin ...` (see its docstring)")
    path = sources_root() / f"{name}-{version}"
    if not (path / ".complete").exists():
        pytest.fail(f"the {name} {version} sources are not laid out in {path}: run `python3 dev.py test` or "
                    "`python3 tests/engines/sources.py fetch` (with --git OWNER/NAME=CLONE where GitHub is out of "
                    "reach), or point CI_TOOLS_ENGINE_SOURCES at a folder that has them")
    return path


def wheel_dir(parser: str, version: str) -> Path:
    if parser in SOURCES:
        return source_dir(SOURCES[parser][0], version)
    dist, kind = DISTRIBUTIONS[parser]
    return dist_dir(dist, version, kind)


def parser_venv(parser: str) -> str:
    return (SOURCES.get(parser) or DISTRIBUTIONS[parser])[1]


def host_env(paths: list[Path], extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a parser process: only the wheel folders on PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["PYTHONPATH"] = os.pathsep.join(str(p) for p in paths)
    env.update(extra or {})
    return env


def python(kind: str) -> Path:
    py = venv(kind) / "bin" / "python"
    if not py.exists():
        pytest.fail(f"{py} is missing: run `python3 dev.py test` (it builds {venv(kind)})")
    return py


class _Host:
    """One parser process per (parser, version), kept for the test session (building one takes seconds)."""

    def __init__(self, parser: str, version: str):
        env = host_env([wheel_dir(parser, version)], PARSER_ENV.get(parser))
        self.proc = subprocess.Popen([str(python(parser_venv(parser))), str(HOSTS.get(parser, HOST)), parser],
                                     stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        first = self.proc.stdout.readline()
        if not first:
            err = self.proc.stderr.read()
            pytest.fail(f"could not build the {parser} {version} parser from its wheel:\n{err[-3000:]}")
        self.info = json.loads(first)
        # a wheel reports its version; a source release is the folder its pinned files were checked into
        assert self.info["version"] in (version, None), f"{parser}: the wheel folder holds {self.info['version']}"

    def ask(self, argvs: list[list[str]], files: dict[str, str] | None = None) -> list[dict]:
        self.proc.stdin.write(json.dumps({"argvs": argvs, "files": files or {}}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            pytest.fail(f"the parser process died:\n{self.proc.stderr.read()[-3000:]}")
        return json.loads(line)["results"]

    def close(self) -> None:
        end_host(self.proc)


_HOSTS: dict[tuple[str, str], _Host] = {}


@atexit.register
def _close_all() -> None:
    for host in _HOSTS.values():
        host.close()


def _host(parser: str, version: str) -> _Host:
    key = (parser, version)
    if key not in _HOSTS:
        _HOSTS[key] = _Host(parser, version)
    return _HOSTS[key]


def parse_many(parser: str, version: str, argvs: list[list[str]], files: dict[str, str] | None = None) -> list[Parsed]:
    """Each argv through the parser; FILES (path -> text) are what the commands name and the tool reads
    (TensorRT-LLM's options file), laid out for the parser where the path stands."""
    results = _host(parser, version).ask([list(a) for a in argvs], files)
    return [Parsed(r["ok"], r["error"], tuple(r["deprecated"])) for r in results]


def parse(parser: str, version: str, argv: list[str], files: dict[str, str] | None = None) -> Parsed:
    return parse_many(parser, version, [argv], files)[0]


def checked_versions(parser: str, declared: tuple[str, ...]) -> tuple[str, ...]:
    """The releases a command is checked at: those declared that ci-tools has a parser of, else every pinned
    one (as config validate checks option names, ci_tools/config/engineargs.py)."""
    pinned_ = pinned_sources()[SOURCES[parser][0]] if parser in SOURCES else \
        pinned(DISTRIBUTIONS[parser][1])[DISTRIBUTIONS[parser][0]]
    return tuple(v for v in declared if v in pinned_) or pinned_


def options(parser: str, version: str) -> frozenset[str]:
    """Every option string the parser defines."""
    return frozenset(_host(parser, version).info["options"])


def abbreviations(parser: str, version: str) -> bool:
    """Whether the parser takes a unique prefix of an option (argparse's allow_abbrev)."""
    return bool(_host(parser, version).info.get("abbrev", True))


def kinds(parser: str, version: str) -> dict[str, str]:
    """'--name' -> "int" or "float": the options taking one number, as the parser converts it."""
    return dict(_host(parser, version).info["kinds"])


def failures(parser: str, version: str, named: dict[str, list[str]]) -> list[str]:
    """`name: error` for each named argv the parser rejects (empty when all parse)."""
    names = list(named)
    results = parse_many(parser, version, [named[n] for n in names])
    return [f"{n}: {parser} {version} rejects `{shlex.join(named[n])}`: {r.error}"
            for n, r in zip(names, results) if not r.ok]


# ---- Dynamo: the workers' and frontend's own parsing, from one release's wheels (dynamo_host.py) -----

DYNAMO_HOST = Path(__file__).with_name("dynamo_host.py")
FORK_HOST = Path(__file__).with_name("fork_host.py")
# the least command line each Dynamo worker takes (a model): what each row of the compatibility table parses,
# and what arg_kinds.py parses when it reads a release's options from the same pair (one run of the session)
WORKER_ARGV = {"sglang": ["--model-path", "/models/m"], "vllm": ["--model", "/models/m"]}


@dataclass(frozen=True)
class DynamoRun:
    built: bool          # False: Dynamo's module did not import (or its parser could not be built)
    error: str           # then: the last line of its traceback
    results: list[dict]
    info: dict | None = None   # the host's first line: version, Dynamo's own options


def dynamo_paths(dynamo: str, engine: tuple[str, str] | None) -> tuple[list[Path], list[Path]]:
    """(the release's and its engine's wheel folders, ENGINE_ENV's pins the engine runs on): PYTHONPATH in order."""
    paths = [dist_dir("ai-dynamo", dynamo, "torch"), dist_dir("ai-dynamo-runtime", dynamo, "torch")]
    if engine:
        paths.append(dist_dir(*engine, "torch"))
    return paths, engine_pins(*engine) if engine else []


def dynamo_process(parser: str, paths: list[Path], pins: list[Path], argvs: list[list[str]]) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of dynamo_host.py PARSER in a process of its own."""
    res = subprocess.run([str(python("torch")), str(DYNAMO_HOST), parser], env=host_env([*paths, *pins],
                                                                                       PARSER_ENV["vllm"]),
                         text=True, input=json.dumps({"argvs": argvs}) + "\n", capture_output=True, timeout=900)
    return res.returncode, res.stdout, res.stderr


# Where this test session keeps the Dynamo runs it has made (set by tests/engines/conftest.py for the session,
# shared by its pytest-xdist workers; None outside pytest): a run asked again with the same inputs, the
# compatibility table's row and the parser table's read of the same release, is read back, not run again.
# Never across sessions: each session checks the wheels itself.
SESSION_RUNS: Path | None = None
_HOST_FILES = (Path(__file__).with_name("dynamo_host.py"), Path(__file__).with_name("parser_host.py"),
               Path(__file__).with_name("fork_host.py"))


def _memo_file(parser: str, paths: list[Path], pins: list[Path], argvs: list[list[str]]) -> Path | None:
    """The session's file for one run's inputs: the wheel folders (their venv's name carries its lock's hash),
    the parser, the argvs and the hosts' own code."""
    if SESSION_RUNS is None:
        return None
    key = hashlib.sha256(json.dumps([parser, [str(p) for p in paths], [str(p) for p in pins], argvs,
                                     [hashlib.sha256(f.read_bytes()).hexdigest() for f in _HOST_FILES]]).encode())
    return SESSION_RUNS / f"{key.hexdigest()}.json"


class _ForkHost:
    """fork_host.py: torch imported once, a fresh fork per Dynamo run (each with its own wheel folders and
    ENGINE_ENV's pins on PYTHONPATH: torch imports none of them, and fork_host.py refuses a folder that would
    shadow what it imported, so one host serves every set of pins)."""

    def __init__(self):
        self.dir = tempfile.TemporaryDirectory(prefix="dynamo-forks-")
        with open(Path(self.dir.name) / "host.err", "w") as err:
            self.proc = subprocess.Popen([str(python("torch")), str(FORK_HOST)], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=err, text=True,
                                         env=host_env([], PARSER_ENV["vllm"]))
        if self._line() != "ready\n":
            pytest.fail(f"the Dynamo fork host did not start:\n{self._err()}")
        self.runs = 0

    def _line(self) -> str:
        ready, _, _ = select.select([self.proc.stdout], [], [], 900)
        if not ready:
            self.proc.kill()
            raise subprocess.TimeoutExpired(str(FORK_HOST), 900)
        return self.proc.stdout.readline()

    def _err(self) -> str:
        return (Path(self.dir.name) / "host.err").read_text()[-3000:]

    def run(self, parser: str, paths: list[Path], argvs: list[list[str]]) -> tuple[int, str, str]:
        """dynamo_host.py PARSER with PATHS (in order) on PYTHONPATH."""
        self.runs += 1
        files = {k: Path(self.dir.name) / f"{self.runs}.{k}" for k in ("stdin", "stdout", "stderr")}
        files["stdin"].write_text(json.dumps({"argvs": argvs}) + "\n")
        files["stdout"].touch()
        files["stderr"].touch()
        self.proc.stdin.write(json.dumps({"paths": [str(p) for p in paths], "argv": [str(DYNAMO_HOST), parser],
                                          **{k: str(f) for k, f in files.items()}}) + "\n")
        self.proc.stdin.flush()
        line = self._line()
        if not line:
            pytest.fail(f"the Dynamo fork host died:\n{self._err()}")
        out, err = files["stdout"].read_text(), files["stderr"].read_text()
        for f in files.values():
            f.unlink()
        return json.loads(line)["rc"], out, err

    def close(self) -> None:
        end_host(self.proc)
        self.dir.cleanup()


_FORK_HOSTS: list[_ForkHost] = []       # the session's one, once started


@atexit.register
def _close_fork_hosts() -> None:
    for host in _FORK_HOSTS:
        host.close()


def fork_host() -> _ForkHost:
    """The session's fork_host.py (one per pytest process)."""
    host = _FORK_HOSTS[-1] if _FORK_HOSTS else None
    if host is None or host.proc.poll() is not None:        # none yet, or it died (its failing test said why)
        if host is not None:
            host.close()
            _FORK_HOSTS.clear()
        host = _ForkHost()
        _FORK_HOSTS.append(host)
    return host


def dynamo_forked(parser: str, paths: list[Path], pins: list[Path], argvs: list[list[str]]) -> tuple[int, str, str]:
    """What dynamo_process answers, from a fork of the session's fork_host.py."""
    return fork_host().run(parser, [*paths, *pins], argvs)


def dynamo_run(dynamo: str, parser: str, engine: tuple[str, str] | None, argvs: list[list[str]],
               start: Callable[..., tuple[int, str, str]] | None = None) -> DynamoRun:
    """Run Dynamo DYNAMO's PARSER (`dynamo.sglang`, `dynamo.vllm`, `dynamo.frontend`) on ENGINE's
    (distribution, version) wheel, for each argv. START runs dynamo_host.py: by default a worker on an engine
    (which imports torch) is forked (dynamo_forked), the frontend and the TensorRT-LLM worker (which do not,
    and take a fraction of a second) get a process of their own (dynamo_process)."""
    paths, pins = dynamo_paths(dynamo, engine)
    memo = _memo_file(parser, paths, pins, argvs) if start is None else None
    if memo is not None and memo.exists():
        return DynamoRun(**json.loads(memo.read_text()))
    run = _dynamo_run(dynamo, *(start or (dynamo_forked if engine else dynamo_process))(parser, paths, pins, argvs))
    if memo is not None:
        memo.parent.mkdir(parents=True, exist_ok=True)
        partial = memo.with_name(f"{memo.name}.{os.getpid()}")
        partial.write_text(json.dumps(dataclasses.asdict(run)))
        partial.replace(memo)         # whole or not at all: the other worker may read it at once
    return run


def _dynamo_run(dynamo: str, returncode: int, stdout: str, stderr: str) -> DynamoRun:
    """What a run of dynamo_host.py answered, from its exit status and output."""
    # Dynamo's Rust runtime may log to stdout: the protocol lines are the JSON ones
    lines = [line for line in stdout.splitlines() if line.startswith("{")]
    if returncode != 0 or len(lines) < 2:
        tail = stderr.strip().splitlines()
        return DynamoRun(False, tail[-1] if tail else f"exit {returncode}", [])
    info = json.loads(lines[0])
    assert info["version"] == dynamo, f"the ai-dynamo {dynamo} folder holds another release"
    return DynamoRun(True, "", json.loads(lines[1])["results"], info)


# Engine releases whose import clashes with the torch venv's transformers (a newer one registers a config name
# they register too): they run on the transformers their image carries (their `==` pin) and the hub client and
# tokenizers that transformers requires, each a wheel of wheels-torch.txt. SGLang 0.5.21 pins the same
# transformers but imports with the venv's, and with 5.12.1 here would need torchvision: it keeps the venv's.
ENGINE_ENV = {("sglang", v): (("transformers", "5.12.1"), ("huggingface-hub", "1.33.0"), ("tokenizers", "0.22.2"))
              for v in ("0.5.15.post1", "0.5.16", "0.5.17", "0.5.18")}


def engine_pins(dist: str, version: str) -> list[Path]:
    """The wheel folders an engine release runs on besides its own (ENGINE_ENV), ahead of the venv's."""
    return [dist_dir(name, v, "torch") for name, v in ENGINE_ENV.get((dist, version), ())]


def dynamo_parse(dynamo: str, parser: str, engine: tuple[str, str] | None, argvs: list[list[str]]) -> list[dict]:
    run = dynamo_run(dynamo, parser, engine, argvs)
    if not run.built:
        on = f" on {engine[0]} {engine[1]}" if engine else ""
        pytest.fail(f"could not build {parser} from ai-dynamo {dynamo}{on}: {run.error}")
    return run.results
