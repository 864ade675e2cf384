"""Which Dynamo releases a runner can run, and on which engine releases: measured tables and the rules over them.

A master declares the Dynamo frontend by release (its router version); InferenceX's name four kinds of them.
`release_problems` says whether one can be had as it is published:
- a PyPI release (`PYPI`): installed from its pinned wheels (`install:`, engines/install.py), which must name
  it; or already in the image, when the image is NVIDIA's Dynamo runtime image of that release;
- a custom tag (`v1.3.0-deepseek-v4-dev.1`): only as NVIDIA's runtime image of that name (`bundled`);
- a nightly dev build (`1.3.0.dev20260718`, NVIDIA's own index) and a git commit (built from source, Rust
  runtime included): refused, as nothing here can pin their wheels by hash or import their workers.

A Dynamo worker (`python3 -m dynamo.sglang`, `dynamo.vllm`, `dynamo.trtllm`) imports the engine's Python
modules at start, so a release runs only on the engine releases whose module layout it knows: Dynamo
1.3.0.post1's SGLang worker imports `sglang.srt.server_args_config_parser`, which SGLang 0.5.21 moved into
`sglang.srt.utils`, so `python3 -m dynamo.sglang` exits with ModuleNotFoundError on every SGLang from
0.5.21 on, although the recipe and its commands look fine. Each row of DYNAMO_WORKERS says, for one
Dynamo release and one engine, the engine versions its worker was seen to import with (`works`), those it
was seen to fail with (`fails`, and why). tests/engines/test_dynamo_compat.py imports every row's worker
from the real wheels and fails when a row says otherwise. A pair not in `works` is refused by `config
validate` and `plan` (naming the releases that work), except in NVIDIA's runtime image, which carries the
pair it was built with (EXTRA_PINS: what each release's extras pin).

Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ci_tools.engines import is_version, version_key


@dataclass(frozen=True)
class WorkerCompat:
    dynamo: str                 # the published ai-dynamo release (PyPI)
    engine: str                 # the recipe's `engine:` value
    works: tuple[str, ...]      # engine releases the worker imports with (measured)
    fails: tuple[str, ...] = ()
    why: str = ""               # what fails for `fails`


DYNAMO_WORKERS = (
    # the releases InferenceX's masters declare, on the engine releases their images carry
    WorkerCompat("0.8.0", "sglang", works=("0.5.8", "0.5.8.post1")),
    WorkerCompat("0.8.1", "sglang", works=("0.5.8", "0.5.8.post1")),
    WorkerCompat("0.9.1", "sglang", works=("0.5.8", "0.5.8.post1")),
    WorkerCompat("1.1.0", "sglang", works=("0.5.8.post1",)),
    WorkerCompat("1.2.1", "sglang", works=("0.5.16", "0.5.17")),
    WorkerCompat("1.3.0.post1", "sglang", works=("0.5.15.post1", "0.5.16", "0.5.17", "0.5.18"),
                 fails=("0.5.21", "0.5.22", "0.5.23"),
                 why="ModuleNotFoundError: No module named 'sglang.srt.server_args_config_parser' (moved to "
                     "sglang.srt.utils in 0.5.21)"),
    WorkerCompat("1.3.0.post1", "vllm", works=("0.25.1", "0.27.1", "0.33.0")),
    WorkerCompat("1.3.1", "sglang", works=("0.5.15.post1", "0.5.16", "0.5.17", "0.5.18")),
    WorkerCompat("1.3.1", "vllm", works=("0.25.1", "0.27.1")),
    # what the example repository declares
    WorkerCompat("1.6.1", "sglang", works=("0.5.18", "0.5.21", "0.5.22", "0.5.23")),
    WorkerCompat("1.6.1", "vllm", works=("0.25.1", "0.27.1", "0.33.0")),
)

# What each release's `ai-dynamo[<extra>]` pins (its wheel's METADATA, Requires-Dist): the engine release it
# was built and tested with, and the one NVIDIA's runtime image of that release carries.
EXTRA_PINS: dict[str, dict[str, str]] = {
    "0.8.0": {"sglang": "0.5.6.post2", "trtllm": "1.2.0rc6.post1", "vllm": "0.12.0"},
    "0.8.1": {"sglang": "0.5.6.post2", "trtllm": "1.2.0rc6.post1", "vllm": "0.12.0"},
    "0.8.1.post1": {"sglang": "0.5.6.post2", "trtllm": "1.2.0rc6.post2", "vllm": "0.12.0"},
    "0.8.1.post2": {"sglang": "0.5.6.post2", "trtllm": "1.2.0rc6.post2", "vllm": "0.12.0"},
    "0.8.1.post3": {"sglang": "0.5.6.post2", "trtllm": "1.2.0rc6.post3", "vllm": "0.12.0"},
    "0.9.1": {"sglang": "0.5.8", "trtllm": "1.3.0rc3", "vllm": "0.14.1"},
    "1.1.0": {"sglang": "0.5.10.post1", "trtllm": "1.3.0rc11", "vllm": "0.19.0"},
    "1.2.1": {"sglang": "0.5.11", "trtllm": "1.3.0rc14", "vllm": "0.20.1"},
    "1.3.0.post1": {"sglang": "0.5.14", "trtllm": "1.3.0rc19", "vllm": "0.23.0"},
    "1.3.1": {"sglang": "0.5.14", "trtllm": "1.3.0rc19", "vllm": "0.23.0"},
    "1.6.1": {"sglang": "0.5.21", "trtllm": "1.3.0rc29", "vllm": "0.31.0"},
}

# A master names a Dynamo release as its router version; PyPI published some only as a post release
# (there is no plain 1.3.0 wheel).
PUBLISHED = {"1.3.0": "1.3.0.post1"}
# Every ai-dynamo release on PyPI (with its ai-dynamo-runtime wheels), as the index listed them.
PYPI = ("0.1.0", "0.1.1", "0.1.1.post1", "0.2.0", "0.2.1", "0.3.0", "0.3.1", "0.3.2", "0.4.0", "0.4.0.post0", "0.4.1",
        "0.5.0", "0.5.1", "0.6.0", "0.6.1", "0.7.0", "0.7.0.post1", "0.7.1", "0.8.0", "0.8.1", "0.8.1.post1",
        "0.8.1.post2", "0.8.1.post3", "0.9.0", "0.9.1", "1.0.0", "1.0.1", "1.0.2", "1.1.0", "1.1.1", "1.2.0.post1",
        "1.2.1", "1.3.0.post1", "1.3.1", "1.4.0", "1.4.1", "1.4.2", "1.5.0", "1.5.1", "1.6.0", "1.6.1")
# NVIDIA's runtime images carry one Dynamo release with the engine it was built for:
# nvcr.io/nvidia/ai-dynamo/<engine>-runtime:<release>[-cuda13] (InferenceX also writes `nvcr.io#nvidia/...`)
RUNTIME_IMAGE = re.compile(r"^nvcr\.io[/#]nvidia/ai-dynamo/(sglang|vllm|tensorrtllm)-runtime:([^@]+?)(-cuda1[0-9])?(@|$)")
RUNTIME_ENGINE = {"sglang": "sglang", "vllm": "vllm", "tensorrtllm": "trtllm"}


def published(version: str) -> str:
    """The ai-dynamo wheel a declared Dynamo version is (`1.3.0` -> `1.3.0.post1`)."""
    return PUBLISHED.get(str(version), str(version))


def bundled(image: str) -> tuple[str, str] | None:
    """(Dynamo release, engine) an NVIDIA Dynamo runtime image carries, or None for any other image."""
    m = RUNTIME_IMAGE.match(str(image))
    return (m.group(2), RUNTIME_ENGINE[m.group(1)]) if m else None


def kind(version: str) -> str:
    """How a declared Dynamo release is published: pypi | dev | tag | commit | unpublished."""
    v = str(version)
    if re.fullmatch(r"[0-9a-f]{40}", v):
        return "commit"
    if published(v) in PYPI:
        return "pypi"
    if is_version(v) and ".dev" in v:
        return "dev"
    if v.startswith("v") or "-" in v:
        return "tag"
    return "unpublished"


# Why a kind that no runner can install and no test can check is refused, and what to declare instead.
REFUSED_KINDS = {
    "dev": ("is a nightly dev build, published only on NVIDIA's own package index, which ci-tools cannot reach to "
            "pin its wheels by hash or import its workers against the engine"),
    "commit": ("is a git commit of ai-dynamo/dynamo, installable only by building its Rust runtime from source "
               "(maturin and a Rust toolchain fetched on the GPU host at run time, which no hash pins) and never "
               "imported against the engine here"),
    "tag": ("is a custom tag, published only as NVIDIA's Dynamo runtime image of that name "
            "(nvcr.io/nvidia/ai-dynamo/<engine>-runtime:<tag>), which the entry's image is not"),
    "unpublished": "is no ai-dynamo release on PyPI, no dev build, tag or commit",
}


def release_problems(version: str, engine: str, image: str, install: list | None) -> list[str]:
    """Why the declared Dynamo release cannot be had as it is published (empty: it can).

    In NVIDIA's runtime image of that release, Dynamo comes with the image (its engine is the one it was built
    with); otherwise only a PyPI release can be had: installed from its pinned wheels (`install:`), which must
    name that release."""
    v = str(version)
    carried = bundled(image)
    if carried is not None and carried[0] in (v, v.removeprefix("v")):
        if carried[1] != engine:
            return [f"the image is NVIDIA's Dynamo {carried[0]} runtime for {carried[1]}, but the recipe's engine is "
                    f"{engine}"]
        return []
    k = kind(v)
    if k != "pypi":
        alternative = sorted((r for r in PYPI if version_key(r) <= version_key(v.removeprefix("v").split("-")[0])),
                             key=version_key)[-1:] if k in ("dev", "tag") else []
        fix = (f"declare a PyPI release (e.g. {alternative[0]}, the last before it) with its pinned wheels in "
               "`install:`" if alternative else "declare a PyPI release with its pinned wheels in `install:`")
        if k == "tag":
            fix += f", or use the image nvcr.io/nvidia/ai-dynamo/<engine>-runtime:{v.removeprefix('v')}"
        return [f"Dynamo {v} {REFUSED_KINDS[k]}; {fix}"]
    wheels = {str(r).split("==")[0].strip(): str(r).split("==", 1)[1].split()[0] for r in install or []
              if isinstance(r, str) and "==" in r}
    if not install:
        return [f"Dynamo {v} is not in the image (only NVIDIA's Dynamo runtime images carry it), and the frontend "
                f"installs nothing: list ai-dynamo=={published(v)} and ai-dynamo-runtime=={published(v)}, pinned by "
                "sha256, in the frontend's `install:`"]
    if wheels.get("ai-dynamo") != published(v):
        return [f"the frontend declares Dynamo {v}, but `install:` pins ai-dynamo {wheels.get('ai-dynamo', 'not at all')}; "
                f"pin ai-dynamo=={published(v)} and ai-dynamo-runtime=={published(v)} (with their sha256)"]
    return []


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
    if r is None and engine == "trtllm":
        return [f"Dynamo {dynamo}'s TensorRT-LLM worker cannot be checked against TensorRT-LLM "
                f"{', '.join(versions)}: no TensorRT-LLM wheel can be had to import it with; use NVIDIA's Dynamo "
                "runtime image for TensorRT-LLM (nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:<release>), which "
                "carries the pair it was built with"]
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


def frontend_problems(version: str, engine: str, versions: tuple[str, ...], image: str,
                      install: list | None) -> list[str]:
    """Everything that stops a Dynamo frontend of VERSION from running the recipe's ENGINE workers: the release
    cannot be had as published (release_problems), or its workers do not import with the engine releases the
    image has (dynamo_problems; not judged in NVIDIA's runtime image, whose engine is the one it was built with)."""
    problems = release_problems(version, engine, image, install)
    if problems or bundled(image) is not None:
        return problems
    return dynamo_problems(version, engine, versions)
