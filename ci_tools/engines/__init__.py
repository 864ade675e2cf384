"""Engine and router plug-ins: how one serving engine is started, probed and versioned.

One module per engine (`sglang`, `vllm`, `trtllm`, `atom`) and one table of routers (`routers`). Each engine
module exposes the same small surface, all pure:

  NAME                     the recipe's `engine:` value
  LAUNCHER                 the words before the engine's own options (`python3 -m sglang.launch_server`)
  TOPOLOGY_ARGS            option names the runner derives from the point (tp/ep/dp), refused in `args`
  server(spec) -> Command  the server command for one resolved point
  topology_problems(spec)  why this engine cannot express the point's tp/ep/dp-attn (empty: it can)
  version_problems(versions)  why a recipe's `engine-versions` cannot be served (empty: it can)
  READY_PATHS              readiness probes, in order
  worker(wspec) -> Command a prefill/decode/aggregated worker of a multi-node point (Dynamo or router-fronted)
  RANK_WRAPPER             bash that appends a multi-node worker's node rank ($SLURM_NODEID) to its argv
  VERSION_ARGV             a command printing the installed engine version where the engine runs (the
                           runner runs it before the engine starts: `installed_version_problems` judges it)
  LABEL                    the engine's name in messages

The argv is split in two (`Command.launcher` + `Command.args`) so the tests can hand exactly the part
the engine's own argument parser sees to that parser (tests/engines/).

Optional, where an engine needs them: `served_name(spec)` (the model name its server answers to),
`synthetic_acceptance(length, versions)` (env, args, problems fixing a throughput run's acceptance
length), `data_parallel_ranks(spec)` (engines behind one URL, for a router that addresses them),
`offload(...)`, `NO_WORKERS` (why it has no multi-node worker).

Adding an engine: a module like `vllm.py`, registered in ENGINES below, and a parser in
tests/engines/parser_host.py (from its wheel, or from its source pinned in tests/engines/sources.json).

May import: the standard library, `ci_tools.errors` and `ci_tools.resources` (argkinds.py reads the
parser tables, package data, at import); nothing here runs a process or reads a file of the repository.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Mapping

from ci_tools.errors import InputError


@dataclass(frozen=True)
class ServeSpec:
    """What every engine needs to start one single-node point (plain data, no recipe objects)."""

    model_path: str
    served_model: str
    host: str
    port: int
    tp: int
    ep: int
    dp_attn: bool
    args: Mapping[str, Any] = field(default_factory=dict)   # the recipe's merged engine args
    versions: tuple[str, ...] = ()                          # released CLIs the image must satisfy
    pp: int = 1                                             # pipeline stages (GPUs = tp x pp x pcp)
    dcp: int = 1                                            # decode context parallel (inside tp)
    pcp: int = 1                                            # prefill context parallel
    files_dir: str = ""                                     # where the runner writes files the command names
    options: Mapping[str, Any] = field(default_factory=dict)  # engine options that only a file can carry


@dataclass(frozen=True)
class WorkerSpec:
    """One worker of a multi-node point: a prefill, decode or aggregated server behind a frontend."""

    serve: ServeSpec
    role: str                 # prefill | decode | aggregated
    transfer: str = ""        # the KV transfer backend between prefill and decode (the master's kv-p2p-transfer)
    dynamo: bool = False      # a Dynamo worker (python3 -m dynamo.<engine>) registering with dynamo.frontend
    bootstrap_port: int = 0   # prefill: where decode workers fetch KV from (SGLang)
    nnodes: int = 1           # nodes this one worker spans
    dist_addr: str = ""       # host:port of its first node, where its ranks meet (nnodes > 1)
    name: str = "worker"      # the worker's name (file names in the job directory)
    router_fronted: bool = False  # behind the SGLang router (which sends the client's warmup through)


@dataclass(frozen=True)
class Command:
    launcher: tuple[str, ...]
    args: tuple[str, ...]
    parser: str               # which parser checks `args` (an engine or router name)
    files: tuple[tuple[str, str], ...] = ()   # (path, text) the runner writes before starting it

    @property
    def argv(self) -> list[str]:
        return [*self.launcher, *self.args]


def render_args(args: Mapping[str, Any]) -> list[str]:
    """`{"trust-remote-code": True, "tp": 4}` -> `["--trust-remote-code", "--tp", "4"]`.

    `true` is a bare flag; `false`/`null` drop the option; a list repeats the values after one flag.
    """
    out: list[str] = []
    for name, value in args.items():
        if value is None or value is False:
            continue
        out.append(f"--{name}")
        if value is True:
            continue
        if isinstance(value, (list, tuple)):
            out.extend(str(v) for v in value)
        else:
            out.append(str(value))
    return out


def parallel_args(spec: ServeSpec, pp: str, dcp: str, pcp: str) -> list[str]:
    """Pipeline and context parallel sizes above 1, in the engine's flag names."""
    return [a for flag, size in ((pp, spec.pp), (dcp, spec.dcp), (pcp, spec.pcp)) if size > 1
            for a in (flag, str(size))]


