"""Which engine releases each Dynamo release's workers run on: one table, measured, and the rule over it.

A Dynamo worker (`python3 -m dynamo.sglang`, `dynamo.vllm`, `dynamo.trtllm`) imports the engine's Python
modules at start, so a Dynamo release runs only on the engine releases whose module layout it knows.
Dynamo 1.3.0.post1's SGLang worker imports `sglang.srt.server_args_config_parser`, which SGLang 0.5.21
moved into `sglang.srt.utils`: `python3 -m dynamo.sglang` exits with ModuleNotFoundError on every SGLang
from 0.5.21 on, although the recipe and its commands look fine.

Each row says, for one Dynamo release and one engine, the engine versions its worker was seen to import
with (`works`), those it was seen to fail with (`fails`, and why), and what the release's own extras pin.
tests/engines/test_dynamo_compat.py imports every row's worker from the real wheels and fails when a row
says otherwise. A pair not in `works` is refused by `config validate` (naming the versions that work);
a new release is served once it has a row here and its wheels in tests/engines/wheels-torch.txt.

Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from ci_tools.engines import version_key


@dataclass(frozen=True)
class WorkerCompat:
    dynamo: str                 # the published ai-dynamo release (PyPI)
    engine: str                 # the recipe's `engine:` value
    works: tuple[str, ...]      # engine releases the worker imports with (measured)
    fails: tuple[str, ...] = ()
    why: str = ""               # what fails for `fails`
    pins: str = ""              # what the release's `ai-dynamo[<engine>]` extra pins


DYNAMO_WORKERS = (
    WorkerCompat("1.3.0.post1", "sglang", works=(), fails=("0.5.21", "0.5.22", "0.5.23"),
                 why="ModuleNotFoundError: No module named 'sglang.srt.server_args_config_parser' (moved to "
                     "sglang.srt.utils in 0.5.21)", pins="sglang==0.5.14"),
    WorkerCompat("1.3.0.post1", "vllm", works=("0.33.0",), pins="vllm==0.23.0"),
    WorkerCompat("1.6.1", "sglang", works=("0.5.21", "0.5.22", "0.5.23"), pins="sglang==0.5.21"),
    WorkerCompat("1.6.1", "vllm", works=("0.33.0",), pins="vllm==0.31.0"),
)

# A master names a Dynamo release as its router version; PyPI published some only as a post release
# (there is no plain 1.3.0 wheel).
PUBLISHED = {"1.3.0": "1.3.0.post1"}


def published(version: str) -> str:
    """The ai-dynamo wheel a declared Dynamo version is (`1.3.0` -> `1.3.0.post1`)."""
    return PUBLISHED.get(str(version), str(version))


def row(dynamo: str, engine: str) -> WorkerCompat | None:
    want = published(dynamo)
    return next((r for r in DYNAMO_WORKERS if r.dynamo == want and r.engine == engine), None)


def dynamo_problems(dynamo: str, engine: str, versions: tuple[str, ...]) -> list[str]:
    """Why Dynamo DYNAMO's ENGINE worker cannot run on the recipe's engine-versions (empty: it can).

    A recipe without engine-versions is not judged (its image's engine version is unknown here)."""
    known = sorted({r.dynamo for r in DYNAMO_WORKERS if r.engine == engine}, key=version_key)
    r = row(dynamo, engine)
    if not versions:
        return []       # as the docstring says: without engine-versions there is no pair to judge
    if r is None:
        return [f"Dynamo {dynamo} with {engine} workers is not in ci_tools/engines/compat.py (known: "
                f"{', '.join(known) or 'none'}); declare a known release, or add a row there once its worker "
                "imports with the engine (tests/engines/test_dynamo_compat.py)"]
    bad = [v for v in versions if v not in r.works]
    if not bad:
        return []
    fix = [d for d in known if (x := row(d, engine)) is not None and all(v in x.works for v in versions)]
    fails = [v for v in bad if v in r.fails]
    reason = f"fails to import: {r.why}" if fails and r.why else "is not known to import"
    works = f"it runs on {engine} {', '.join(r.works)}" if r.works else f"it runs on none of the {engine} " \
                                                                         "releases checked"
    use = (f"declare Dynamo {' or '.join(fix)} (frontend version and master router version)" if fix else
           f"no Dynamo release in ci_tools/engines/compat.py runs on {engine} {', '.join(versions)}")
    return [f"Dynamo {dynamo}'s {engine} worker (ai-dynamo {r.dynamo}) on {engine} {', '.join(bad)} {reason}; "
            f"{works}: {use}, or an image with an {engine} release it runs on"]
