"""Mutation families of AIPerf's real export for `results process` (issue 25, finding 4): each family
edits the records, the summary or both the way an adversarial pass edited them after the run, so every
mutant is corrupt. `measure` runs `results process` on each and counts how many are judged VALID and by
how much their headline moved from the unedited export's.

Standalone on purpose (stdlib and the `ci-tools` entry point only): the same families measure an older
tree (`python -m tests.fuzz.results_mutations --count N` with that tree first on PYTHONPATH).
"""

from __future__ import annotations

import copy
import json
import math
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Callable

HEADLINE = ("tok_s_gpu", "intvty_p90", "intvty_p50", "ttft_p90_s", "ttft_p50_s")
POINT = ["--tp", "4", "--conc", "4", "--scenario", "fixed-seq-len", "--model", "stub"]
COMPARED = ("time_to_first_token", "inter_token_latency", "request_latency", "output_token_throughput_per_user",
            "output_sequence_length", "input_sequence_length", "usage_completion_tokens")
LATENCY = ("time_to_first_token", "inter_token_latency", "request_latency")

Family = Callable[[random.Random, list, dict], None]


# ---- helpers: what an editor who knows AIPerf's derivations rewrites alongside --------------------------

def _v(rec, name):
    return rec["metrics"][name]["value"]


def _set(rec, name, value):
    rec["metrics"][name]["value"] = value


def _away(rng: random.Random) -> float:
    """A factor clearly away from 1 (a 5 % to 3x change, up or down)."""
    f = rng.uniform(1.05, 3.0)
    return f if rng.random() < 0.5 else 1 / f


def _rederive(rec) -> None:
    """Rewrite what AIPerf derives from TTFT, ITL and OSL: E2EL, the end time, the per-user rates."""
    ttft, itl, osl = _v(rec, "time_to_first_token"), _v(rec, "inter_token_latency"), _v(rec, "output_sequence_length")
    old = _v(rec, "request_latency")
    e2el = ttft + itl * (osl - 1)
    _set(rec, "request_latency", e2el)
    rec["metadata"]["request_end_ns"] += int((e2el - old) * 1e6)
    _set(rec, "output_token_throughput_per_user", 1000.0 / itl)
    for name in ("usage_completion_tokens", "output_token_count"):
        _set(rec, name, osl)


def resummarise(recs: list, summary: dict) -> None:
    """The summary AIPerf would have written for these records (numpy's definitions, in Python)."""
    ok = [r for r in recs if r["metadata"].get("benchmark_phase") == "profiling" and not r.get("error")]
    for name in COMPARED:
        xs = sorted(float(_v(r, name)) for r in ok if name in r["metrics"] and isinstance(r["metrics"][name], dict))
        if not xs:
            continue
        entry = summary.setdefault(name, {"unit": "ms"})
        n = len(xs)

        def pct(p):
            k = (n - 1) * p / 100
            f = math.floor(k)
            c = min(f + 1, n - 1)
            return xs[f] + (k - f) * (xs[c] - xs[f])
        mean = math.fsum(xs) / n
        entry.update(avg=mean, min=xs[0], max=xs[-1], count=n, sum=math.fsum(xs),
                     std=math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / n),
                     **{f"p{p}": pct(p) for p in (1, 5, 10, 25, 50, 75, 90, 95, 99)})
    window = (datetime.fromisoformat(summary["end_time"]) - datetime.fromisoformat(summary["start_time"])).total_seconds()
    osl = sum(_v(r, "output_sequence_length") for r in ok)
    isl = sum(_v(r, "input_sequence_length") for r in ok)
    summary["request_count"]["avg"] = float(len(ok))
    summary["total_osl"]["avg"] = float(osl)
    summary["total_isl"]["avg"] = float(isl)
    summary["output_token_throughput"]["avg"] = osl / window
    summary["request_throughput"]["avg"] = len(ok) / window


def _one(rng, recs):
    return recs[rng.randrange(len(recs))]


def _scale(name: str, consistent: bool = False, every: bool = False, summary: bool = False) -> Family:
    def fam(rng, recs, agg):
        f = _away(rng)
        for rec in (recs if every else [_one(rng, recs)]):
            _set(rec, name, _v(rec, name) * f)
            if consistent:
                _rederive(rec)
        if summary:
            resummarise(recs, agg)
    return fam


def _value(name: str, value, consistent=False, summary=False) -> Family:
    def fam(rng, recs, agg):
        rec = _one(rng, recs)
        _set(rec, name, value)
        if consistent:
            _rederive(rec)
        if summary:
            resummarise(recs, agg)
    return fam


