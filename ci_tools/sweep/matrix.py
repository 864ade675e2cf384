"""Master entries -> benchmark matrix rows, in InferenceX's row shapes (spec §2).

Pure functions over plain data. `expand` turns selected master entries into rows exactly as
InferenceX's `generate_sweep_configs.py` emits them with `--no-evals` (same keys, same key order,
same defaults), so that workflows and result tooling written for InferenceX rows keep working.
`mark_evals` / `mark_all_evals` / `eval_rows` reproduce its eval selection.

Rows are typed (`sweep/row.py`), built in the generator's own order of assignments so that their JSON is
InferenceX's byte for byte; eval marking returns new rows. Every row is produced together with the
config key it came from (`KeyedRow.key`): InferenceX rows do not carry it, the planner needs it.

Deliberate differences from InferenceX (each documented in docs/reference.md, "`plan` output"):
- `conc-list: []` next to a range expands the range in both `full-sweep` and `test-config` (InferenceX's
  test-config emits nothing there, a bug it documents);
- an agentic search-space entry whose shape does not match the master's `multinode` flag is a located
  error instead of a `KeyError` traceback.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from ci_tools.config.points import conc_ladder
from ci_tools.errors import InputError
from ci_tools.sweep.row import MultiNodeRow, SingleNodeRow

FIXED = "fixed-seq-len"
AGENTIC = "agentic-coding"
SCENARIOS = (FIXED, AGENTIC)
SEQ_LENS = {"1k1k": (1024, 1024), "8k1k": (8192, 1024)}
_SEQ_NAMES = {v: k for k, v in SEQ_LENS.items()}
MIN_EVAL_CONC = 16
DEFAULT_AGENTIC_DURATION = 3600
MAX_AGENTIC_DRAM_MIB = 2_861_022
_MIB = 1_048_576
_GB = 1_000_000_000


def seq_len_name(isl: Any, osl: Any) -> str:
    return _SEQ_NAMES.get((isl, osl), f"{isl}_{osl}")


@dataclass(frozen=True)
class Filters:
    """The selection options of `matrix full-sweep` / `test-config` (spec §2.3, §2.4, §4.1)."""

    config_keys: tuple[str, ...] | None = None   # already resolved, in order; None = every entry
    model_prefix: tuple[str, ...] = ()           # prefix of the config KEY (InferenceX semantics)
    precision: tuple[str, ...] = ()
    framework: tuple[str, ...] = ()
    runner_type: tuple[str, ...] = ()
    seq_lens: tuple[str, ...] = ()               # fixed-seq-len only ("1k1k", "8k1k")
    scenario_types: tuple[str, ...] = ()         # empty = both
    min_conc: int | None = None
    max_conc: int | None = None
    concs: tuple[int, ...] = ()                  # test-config --conc: keep only these
    max_tp: int | None = None                    # fixed single-node only
    max_ep: int | None = None                    # fixed single-node only
    step: int = 2
    single_node: bool = False
    multi_node: bool = False


class KeyedRow(NamedTuple):
    """A row and the master entry (config key) it came from."""

    key: str
    row: SingleNodeRow | MultiNodeRow


def _conc_values(ss: Mapping[str, Any], step: int) -> tuple[list[int], bool]:
    """(values, is_range). `conc-list` wins when non-empty, as in InferenceX's full-sweep."""
    lst = ss.get("conc-list")
    if lst:
        return list(lst), False
    start, end = ss.get("conc-start"), ss.get("conc-end")
    if start is None or end is None:
        return [], False
    return conc_ladder(start, end, step), True


def _fixed_sn_concs(ss: Mapping[str, Any], f: Filters) -> list[int]:
    lst = ss.get("conc-list")
    if not lst and ss.get("conc-start") is not None and ss.get("conc-end") is not None:
        start, end = ss["conc-start"], ss["conc-end"]
        if f.min_conc is not None:
            if f.min_conc <= 0 or end < f.min_conc:
                return []
            start = max(start, f.min_conc)
        if f.max_conc is not None:
            if f.max_conc <= 0:
                return []
            if start > f.max_conc:
                return [f.max_conc]
            end = min(end, f.max_conc)
        return conc_ladder(start, end, f.step)
    return _fixed_listed(list(lst or []), f, nonpositive_max_skips=True)


def _fixed_mn_concs(ss: Mapping[str, Any], f: Filters) -> list[int]:
    return _fixed_listed(_conc_values(ss, f.step)[0], f, nonpositive_max_skips=False)


