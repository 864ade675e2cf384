#!/usr/bin/env python3
"""The test suite's own cost: installing what it needs, and pytest per folder.

    python3 benchmarks/suite.py installs [--cache DIR] [--pip] [ENV...]   # each environment built from its lock
    python3 benchmarks/suite.py tests [--workers N] [--pytest ARG]... [PATH...]   # pytest per folder or file

`installs` builds each tool environment of dev.py (the project's .venv, then aiperf, lmeval, router,
engines, engines-torch) from its lock into a cache folder: an empty one (`--cache` omitted: a fresh
temporary folder, so uv's download cache is cold too) or DIR (run twice: the second run is the warm
cache, where every environment is already there). `--pip` also installs each lock with pip
(`pip install --require-hashes -r LOCK` into a new venv, pip's cache left as it is) for the figure uv
is measured against. `tests` runs pytest once per PATH (default: every folder of tests/ and the
top-level files together) and prints wall time, CPU time of the processes it started, the number of
tests and the result; `--workers N` passes `-n N` (pytest-xdist).

Every row carries the load average at its start: on a shared machine compare rows of one run, or
ratios, not absolute seconds across runs. `--json` prints the rows as JSON for docs/performance.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def dev_py():
    spec = importlib.util.spec_from_file_location("dev_py", ROOT / "dev.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["dev_py"] = module
    spec.loader.exec_module(module)
    return module


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def timed(fn) -> tuple[float, float, object]:
    """Wall and CPU seconds (this process and its children) of fn()."""
    r0, c0 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = fn()
    wall = time.perf_counter() - t0
    r1, c1 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = sum(b.ru_utime - a.ru_utime + b.ru_stime - a.ru_stime for a, b in ((r0, r1), (c0, c1)))
    return wall, cpu, out


def du(path: Path) -> int:
    out = subprocess.run(["du", "-sb", "--", str(path)], capture_output=True, text=True)
    return int(out.stdout.split()[0]) if out.returncode == 0 else 0


def installs(args) -> list[dict]:
    cache = Path(args.cache) if args.cache else Path(tempfile.mkdtemp(prefix="suite-cache-"))
    os.environ["CI_TOOLS_CACHE"] = str(cache)
    dev = dev_py()
    for tool in dev.TOOL_ENVS:
        os.environ.pop(tool.found_by, None)
    rows = []
    wall, cpu, _ = timed(dev.uv)
    rows.append({"env": "uv (bootstrap)", "installer": "pip", "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
                 "load": load()})
    wanted = args.envs or ["dev", *(t.lock for t in dev.TOOL_ENVS)]
    for name in wanted:
        start_load = load()
        if name == "dev":
            venv_dir = Path(tempfile.mkdtemp(prefix="suite-dev-")) / ".venv"
            dev.VENV, dev.PY = venv_dir, venv_dir / "bin" / "python"
            wall, cpu, _ = timed(dev.ensure_dev_env)
            size = du(venv_dir)
        else:
            tool = next(t for t in dev.TOOL_ENVS if t.lock == name)
            tool_link = dev.ROOT / tool.link
            was_link = tool_link.is_symlink() and os.readlink(tool_link)
            wall, cpu, _ = timed(tool.ensure)
            if was_link:   # leave the clone's link as it was
                tool_link.unlink()
                tool_link.symlink_to(was_link)
            size = du(tool.home())
        rows.append({"env": name, "installer": "uv", "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
                     "mib": size >> 20, "load": start_load})
        if args.pip and not dev.LOCK[name].no_deps:
            rows.append(pip_row(dev, name))
    print(f"cache: {cache} ({du(cache) >> 20} MiB)", file=sys.stderr)
    return rows


def pip_row(dev, name: str) -> dict:
    start_load = load()
    folder = Path(tempfile.mkdtemp(prefix=f"suite-pip-{name}-"))

    def build():
        subprocess.run([sys.executable, "-m", "venv", folder], check=True)
        lock = dev.LOCK[name]
        extra = dev.torch_source(lock.path.read_text()) if lock.find_links else []
        return subprocess.run([folder / "bin" / "python", "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                               "--require-hashes", "--no-deps", *extra, "-r", lock.path], capture_output=True, text=True)

    wall, cpu, proc = timed(build)
    row = {"env": name, "installer": "pip", "wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "mib": du(folder) >> 20,
           "load": start_load, "ok": proc.returncode == 0}
    shutil.rmtree(folder, ignore_errors=True)
    return row


# pytest's last line: "=== 3 passed in 1.2s ===", or with -q "3 passed in 1.2s (0:00:01)"
SUMMARY = re.compile(r"^(?:=+ )?(\d+ (?:passed|failed|skipped|errors?|deselected).*?) in ([0-9.]+)s", re.M)


def default_paths() -> list[str]:
    tests = ROOT / "tests"
    folders = sorted(p.name for p in tests.iterdir() if p.is_dir() and any(p.glob("test_*.py")))
    return [f"tests/{f}" for f in folders] + [" ".join(sorted(f"tests/{p.name}" for p in tests.glob("test_*.py")))]


def tests(args) -> list[dict]:
    dev = dev_py()
    rows = []
    for path in args.paths or default_paths():
        cmd = [str(dev.PY), "-m", "pytest", "-q", "-p", "no:cacheprovider", *path.split(), *args.pytest]
        if args.workers:
            cmd += ["-n", str(args.workers)]
        start_load = load()
        wall, cpu, proc = timed(lambda: subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True))
        found = SUMMARY.findall(proc.stdout)
        counts = dict((k, int(n)) for n, k in re.findall(r"(\d+) (passed|failed|skipped|errors?|deselected)",
                                                          found[-1][0] if found else ""))
        rows.append({"path": path if len(path) < 40 else "tests/test_*.py", "wall_s": round(wall, 1),
                     "cpu_s": round(cpu, 1), **counts, "exit": proc.returncode, "load": start_load})
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return rows


def table(rows: list[dict]) -> str:
    keys = list(dict.fromkeys(k for r in rows for k in r))
    lines = ["  ".join(f"{k:>10}" for k in keys)]
    lines += ["  ".join(f"{str(r.get(k, '')):>10}" for k in keys) for r in rows]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    a = sub.add_parser("installs")
    a.add_argument("--cache")
    a.add_argument("--pip", action="store_true")
    a.add_argument("envs", nargs="*")
    b = sub.add_parser("tests")
    b.add_argument("--workers", type=int, default=0)
    b.add_argument("--pytest", action="append", default=[])
    b.add_argument("paths", nargs="*")
    for p in (a, b):
        p.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = installs(args) if args.what == "installs" else tests(args)
    print(json.dumps(rows, indent=1) if args.json else table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