def _unit(name: str, units: tuple, every=False) -> Family:
    def fam(rng, recs, agg):
        unit = rng.choice(units)
        for rec in (recs if every else [_one(rng, recs)]):
            rec["metrics"][name]["unit"] = unit
    return fam


def _osl(summary=False) -> Family:
    def fam(rng, recs, agg):
        rec = _one(rng, recs)
        _set(rec, "output_sequence_length", _v(rec, "output_sequence_length") + rng.choice([-8, -3, 2, 5, 20]))
        if summary:
            resummarise(recs, agg)
    return fam


def _isl(rng, recs, agg):
    rec = _one(rng, recs)
    _set(rec, "input_sequence_length", _v(rec, "input_sequence_length") * _away(rng))


def _drop(summary=False) -> Family:
    def fam(rng, recs, agg):
        for _ in range(rng.randint(1, 5)):
            recs.pop(rng.randrange(len(recs)))
        if summary:
            resummarise(recs, agg)
    return fam


def _duplicate(summary=False) -> Family:
    def fam(rng, recs, agg):
        for _ in range(rng.randint(1, 3)):
            recs.insert(rng.randrange(len(recs)), copy.deepcopy(_one(rng, recs)))
        if summary:
            resummarise(recs, agg)
    return fam


def _same_id(rng, recs, agg):
    a, b = rng.sample(range(len(recs)), 2)
    recs[b]["metadata"]["x_request_id"] = recs[a]["metadata"]["x_request_id"]


def _shift(which: str, summary=False) -> Family:
    def fam(rng, recs, agg):
        rec = _one(rng, recs)
        d = int(rng.choice([-1, 1]) * rng.uniform(0.005, 0.4) * 1e9)
        if which in ("start", "both"):
            rec["metadata"]["request_start_ns"] += d
        if which in ("end", "both"):
            rec["metadata"]["request_end_ns"] += d
        if summary:
            resummarise(recs, agg)
    return fam


def _first_or_last(rng, recs, agg):
    """Stretch the run: the first request starts earlier or the last ends later (throughput moves)."""
    key = rng.choice(["request_start_ns", "request_end_ns"])
    pick = min if key == "request_start_ns" else max
    rec = pick(recs, key=lambda r: r["metadata"][key])
    rec["metadata"][key] += int((-1 if key == "request_start_ns" else 1) * rng.uniform(0.002, 0.2) * 1e9)


def _overlap(rng, recs, agg):
    """One request moved to run beside others: five in flight at concurrency 4."""
    a, b = rng.sample(range(len(recs)), 2)
    span = recs[b]["metadata"]["request_end_ns"] - recs[b]["metadata"]["request_start_ns"]
    recs[b]["metadata"]["request_start_ns"] = recs[a]["metadata"]["request_start_ns"] + 1000
    recs[b]["metadata"]["request_end_ns"] = recs[b]["metadata"]["request_start_ns"] + span


def _swap(rng, recs, agg):
    rec = _one(rng, recs)
    t, i = _v(rec, "time_to_first_token"), _v(rec, "inter_token_latency")
    _set(rec, "time_to_first_token", i)
    _set(rec, "inter_token_latency", t)


def _phase(rng, recs, agg):
    _one(rng, recs)["metadata"]["benchmark_phase"] = "warmup"


def _error(rng, recs, agg):
    _one(rng, recs)["error"] = {"type": "HTTPStatusError", "message": "500"}


def _summary_stat(rng, recs, agg):
    name = rng.choice(COMPARED[:5])
    stat = rng.choice(["avg", "p50", "p90", "p95", "p99", "min", "max"])
    agg[name][stat] *= _away(rng)


def _summary_unit(rng, recs, agg):
    agg[rng.choice(COMPARED[:3] + ("benchmark_duration",))]["unit"] = rng.choice(["s", "us", "ns", "sec", "x"])


def _summary_scalar(key: str) -> Family:
    def fam(rng, recs, agg):
        agg[key]["avg"] *= _away(rng)
    return fam


def _summary_window(stretch: bool) -> Family:
    def fam(rng, recs, agg):
        d = timedelta(seconds=rng.uniform(0.01, 0.5))
        if stretch:
            agg["end_time"] = (datetime.fromisoformat(agg["end_time"]) + d).isoformat()
        else:
            for key in ("start_time", "end_time"):
                agg[key] = (datetime.fromisoformat(agg[key]) + d * rng.choice([-1, 1])).isoformat()
    return fam


def _summary_remove(rng, recs, agg):
    agg.pop(rng.choice(COMPARED[:5] + ("output_token_throughput", "request_throughput", "start_time")))