def _fixed_listed(values: list[int], f: Filters, *, nonpositive_max_skips: bool) -> list[int]:
    """--min-conc / --max-conc over listed concurrencies of a fixed-sequence entry, as InferenceX: a
    min <= 0 or nothing left skips the entry; a max keeps what is <= it, or the max itself when nothing
    is. The one difference: a single-node entry is skipped by any max <= 0, a multi-node one only when
    no listed value is <= it."""
    if f.min_conc is not None:
        if f.min_conc <= 0:
            return []
        values = [c for c in values if c >= f.min_conc]
        if not values:
            return []
    if f.max_conc is not None:
        kept = [c for c in values if c <= f.max_conc]
        if f.max_conc <= 0 and (nonpositive_max_skips or not kept):
            return []
        values = kept or [f.max_conc]
    return values


def _agentic_concs(ss: Mapping[str, Any], f: Filters) -> list[int]:
    values, _ = _conc_values(ss, f.step)
    if f.min_conc is not None:
        values = [c for c in values if c >= f.min_conc]
    if f.max_conc is not None:
        values = [c for c in values if c <= f.max_conc]
    return values


def _keep_concs(values: list[int], f: Filters) -> list[int]:
    if not f.concs:
        return values
    wanted = set(f.concs)
    return [c for c in values if c in wanted]


def _worker(w: Mapping[str, Any]) -> dict:
    out = dict(w)
    out["pp"] = w.get("pp", 1)
    out["dcp-size"] = w.get("dcp-size", 1)
    out["pcp-size"] = w.get("pcp-size", 1)
    return out


def _metadata(row: dict, ss: Mapping[str, Any], entry: Mapping[str, Any]) -> None:
    for name in ("router", "kv-p2p-transfer"):
        value = ss.get(name)
        if value is None:
            value = entry.get(name)
        if value is not None:
            row[name] = value


def _head(entry: Mapping[str, Any]) -> dict:
    return {"image": entry["image"], "model": entry["model"], "model-prefix": entry["model-prefix"],
            "precision": entry["precision"], "framework": entry["framework"], "runner": entry["runner"]}


def dram_budget_gb(ss: Mapping[str, Any], kv: Any, utilization: Any, runner: str,
                   hardware: Mapping[str, Any], key: str = "") -> int:
    """CPU DRAM (decimal GB) given to KV offload on one node (spec §2.6)."""
    if kv != "dram":
        return 0
    hw = hardware.get(runner) or {}
    if "available-cpu-dram-mib" not in hw or "gpus-per-node" not in hw:
        known = ", ".join(sorted(hardware)) or "(none)"
        raise InputError(f"{key}: runner {runner!r} has no 'available-cpu-dram-mib'/'gpus-per-node' in the "
                         f"runners file's hardware section (needed for kv-offloading: dram); "
                         f"hardware keys there: {known}")
    from decimal import Decimal  # only KV-offload rows need it; keeps the import off the common path

    avail = min(int(hw["available-cpu-dram-mib"]), MAX_AGENTIC_DRAM_MIB)
    gpn = int(hw["gpus-per-node"])
    u = Decimal(str(utilization))
    prefill = ss.get("prefill")
    if prefill:
        g = prefill.get("tp", 1) * prefill.get("pp", 1) * prefill.get("pcp-size", 1)
        if g > gpn:
            if g % gpn:
                raise InputError(f"{key}: worker tp*pp*pcp-size={g} spans multiple nodes but is not a multiple "
                                 f"of gpus-per-node={gpn}")
            g = gpn
        elif gpn % g:
            raise InputError(f"{key}: worker tp*pp*pcp-size={g} does not divide gpus-per-node={gpn} evenly")
    else:
        tp, pp, pcp = ss.get("tp"), ss.get("pp", 1), ss.get("pcp-size", 1)
        g = tp * pp * pcp
        if g > gpn:
            raise InputError(f"{key}: tp={tp} with pp={pp} and pcp-size={pcp} requires {g} GPUs and exceeds "
                             f"gpus-per-node={gpn} for runner '{runner}'")
    return int(Decimal(avail) * _MIB * u * g / gpn / _GB)


def _tag(w: Mapping[str, Any], role: str) -> str:
    out = f"{role}{w['num-worker']}x{w['tp']}"
    if w.get("ep", 1) != 1:
        out += f"ep{w['ep']}"
    if w.get("dp-attn"):
        out += "dpa"
    return out


