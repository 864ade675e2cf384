"""How much of InferenceX's fleet the runner serves: every row of its masters (../shared/corpus/inferencex),
given a recipe with exactly its point, judged by `ci_tools.runner.servable` (issues 22, 40).

For each benchmark and eval row the matrix expands from InferenceX's masters, a recipe is written from
the row alone, as a contributor would write it in today's schema: the engine its framework runs, the
engine releases its image carries (`engine-versions`), its image, its model, and one point with the row's
topology (single-node: tp/ep/dp-attn/conc, pp/dcp/pcp, router, DRAM KV offload; multi-node: the prefill
and decode worker groups, the concurrency list, the frontend its framework uses at the release the row
declares, its KV transfer and offload). The recipe must be valid under ci-tools' recipe schemas (else the
refusal is the schema's, in `config validate`'s words), then `servable.refusals` decides, as `plan` does.

What the row cannot say is filled in, by rules that decide nothing on their own:
- the image is pinned with a digest derived from its name (InferenceX pins none); runner labels that
  InferenceX's runners.yaml gives no `gpus-per-node` get their family's (4 on GB200/GB300, else 8);
- `engine-versions` from the image tag (`engine_versions`): the release it names; for a dated nightly the
  releases before and after it (release dates: SGLang's on PyPI, ATOM's tags and pinned main-line commits);
  NVIDIA's Dynamo runtime image: the engine release that Dynamo release pins. An image that names no
  release (a nightly by commit, a custom build) leaves it out, and the table counts those rows;
- a Dynamo frontend without a declared release takes the one a contributor would (the image's own, else the
  newest PyPI release compat.py lists as importing with the engine); a PyPI release on an image without
  Dynamo lists its two wheels in `install:`, with sha256 values derived like the image digest.

Run as a script to print the table by reason: `python tests/runner/inferencex_coverage.py`.
"""

from __future__ import annotations

import collections
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ci_tools.config import schemas
from ci_tools.config.disagg import GroupKey
from ci_tools.config.load import read_masters, read_runners
from ci_tools.config.recipe import recipe_from_data
from ci_tools.evals.policy import policy_from_doc
from ci_tools.runner.servable import Context, refusals
from ci_tools.sweep.matrix import Filters, expand, select_evals
from ci_tools.yaml.load import load_yaml_file
from ci_tools.yaml.located import YamlDoc

REPO = Path(__file__).resolve().parents[2]

# framework -> (engine, frontend kind for multi-node rows)
ENGINE_OF = {"sglang": "sglang", "vllm": "vllm", "trt": "trtllm", "atom": "atom",
             "dynamo-sglang": "sglang", "dynamo-vllm": "vllm", "dynamo-trt": "trtllm", "sglang-disagg": "sglang",
             "llmd-vllm": "vllm", "atom-disagg": "atom", "tilert": "tilert"}
FRONTEND_OF = {"dynamo-sglang": "dynamo", "dynamo-vllm": "dynamo", "dynamo-trt": "dynamo",
               "sglang-disagg": "sglang-router", "vllm": "sglang-router", "llmd-vllm": "llm-d",
               "atom-disagg": "atomesh", "tilert": "tilert-pd-router"}
DEFAULT_ROUTER = {"dynamo": ("dynamo-router", "1.3.0"), "sglang-router": ("sglang-router", "0.3.2")}