def _summary_concurrency(rng, recs, agg):
    agg["input_config"]["phases"][0]["concurrency"] = rng.choice([2, 3, 8, 64])


def _summary_flag(rng, recs, agg):
    key = rng.choice(["is_complete", "was_cancelled"])
    agg[key] = not agg[key]


def _stretch_run(rng, recs, agg):
    """Every timestamp spread out by a factor (throughput down), the window edited to match."""
    t0 = min(r["metadata"]["request_start_ns"] for r in recs)
    f = rng.uniform(1.02, 1.5)
    for r in recs:
        for key in ("request_start_ns", "request_end_ns"):
            r["metadata"][key] = t0 + int((r["metadata"][key] - t0) * f)
    resummarise(recs, agg)


FAMILIES: dict[str, Family] = {
    # records edited, the summary left as AIPerf wrote it
    "ttft-one-scaled": _scale("time_to_first_token"),
    "itl-one-scaled": _scale("inter_token_latency"),
    "itl-one-3600s": _value("inter_token_latency", 3.6e6),
    "e2el-one-scaled": _scale("request_latency"),
    "ttft-every-scaled": _scale("time_to_first_token", every=True),
    "itl-every-scaled": _scale("inter_token_latency", every=True),
    "otpu-one-scaled": _scale("output_token_throughput_per_user"),
    "usage-one-scaled": _scale("usage_completion_tokens"),
    "osl-one-changed": _osl(),
    "isl-one-scaled": _isl,
    "itl-one-unit": _unit("inter_token_latency", ("s", "us", "ns", "sec")),
    "itl-every-unit-s": _unit("inter_token_latency", ("s",), every=True),
    "ttft-every-unit": _unit("time_to_first_token", ("s", "us", "ns")),
    "e2el-one-unit": _unit("request_latency", ("s", "us", "x")),
    "osl-one-unit": _unit("output_sequence_length", ("ms", "kilotokens", "")),
    "unit-bogus": _unit("inter_token_latency", ("furlongs", "MS", "ms ", "seconds")),
    "records-dropped": _drop(),
    "records-duplicated": _duplicate(),
    "request-id-repeated": _same_id,
    "start-shifted": _shift("start"),
    "end-shifted": _shift("end"),
    "request-moved": _shift("both"),
    "run-stretched-at-an-edge": _first_or_last,
    "requests-overlapping": _overlap,
    "ttft-itl-swapped": _swap,
    "profiling-marked-warmup": _phase,
    "error-added": _error,
    # records edited with every value AIPerf derives from them, the summary left alone
    "itl-one-scaled-rederived": _scale("inter_token_latency", consistent=True),
    "ttft-one-scaled-rederived": _scale("time_to_first_token", consistent=True),
    "itl-one-3600s-rederived": _value("inter_token_latency", 3.6e6, consistent=True),
    # records edited and the summary rewritten to match them
    "itl-one-scaled-resummarised": _scale("inter_token_latency", summary=True),
    "ttft-one-scaled-resummarised": _scale("time_to_first_token", summary=True),
    "itl-one-rederived-resummarised": _scale("inter_token_latency", consistent=True, summary=True),
    "ttft-one-rederived-resummarised": _scale("time_to_first_token", consistent=True, summary=True),
    "itl-3600s-rederived-resummarised": _value("inter_token_latency", 3.6e6, consistent=True, summary=True),
    "ttft-every-rederived-resummarised": _scale("time_to_first_token", consistent=True, every=True, summary=True),
    "osl-one-resummarised": _osl(summary=True),
    "records-dropped-resummarised": _drop(summary=True),
    "records-duplicated-resummarised": _duplicate(summary=True),
    "request-moved-resummarised": _shift("both", summary=True),
    "run-stretched-resummarised": _stretch_run,
    # the summary edited
    "summary-statistic": _summary_stat,
    "summary-unit": _summary_unit,
    "summary-output-throughput": _summary_scalar("output_token_throughput"),
    "summary-request-throughput": _summary_scalar("request_throughput"),
    "summary-request-count": _summary_scalar("request_count"),
    "summary-total-osl": _summary_scalar("total_osl"),
    "summary-duration": _summary_scalar("benchmark_duration"),
    "summary-window-shifted": _summary_window(False),
    "summary-window-stretched": _summary_window(True),
    "summary-metric-removed": _summary_remove,
    "summary-concurrency": _summary_concurrency,
    "summary-flag": _summary_flag,
}