def _kv_suffix(kv: Any, backend: Any) -> str:
    if kv == "none":
        return "kvnone"
    return f"kv{kv}-{(backend or {}).get('name')}"


def _selected(key: str, entry: Mapping[str, Any], f: Filters) -> bool:
    if f.model_prefix and not any(key.startswith(p) for p in f.model_prefix):
        return False
    if f.precision and entry.get("precision") not in f.precision:
        return False
    if f.framework and entry.get("framework") not in f.framework:
        return False
    if f.runner_type and entry.get("runner") not in f.runner_type:
        return False
    multinode = bool(entry.get("multinode", False))
    both = f.single_node == f.multi_node
    if not both and multinode != f.multi_node:
        return False
    return True


def _expand_fixed(key: str, entry: Mapping[str, Any], f: Filters, out: list[KeyedRow]) -> None:
    multinode = bool(entry.get("multinode", False))
    disagg = entry.get("disagg", False)
    mp = entry["model-prefix"]
    for seq in entry["scenarios"].get(FIXED) or []:
        isl, osl = seq["isl"], seq["osl"]
        if f.seq_lens and seq_len_name(isl, osl) not in f.seq_lens:
            continue
        exp_name = f"{mp}_{seq_len_name(isl, osl)}"
        for ss in seq.get("search-space") or []:
            spec = ss.get("spec-decoding", "none")
            if multinode:
                concs = _keep_concs(_fixed_mn_concs(ss, f), f)
                if not concs:
                    continue
                row = _head(entry)
                row.update({"isl": isl, "osl": osl, "spec-decoding": spec,
                            "prefill": _worker(ss["prefill"]), "decode": _worker(ss["decode"]),
                            "conc": concs, "max-model-len": isl + osl + 256, "exp-name": exp_name,
                            "disagg": disagg, "run-eval": False})
                _metadata(row, ss, entry)
                out.append(KeyedRow(key, MultiNodeRow(row)))
                continue
            tp = ss.get("tp")
            ep = ss.get("ep")
            if f.max_tp is not None and (f.max_tp <= 0 or tp > f.max_tp):
                continue
            if f.max_ep is not None:
                if f.max_ep <= 0:
                    continue
                if ep is not None and ep > f.max_ep:
                    ep = f.max_ep
            concs = _keep_concs(_fixed_sn_concs(ss, f), f)
            if not concs:
                continue
            # the keys before and after `conc` are the same for every concurrency: build them once
            before = _head(entry)
            before.update({"isl": isl, "osl": osl, "tp": tp, "pp": ss.get("pp", 1),
                           "dcp-size": ss.get("dcp-size", 1), "pcp-size": ss.get("pcp-size", 1)})
            after = {"max-model-len": isl + osl + 256, "ep": 1 if ep is None else ep,
                     "dp-attn": False if ss.get("dp-attn") is None else ss["dp-attn"],
                     "spec-decoding": spec, "exp-name": exp_name, "disagg": False, "run-eval": False}
            _metadata(after, ss, entry)
            for conc in concs:
                row = before.copy()
                row["conc"] = conc
                row.update(after)
                out.append(KeyedRow(key, SingleNodeRow(row)))