# (release, first day on PyPI): SGLang's releases around InferenceX's nightlies
SGLANG_RELEASES = [("0.5.6.post2", "2025-12-11"), ("0.5.7", "2026-01-01"), ("0.5.8", "2026-01-23"),
                   ("0.5.8.post1", "2026-02-05"), ("0.5.9", "2026-02-23"), ("0.5.10", "2026-04-05"),
                   ("0.5.10.post1", "2026-04-08"), ("0.5.11", "2026-05-05"), ("0.5.12", "2026-05-16"),
                   ("0.5.12.post1", "2026-05-23"), ("0.5.13", "2026-06-11"), ("0.5.13.post1", "2026-06-15"),
                   ("0.5.14", "2026-06-26"), ("0.5.15", "2026-07-10"), ("0.5.15.post1", "2026-07-14"),
                   ("0.5.16", "2026-07-25"), ("0.5.17", "2026-08-08"), ("0.5.18", "2026-08-21"),
                   ("0.5.19", "2026-09-04"), ("0.5.20", "2026-09-18"), ("0.5.21", "2026-10-01")]
# ATOM's releases on its main line and the main-line commits ci-tools pins, by commit date
# (tests/engines/sources.json): a nightly of the same day is that commit's build
ATOM_RELEASES = [("0.1.2", "2026-03-29"), ("0.1.3", "2026-05-30"), ("0.1.6rc0", "2026-07-02"),
                 ("0.1.6rc1.dev153", "2026-07-23"), ("0.1.6rc1.dev307", "2026-08-20"), ("0.1.6rc1.dev323", "2026-08-22")]


def bracket(releases: list[tuple[str, str]], day: str) -> tuple[str, ...]:
    """The release of DAY itself, else the releases before and after a nightly of DAY."""
    same = [r for r, d in releases if d == day]
    if same:
        return (same[-1],)
    before = [r for r, d in releases if d < day][-1:]
    after = [r for r, d in releases if d > day][:1]
    return tuple(before + after)


def _release_or_dated(tag: str, release: str, short_date: str, releases: list[tuple[str, str]]) -> tuple[str, ...]:
    """A release the tag names (RELEASE's group), else the releases around the day a nightly tag carries:
    a full date, or SHORT_DATE's month and day in 2026."""
    m = re.search(release, tag)
    if m:
        return (m.group(1),)
    d = re.search(r"(20\d\d)(\d\d)(\d\d)", tag) or re.search(short_date, tag)
    if not d:
        return ()
    year, month, day = ("2026", *d.groups()) if len(d.groups()) == 2 else d.groups()
    return bracket(releases, f"{year}-{month}-{day}")


def engine_versions(engine: str, image: str) -> tuple[str, ...]:
    """The engine releases an InferenceX image carries, as its tag says (empty: it names none)."""
    from ci_tools.engines.compat import EXTRA_PINS, bundled

    tag = image.split("@")[0].rsplit(":", 1)[-1] if ":" in image.split("@")[0].rsplit("/", 1)[-1] else ""
    carried = bundled(image)
    if carried is not None:
        pin = EXTRA_PINS.get(carried[0], {}).get(engine)
        return (pin,) if pin else ()
    if engine == "sglang":
        return _release_or_dated(tag, r"(?:^v|sglang-)(\d+\.\d+\.\d+(?:\.post\d+)?)", r"nightly-(\d\d)(\d\d)$",
                                 SGLANG_RELEASES)
    if engine == "vllm":
        m = re.search(r"(?:^v|-|^vllm)(\d+\.\d+(?:\.\d+)?)(?:$|-)", tag)
        return (m.group(1),) if m else ()
    if engine == "trtllm":
        m = re.match(r"(\d+\.\d+\.\d+(?:rc\d+)?(?:\.post\d+)?)$", tag)
        return (m.group(1),) if m else ()
    if engine == "atom":
        return _release_or_dated(tag, r"atom(\d+\.\d+\.\d+)", r"_(\d\d)(\d\d)$", ATOM_RELEASES)
    return ()


def frontend_release(row: dict, engine: str, versions: tuple[str, ...]) -> str:
    """The Dynamo release a recipe for a row without one declares: its image's, else the newest PyPI release
    compat.py lists as importing with the engine releases (what a refusal tells the contributor)."""
    from ci_tools.engines import compat, version_key

    carried = compat.bundled(str(row["image"]))
    if carried is not None:
        return carried[0]
    fits = [r.dynamo for r in compat.DYNAMO_WORKERS if r.engine == engine and versions
            and all(v in r.works for v in versions)]
    return max(fits, key=version_key) if fits else DEFAULT_ROUTER["dynamo"][1]