# A published version as PEP 440 writes it, without epoch or local part: a release number with an optional
# pre-release (1.3.0rc24), post-release (0.5.8.post1) and dev-release (1.3.0.dev20260718) suffix.
VERSION_PATTERN = r"^[0-9]+(\.[0-9]+)*((a|b|rc)[0-9]+)?(\.post[0-9]+)?(\.dev[0-9]+)?$"
_VERSION = re.compile(VERSION_PATTERN)
_PRE_RANK = {"a": 0, "b": 1, "rc": 2}


def is_version(version: str) -> bool:
    return bool(_VERSION.match(str(version)))


def version_key(version: str) -> tuple:
    """A sort key in PEP 440's order: 1.3.0.dev1 < 1.3.0rc1 < 1.3.0 < 1.3.0.post1 < 1.3.1.

    Something that is not a version (a commit, a custom tag) sorts before every version, so a
    comparison like `version_key(v) >= (0, 5, 22)` is False for it."""
    m = re.match(r"^([0-9]+(?:\.[0-9]+)*)(?:(a|b|rc)([0-9]+))?(?:\.post([0-9]+))?(?:\.dev([0-9]+))?$", str(version))
    if not m:
        return (-1,)
    release = tuple(int(p) for p in m.group(1).split("."))
    release += (0,) * (4 - len(release)) if len(release) < 4 else ()
    pre = (_PRE_RANK[m.group(2)], int(m.group(3))) if m.group(2) else (3, 0)   # a final release after its pre-releases
    post = int(m.group(4)) if m.group(4) is not None else -1
    dev = int(m.group(5)) if m.group(5) is not None else 1 << 62               # x.devN before x
    if m.group(5) is not None and not m.group(2) and m.group(4) is None:
        pre = (-1, 0)                                                           # 1.3.0.dev1 before 1.3.0a1
    return (*release, *pre, post, dev)


def release_number_problems(versions: tuple[str, ...]) -> list[str]:
    """`engine-versions` is optional (without it a builder uses the oldest spelling it knows); when
    given, each entry must be a published version."""
    return [f"engine-versions entry {v!r} is not a published version (e.g. \"0.5.22\", \"1.3.0rc24\", "
            "\"0.5.8.post1\")" for v in versions if not is_version(str(v))]


def _registry() -> dict[str, ModuleType]:
    from ci_tools.engines import atom, sglang, trtllm, vllm

    return {m.NAME: m for m in (sglang, vllm, trtllm, atom)}


ENGINE_NAMES = ("sglang", "vllm", "trtllm", "atom")