def _expand_agentic(key: str, entry: Mapping[str, Any], f: Filters, hardware: Mapping[str, Any],
                    out: list[KeyedRow]) -> None:
    multinode = bool(entry.get("multinode", False))
    mp = entry["model-prefix"]
    runner = entry["runner"]
    for cfg in entry["scenarios"].get(AGENTIC) or []:
        util = cfg.get("dram-utilization")
        for ss in cfg.get("search-space") or []:
            spec = ss.get("spec-decoding", "none")
            backend = ss.get("kv-offload-backend")
            has_workers = bool(ss.get("prefill")) and bool(ss.get("decode"))
            if multinode != has_workers:
                shape = "prefill/decode workers" if has_workers else "tp"
                raise InputError(f"{key}: an agentic search-space entry with {shape} does not fit a master "
                                 f"entry with multinode: {str(multinode).lower()}",)
            concs = _keep_concs(_agentic_concs(ss, f), f)
            if multinode:
                kv = ss.get("kv-offloading") or "none"
                dram = dram_budget_gb(ss, kv, util, runner, hardware, key)
                prefill, decode = _worker(ss["prefill"]), _worker(ss["decode"])
                base = f"{mp}_{_tag(prefill, 'p')}_{_tag(decode, 'd')}"
                for conc in concs:
                    row = _head(entry)
                    name = f"{base}_conc{conc}" + (f"_{_kv_suffix(kv, backend)}" if kv != "none" else "")
                    row.update({"spec-decoding": spec, "prefill": dict(prefill), "decode": dict(decode),
                                "conc": [conc], "kv-offloading": kv, "total-cpu-dram-gb": dram,
                                "duration": DEFAULT_AGENTIC_DURATION, "exp-name": name,
                                "disagg": entry.get("disagg", False), "scenario-type": AGENTIC})
                    if backend is not None:
                        row["kv-offload-backend"] = backend
                    _metadata(row, ss, entry)
                    out.append(KeyedRow(key, MultiNodeRow(row)))
                continue
            kv = ss.get("kv-offloading")
            dram = dram_budget_gb(ss, kv, util, runner, hardware, key)
            tp = ss["tp"]
            if not concs:
                continue
            before = _head(entry)
            before.update({"tp": tp, "pp": ss.get("pp", 1), "dcp-size": ss.get("dcp-size", 1),
                           "pcp-size": ss.get("pcp-size", 1), "ep": 1 if ss.get("ep") is None else ss["ep"],
                           "dp-attn": False if ss.get("dp-attn") is None else ss["dp-attn"],
                           "spec-decoding": spec})
            after: dict = {}
            if backend is not None:
                after["kv-offload-backend"] = backend
            _metadata(after, ss, entry)
            suffix = f"_{_kv_suffix(kv, backend)}" + (f"_spec-{spec}" if spec != "none" else "")
            for conc in concs:
                row = before.copy()
                row.update({"conc": conc, "kv-offloading": kv, "total-cpu-dram-gb": dram,
                            "duration": DEFAULT_AGENTIC_DURATION, "exp-name": f"{mp}_tp{tp}_conc{conc}{suffix}",
                            "scenario-type": AGENTIC})
                row.update(after)
                out.append(KeyedRow(key, SingleNodeRow(row)))


def expand(entries: Mapping[str, Mapping[str, Any]], hardware: Mapping[str, Any],
           f: Filters = Filters()) -> list[KeyedRow]:
    """Rows of the selected entries, per entry in order: fixed-seq-len scenarios, then agentic."""
    if f.step <= 1:
        raise InputError("--step-size must be greater than 1")
    if f.min_conc is not None and f.max_conc is not None and f.min_conc > f.max_conc:
        raise InputError("--min-conc must be less than or equal to --max-conc")
    keys: Iterable[str] = f.config_keys if f.config_keys is not None else entries.keys()
    scenarios = f.scenario_types or SCENARIOS
    out: list[KeyedRow] = []
    for key in keys:
        entry = entries[key]
        if not _selected(key, entry, f):
            continue
        try:
            if FIXED in scenarios:
                _expand_fixed(key, entry, f, out)
            if AGENTIC in scenarios:
                _expand_agentic(key, entry, f, hardware, out)
        except (KeyError, TypeError, AttributeError) as exc:
            raise InputError(f"config {key!r} cannot be expanded: malformed entry ({type(exc).__name__}: {exc}); "
                             "run `ci-tools config validate` for the located error") from None
    return out


# ---- eval selection (spec §2.8) -------------------------------------------------------------------

_PARALLELISM_EXCLUDED = frozenset({"conc", "run-eval", "eval-only", "eval-conc", "eval-all-concs", "exp-name"})


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


def row_key(row: Mapping[str, Any], excluded: frozenset[str] | tuple[str, ...]) -> tuple:
    """A hashable identity of a row ignoring the `excluded` keys (nested values frozen); the one
    grouping key used for eval parallelism groups, trimming and append-only curves."""
    return tuple(sorted((k, _freeze(v)) for k, v in row.items() if k not in excluded))


def _parallelism_key(row: Mapping[str, Any]) -> tuple:
    return row_key(row, _PARALLELISM_EXCLUDED)