def mutant(export: tuple[list, dict], family: str, seed: int) -> tuple[list, dict]:
    recs, agg = copy.deepcopy(export[0]), copy.deepcopy(export[1])
    rng = random.Random(f"{family}:{seed}")
    FAMILIES[family](rng, recs, agg)
    if rng.random() < 0.15:                       # now and then a second family on top
        try:
            FAMILIES[rng.choice(sorted(FAMILIES))](rng, recs, agg)
        except (KeyError, TypeError, ValueError, ZeroDivisionError, IndexError):
            pass                                  # it needs what the first took away: the first alone

    return recs, agg


def write(d: Path, recs: list, agg: dict) -> None:
    d.mkdir(parents=True, exist_ok=True)
    (d / "profile_export.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    (d / "profile_export_aiperf.json").write_text(json.dumps(agg))


def moved(clean: dict, judged: dict) -> float:
    """The largest relative change of a headline figure (inf when one disappeared)."""
    worst = 0.0
    for key in HEADLINE:
        a, b = clean.get(key), judged.get(key)
        if a is None:
            continue
        if b is None or not math.isfinite(b):
            return math.inf
        worst = max(worst, abs(b - a) / abs(a))
    return worst


@dataclass
class Tally:
    cases: int = 0
    tracebacks: list = field(default_factory=list)
    valid: list = field(default_factory=list)        # (family, seed, headline moved)

    def valid_moved(self, tolerance: float) -> list:
        return [v for v in self.valid if v[2] > tolerance]


def measure(export: tuple[list, dict], count: int, work: Path, run: Callable[[list[str]], tuple[int | None, str]],
            extra: list[str] = ()) -> Tally:
    """`count` mutants, the families in turn; `run(argv)` runs ci-tools and returns (exit code, stderr)."""
    d = work / "run"
    out = d / "r.json"
    write(d, *export)
    code, err = run(["results", "process", str(d), *POINT, "--out", str(out), *extra])
    clean = json.loads(out.read_text())
    assert code == 0 and clean["valid"], f"the unedited export is not valid: {err}"
    names = sorted(FAMILIES)
    tally = Tally()
    for i in range(count):
        family = names[i % len(names)]
        recs, agg = mutant(export, family, i // len(names))
        write(d, recs, agg)
        out.unlink(missing_ok=True)
        code, err = run(["results", "process", str(d), *POINT, "--out", str(out), *extra])
        tally.cases += 1
        if code not in (0, 1, 2) or "Traceback" in err or "internal error" in err:
            tally.tracebacks.append((family, i, err[-500:]))
            continue
        if code == 0:
            result = json.loads(out.read_text())
            tally.valid.append((family, i, moved(clean["headline"], result["headline"])))
    return tally


def in_process(argv: list[str]) -> tuple[int | None, str]:
    from contextlib import redirect_stderr, redirect_stdout
    from io import StringIO

    from ci_tools.cli import main

    err = StringIO()
    code: int | None = 0
    try:
        with redirect_stdout(StringIO()), redirect_stderr(err):
            main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException as exc:  # noqa: BLE001 - a traceback is what is counted
        return 3, f"Traceback: {type(exc).__name__}: {exc}"
    return code, err.getvalue()


def load_export(corpus: Path) -> tuple[list, dict]:
    d = corpus / "aiperf-0.13-export"
    return ([json.loads(line) for line in (d / "profile_export.jsonl").read_text().splitlines()],
            json.loads((d / "profile_export_aiperf.json").read_text()))


if __name__ == "__main__":
    import argparse
    import tempfile
    import time

    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=3000)
    ap.add_argument("--corpus", type=Path, default=Path(__file__).resolve().parents[1] / "data",
                    help="the folder holding aiperf-0.13-export/ (default: tests/data)")
    ap.add_argument("--tolerance", type=float, default=0.001)
    ap.add_argument("--extra", nargs="*", default=[])
    args = ap.parse_args()
    t = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        tally = measure(load_export(args.corpus), args.count, Path(tmp), in_process, args.extra)
    by_family: dict = {}
    for family, _, m in tally.valid:
        by_family.setdefault(family, []).append(m)
    print(f"{tally.cases} mutants in {time.perf_counter() - t:.0f} s: {len(tally.tracebacks)} tracebacks, "
          f"{len(tally.valid)} judged VALID, {len(tally.valid_moved(args.tolerance))} of them with a headline moved "
          f"> {args.tolerance:g}, {len(tally.valid_moved(0.005))} > 0.5 %, {len(tally.valid_moved(0.015))} > 1.5 %")
    for family, ms in sorted(by_family.items()):
        print(f"  {family:<36} {len(ms):>4} valid, max headline move {max(ms):.4f}")
    for tb in tally.tracebacks[:5]:
        print("  traceback:", tb)
