"""The fuzz tier's one check: run a case and demand a clean outcome within bounds.

Every case goes through `check_case`: it runs the callable under tracemalloc and a wall clock and
fails the test when the outcome is a traceback (any exception but the expected clean ones), an exit
code outside 0/1/2, or a case that took longer than HANG_S or allocated more than MEM_LIMIT. Each
case's time and peak memory are recorded per target, and `conftest.py` prints the figures at the
end of the session (and writes them to $CI_TOOLS_FUZZ_REPORT when set).

Profiles: `ci` (the default, in `.ci/run`) and `nightly` (CI_TOOLS_FUZZ=nightly, ~20x the cases,
random seeds). The ci profile is derandomized: the same cases every run, so it cannot flake.
"""

from __future__ import annotations

import os
import time
import tracemalloc
from collections import defaultdict
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from io import StringIO
from pathlib import Path

from hypothesis import HealthCheck, settings

from ci_tools.cli import main

PROFILE = os.environ.get("CI_TOOLS_FUZZ", "ci")
if PROFILE not in ("ci", "nightly"):
    raise RuntimeError(f"CI_TOOLS_FUZZ must be 'ci' or 'nightly', not {PROFILE!r}")
NIGHTLY = PROFILE == "nightly"

# A case past either bound is a hang or a blow-up, not a slow machine: typical cases take
# milliseconds and a few MB (the figures are printed at the end of the session). The time bound is one
# core's: with pytest-xdist's workers sharing the cores, a case gets that many times as long (the
# unedited export's case, 6.4 s alone at load 8, took 16.3 s beside the mutation tier on 2 cores).
HANG_S = 10.0 * max(1, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))
MEM_LIMIT = 256 * 1024 * 1024


def fuzz_settings(ci_examples: int) -> settings:
    """Settings for one fuzz test: `ci_examples` cases in CI, 20x that nightly."""
    return settings(max_examples=ci_examples * 20 if NIGHTLY else ci_examples, deadline=None,
                    derandomize=not NIGHTLY, database=None, print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.function_scoped_fixture])


@dataclass
class Figures:
    cases: int = 0
    tracebacks: int = 0
    hangs: int = 0
    max_s: float = 0.0
    max_bytes: int = 0
    exits: dict = field(default_factory=lambda: defaultdict(int))


FIGURES: dict[str, Figures] = defaultdict(Figures)
# Counts a target reports beside its cases (how often something happened that is not a failure), printed
# with the figures: name -> label -> count, labels in the order first counted.
TALLIES: dict[str, dict[str, int]] = defaultdict(dict)


def tally(target: str, label: str, n: int = 1) -> None:
    TALLIES[target][label] = TALLIES[target].get(label, 0) + n


@dataclass
class Outcome:
    code: int | None
    out: str
    err: str
    value: object = None


def check_case(target: str, fn, *args, clean: tuple[type[BaseException], ...] = (), **kwargs) -> Outcome:
    """Run fn(*args, **kwargs) as one fuzz case of `target`; fail on a traceback, a hang or a blow-up.

    `clean`: exception types that are a clean refusal for an in-process core function (InputError)."""
    fig = FIGURES[target]
    fig.cases += 1
    out, err = StringIO(), StringIO()
    tracemalloc.start()
    t0 = time.perf_counter()
    code: int | None = None
    value = None
    failure: BaseException | None = None
    try:
        with redirect_stdout(out), redirect_stderr(err):
            try:
                value = fn(*args, **kwargs)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            except clean:
                code = 1
    except BaseException as exc:  # noqa: BLE001 - a traceback is what the fuzz tier hunts
        failure = exc
    finally:
        elapsed = time.perf_counter() - t0
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    fig.max_s = max(fig.max_s, elapsed)
    fig.max_bytes = max(fig.max_bytes, peak)
    if failure is not None:
        fig.tracebacks += 1
        raise AssertionError(f"{target}: traceback {type(failure).__name__}: {failure}") from failure
    text = err.getvalue()
    if "Traceback" in text or "internal error" in text:
        fig.tracebacks += 1
        raise AssertionError(f"{target}: internal error reported:\n{text[-2000:]}")
    if elapsed > HANG_S:
        fig.hangs += 1
        raise AssertionError(f"{target}: a case took {elapsed:.1f} s (bound {HANG_S} s)")
    if peak > MEM_LIMIT:
        raise AssertionError(f"{target}: a case allocated {peak / 2**20:.0f} MB (bound {MEM_LIMIT / 2**20:.0f} MB)")
    if code is not None:
        fig.exits[code] += 1
        if code not in (0, 1, 2):
            raise AssertionError(f"{target}: exit {code}, expected 0, 1 or 2:\n{text[-2000:]}")
    return Outcome(code, out.getvalue(), text, value)


def cli_case(target: str, argv: list[str], cwd: Path | None = None) -> Outcome:
    """One case through the real `ci-tools` entry point, in-process."""
    old = os.getcwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        outcome = check_case(target, main, argv)
    finally:
        os.chdir(old)
    if outcome.code is None:
        outcome.code = 0
        FIGURES[target].exits[0] += 1
    return outcome


def report() -> str:
    lines = [f"fuzz tier ({PROFILE} profile): target, cases, tracebacks, hangs, max s/case, max MB/case, exits"]
    for name, f in sorted(FIGURES.items()):
        exits = ", ".join(f"{k}: {v}" for k, v in sorted(f.exits.items()))
        lines.append(f"  {name:<22} {f.cases:>6} {f.tracebacks:>3} {f.hangs:>3} {f.max_s:>8.3f} "
                     f"{f.max_bytes / 2**20:>8.1f}   {exits}")
    for name, counts in sorted(TALLIES.items()):
        lines.append(f"  {name}: " + ", ".join(f"{label} {n}" for label, n in counts.items()))
    return "\n".join(lines)