def mark_evals(rows: list[KeyedRow], include_agentic: bool) -> list[KeyedRow]:
    """InferenceX's default eval subset: every row with `run-eval` set, `eval-conc` on multi-node picks."""
    marked: set[int] = set()
    eval_conc: dict[int, int] = {}
    sn_groups: dict[tuple, list[int]] = {}
    mn_groups: dict[tuple, list[int]] = {}
    ag_sn_groups: dict[tuple, list[int]] = {}
    for i, (_, r) in enumerate(rows):
        agentic = r.is_agentic
        if isinstance(r, SingleNodeRow):
            if not agentic and (r.isl, r.osl) == SEQ_LENS["8k1k"]:
                if r.conc >= MIN_EVAL_CONC:
                    group = (r.model, r.runner, r.framework, r.precision, r.isl, r.osl, r.spec_decoding,
                             r.get("dp-attn"))
                    sn_groups.setdefault(group, []).append(i)
            elif agentic and include_agentic:
                ag_sn_groups.setdefault((r.model, r.runner, r.framework, r.precision), []).append(i)
        elif (not agentic and (r.isl, r.osl) == SEQ_LENS["8k1k"]) or (agentic and include_agentic):
            if any(c >= MIN_EVAL_CONC for c in r.concs):
                mn_groups.setdefault(_parallelism_key(r), []).append(i)
    for idx in sn_groups.values():
        vals = sorted({rows[i].row.concs[0] for i in idx})
        targets = {vals[-1], vals[len(vals) // 2]}
        marked.update(i for i in idx if rows[i].row.concs[0] in targets)
    for idx in mn_groups.values():
        best, best_conc = None, None
        for i in idx:
            top = max(c for c in rows[i].row.concs if c >= MIN_EVAL_CONC)
            if best_conc is None or top > best_conc:
                best, best_conc = i, top
        if best is not None and best_conc is not None:
            marked.add(best)
            eval_conc[best] = best_conc
    for idx in ag_sn_groups.values():
        marked.add(max(idx, key=lambda i: (rows[i].row.concs[0], -i)))
    out = []
    for i, keyed in enumerate(rows):
        k, r = keyed
        if i in eval_conc:
            out.append(KeyedRow(k, r.replace(run_eval=True, eval_conc=eval_conc[i])))
        else:
            new = r.replace(run_eval=i in marked)
            out.append(keyed if new is r else KeyedRow(k, new))
    return out


def mark_all_evals(rows: list[KeyedRow]) -> list[KeyedRow]:
    """InferenceX's `--all-evals` expansion, applied after `mark_evals`: every eligible row marked, the
    multi-node rows of one parallelism merged into one (the first's key) over all their concurrencies."""
    out: list[KeyedRow] = []
    merged: dict[tuple, int] = {}          # group -> its row's index in `out`
    for k, r in rows:
        agentic, mn = r.is_agentic, r.is_multinode
        if agentic and not mn:
            out.append(KeyedRow(k, r.replace(run_eval=True)))
        elif agentic and mn:
            group = ("agentic", _parallelism_key(r))
            if group in merged:
                mk, m = out[merged[group]]
                conc = sorted(set(m.concs) | set(r.concs))
                out[merged[group]] = KeyedRow(mk, m.replace(conc=conc, eval_conc=max(conc)))
            else:
                conc = sorted(set(r.concs))
                merged[group] = len(out)
                out.append(KeyedRow(k, r.replace(conc=conc, run_eval=True, eval_conc=max(conc))))
        elif (r.isl, r.osl) != SEQ_LENS["8k1k"]:
            out.append(KeyedRow(k, r))
        elif mn:
            group = ("fixed", _parallelism_key(r))
            if group in merged:
                mk, m = out[merged[group]]
                out[merged[group]] = KeyedRow(mk, m.replace(conc=sorted(set(m.concs) | set(r.concs))))
            else:
                merged[group] = len(out)
                new = r.replace(conc=sorted(set(r.concs)), run_eval=True, eval_all_concs=True).without("eval_conc")
                out.append(KeyedRow(k, new))
        else:
            out.append(KeyedRow(k, r.replace(run_eval=True)))
    return out


def select_evals(rows: list[KeyedRow], *, all_evals: bool, evals_only: bool,
                 no_evals: bool = False) -> list[KeyedRow]:
    """The generator's eval post-processing (spec §2.8); returns the rows to emit."""
    if no_evals:
        return rows
    keep = mark_evals(rows, include_agentic=evals_only or all_evals)
    if all_evals:
        keep = mark_all_evals(keep)
    if evals_only or all_evals:
        keep = [KeyedRow(k, r.replace(eval_only=True)) for k, r in keep if r.run_eval]
    return keep