def family_gpus_per_node(runner: str) -> int:
    return 4 if re.match(r"(cluster:)?gb[23]00", runner) else 8


def pinned(image: str) -> str:
    return image if "@sha256:" in image else f"{image}@sha256:{hashlib.sha256(image.encode()).hexdigest()}"


def _topology_extras(src: dict) -> dict:
    return {k: int(src[k]) for k in ("pp", "dcp-size", "pcp-size") if int(src.get(k, 1) or 1) != 1}


def _offload(row: dict) -> dict | None:
    if row.get("kv-offloading") in (None, "none"):
        return None
    backend = (row.get("kv-offload-backend") or {}).get("name")
    return {"backend": backend, "medium": row["kv-offloading"]}


def _pins(release: str) -> list[str]:
    """`install:` lines of a PyPI Dynamo release (hashes derived like the image digest: they decide nothing)."""
    from ci_tools.engines.compat import published

    return [f"{dist}=={published(release)} --hash=sha256:{hashlib.sha256(f'{dist}{release}'.encode()).hexdigest()}"
            for dist in ("ai-dynamo", "ai-dynamo-runtime")]


def recipe_for(key: str, row: dict, gpn: int) -> dict:
    """A recipe with exactly the row's point (plain data, as a contributor would write it)."""
    framework = str(row.get("framework"))
    engine = ENGINE_OF.get(framework, framework)
    head = {"recipe-version": 1, "config-key": key, "engine": engine, "image": row["image"], "model": row["model"]}
    versions = engine_versions(engine, str(row["image"]).split("@sha256:")[0])
    if versions:
        head["engine-versions"] = list(versions)
    offload = _offload(row)
    router = row.get("router") if isinstance(row.get("router"), dict) else None
    if "prefill" not in row:
        point: dict[str, Any] = {"tp": row["tp"], "ep": row.get("ep", 1), "dp-attn": bool(row.get("dp-attn")),
                                 "conc": row["conc"], **_topology_extras(row)}
        if router:
            point["router"] = {"name": router["name"], "version": str(router["version"])}
        out = {**head, "serve": {}, "points": {"p": point}}
        if offload:
            out["kv-offload"] = offload
        return out
    kind = FRONTEND_OF.get(framework, framework)
    name, version = (router["name"], str(router["version"])) if router else DEFAULT_ROUTER.get(kind, (kind, "0"))
    if kind == "dynamo" and not router:
        version = frontend_release(row, engine, versions)

    def group(w: dict) -> dict:
        return {"num-worker": w.get("num-worker", 1), "tp": w["tp"], "ep": w.get("ep", 1),
                "dp-attn": bool(w.get("dp-attn")), "nodes": max(1, GroupKey.of(w).gpus_per_worker // gpn),
                **_topology_extras(w)}

    concs = row["conc"] if isinstance(row["conc"], list) else [row["conc"]]
    from ci_tools.engines.compat import bundled, kind as release_kind

    frontend = {"kind": kind, "name": name, "version": version}
    if kind == "dynamo" and release_kind(version) == "pypi" and bundled(str(row["image"])) is None:
        frontend["install"] = _pins(version)
    out = {**head, "mode": "disaggregated", "kv-transfer": row.get("kv-p2p-transfer") or "nixl",
           "frontend": frontend,
           "points": {"p": {"prefill": group(row["prefill"]), "decode": group(row["decode"]), "conc": concs}}}
    if offload:
        out["kv-offload"] = offload
    return out


@dataclass
class Verdict:
    key: str
    framework: str
    kind: str              # throughput | eval
    accepted: bool
    reason: str            # "" when accepted: the refusal's rule and the first words of its message
    message: str
    versions: bool = True  # the recipe states the engine releases (the image tag names them)


def _reason(rule: str, message: str) -> str:
    """A refusal grouped by what it says, not by its row's numbers or file names."""
    text = re.sub(r"recipes/\S+\.yaml( point \S+)?: ", "", message)
    if rule != "schema":
        text = re.sub(r"'[^']*'|\"[^\"]*\"", "'X'", text)
    text = re.sub(r"\b[0-9a-f]{40}\b|\b\d+(\.\d+)*\b", "N", text)
    return f"{rule}: {text[:120]}"


def rows(shared: Path) -> list[tuple[str, str, dict]]:
    cfg = shared / "corpus" / "inferencex" / "configs"
    masters = read_masters([cfg / "nvidia-master.yaml", cfg / "amd-master.yaml"]).entries
    hardware = (read_runners(cfg / "runners.yaml").data or {}).get("hardware") or {}
    bench = expand(masters, hardware, Filters())
    evals = select_evals(expand(masters, hardware, Filters()), all_evals=False, evals_only=True)
    return ([("throughput", r.key, r.row.as_dict()) for r in bench]
            + [("eval", r.key, r.row.as_dict()) for r in evals]), hardware


def judge(shared: Path) -> list[Verdict]:
    evals = policy_from_doc(load_yaml_file(REPO / "inferencex-e2e/ci-policy.yaml", "inferencex-e2e/ci-policy.yaml"))
    found, hardware = rows(shared)
    out = []
    for kind, key, data in found:
        row = {**data, "config-key": key, "image": pinned(str(data["image"]))}
        runner = str(row.get("runner"))
        gpn = int((hardware.get(runner) or {}).get("gpus-per-node") or family_gpus_per_node(runner))
        data = recipe_for(key, row, gpn)
        stated = "engine-versions" in data
        schema = "disagg-recipe" if data.get("mode") == "disaggregated" else "recipe"
        if not schemas.is_valid(schema, None, data):
            # config validate's own words for the first error (where an engine is refused, its reason)
            found = schemas.check(YamlDoc(f"recipes/{key}.yaml", data), data, schema)
            msg = f"{found[0].message}; {found[0].hint}" if found else "invalid"
            out.append(Verdict(key, str(row.get('framework')), kind, False, _reason("schema", msg), msg, stated))
            continue
        recipe = recipe_from_data(data, f"recipes/{key}.yaml")
        got = refusals(row, Context({"recipe": recipe.file}, recipe, None, gpn, evals))
        if got:
            out.append(Verdict(key, str(row.get('framework')), kind, False, _reason(got[0].rule, got[0].message),
                               got[0].message, stated))
        else:
            out.append(Verdict(key, str(row.get('framework')), kind, True, "", "", stated))
    return out


def table(verdicts: list[Verdict]) -> str:
    lines = []
    for kind in ("throughput", "eval"):
        mine = [v for v in verdicts if v.kind == kind]
        ok = sum(v.accepted for v in mine)
        stated = sum(v.accepted and v.versions for v in mine)
        lines.append(f"{kind}: {ok} of {len(mine)} accepted ({100 * ok / max(1, len(mine)):.1f} %); the recipe states "
                     f"the engine releases for {sum(v.versions for v in mine)} (the image tag names none for the rest); "
                     f"accepted and stating them: {stated} ({100 * stated / max(1, len(mine)):.1f} %)")
        for reason, n in collections.Counter(v.reason for v in mine if not v.accepted).most_common():
            lines.append(f"  {n:5d}  {reason}")
    return "\n".join(lines)


if __name__ == "__main__":
    import os
    import sys

    here = Path(os.environ.get("CI_TOOLS_SHARED", REPO.parent / "shared"))
    print(table(judge(Path(sys.argv[1]) if len(sys.argv) > 1 else here)))