# What InferenceX's masters run that ci-tools refuses, with why and what to do instead: `config validate` and
# `plan` say it for a recipe naming one (the recipe schemas' `engine` and `frontend.kind` reject the name).
UNSERVED_ENGINES: dict[str, tuple[str, str]] = {
    "tilert": ("TileRT is not published at the release InferenceX runs: its image ghcr.io/tile-ai/tilert:0.1.5 and "
               "router tilert-pd-router 0.1.5.post2 have no package on PyPI (which holds tilert 0.1.1 and 0.1.3), so "
               "neither command can be checked by its own code before GPUs are booked",
               "serve the model with an engine ci-tools has a plug-in for (sglang, vllm, trtllm, atom)"),
}
UNSERVED_FRONTENDS: dict[str, tuple[str, str]] = {
    "llm-d": ("llm-d's router (llm-d-router 0.9.0: the endpoint picker and P/D sidecar, Go binaries taken from "
              "ghcr.io/llm-d images, behind an Envoy proxy) has no published package and no parser ci-tools can "
              "check its commands with",
              "run the vLLM prefill/decode workers under a Dynamo frontend (frontend kind: dynamo)"),
    "atomesh": ("ATOM's prefill/decode workers run behind atomesh, the Rust router ATOM's images carry at "
                "/usr/local/bin/atomesh: no published package holds it and no parser of its command can be had",
                "serve the ATOM entry single-node (engine: atom), which ci-tools runs and checks"),
}


def engine(name: str) -> ModuleType | None:
    """The plug-in for a recipe's `engine:` value, or None when ci-tools has none."""
    return _registry().get(name)


def require(name: str, where: str) -> ModuleType:
    """The plug-in for a recipe's `engine:` value; InputError naming WHERE (the recipe) when ci-tools has
    none. For code past the check that refuses such a recipe, and for callers that skip that check."""
    plugin = _registry().get(name)
    if plugin is None:
        raise InputError(f"{where}: engine {name!r} has no ci-tools plug-in (known: {', '.join(ENGINE_NAMES)})")
    return plugin


_VERSION_LINE = re.compile(r"v?(\d+(?:\.\d+)+)([-+.a-zA-Z0-9]*)")


def printed_version(output: str) -> str | None:
    """The version a plug-in's VERSION_ARGV printed: its last line that is one version and nothing else
    (engines log before they print it: vLLM's `--version` can print INFO lines first)."""
    for line in reversed(output.splitlines()):
        m = _VERSION_LINE.fullmatch(line.strip())
        if m:
            return m.group(1) + m.group(2)
    return None


def release_of(version: str) -> tuple[int, ...]:
    """'0.26.0' -> (0, 26, 0); '0.5.22rc0' and '0.5.22.dev3+g1a2b' -> (0, 5, 22): the release a build is of."""
    m = re.match(r"v?(\d+(?:\.\d+)*)", str(version))
    return tuple(int(p) for p in m.group(1).split(".")) if m else ()


def installed_version_problems(label: str, installed: str | None, declared: tuple[str, ...], where: str,
                               output: str = "") -> list[str]:
    """Why the engine found where the job runs cannot serve a recipe declaring `declared` (empty: it can).

    The installed release must lie between the oldest and the newest declared one (a nightly's recipe
    declares the releases before and after it; one declared release must be the installed one; a
    pre-release or local build counts as the release it is of). A recipe that declares none is not
    checked: the version is only recorded, and when none was printed, the job goes on without one."""
    if not declared:
        return []
    shown = ", ".join(declared)
    if installed is None:
        said = " ".join(output.split())[-200:] or "nothing"
        return [f"engine: {where} printed no {label} version (it said: {said}); the recipe declares engine-versions "
                f"[{shown}], so the job is not started: install {label} there, or fix the version command"]
    releases = [release_of(v) for v in (installed, *declared)]
    width = max(len(r) for r in releases)
    have, *known = [r + (0,) * (width - len(r)) for r in releases]   # 0.26 is 0.26.0
    if min(known) <= have <= max(known):
        return []
    span = shown if len(declared) == 1 else f"{min(declared, key=version_key)} .. {max(declared, key=version_key)}"
    return [f"engine: {where} has {label} {installed}, but the recipe declares engine-versions [{shown}] "
            f"(it must be {span}); install the engine the recipe was checked with there (for the process "
            f"backend, its engine lock: docs/runner-operator.md, 'Engine locks'), or declare this release in the "
            f"recipe after checking its command line with it"]
