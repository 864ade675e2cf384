"""`runner selftest` (shell): build the model, run the three jobs, cancel one, process and judge.

Every job is `ci-tools runner run` in a child process, exactly as a workflow step runs it, into
OUT/<job>/ (a job folder like any other: `results process` reads it); the cancelled one is started
the way the Actions runner starts a step (`bash -e -c 'exec ...'`, its own process group) and
cancelled the way it cancels one (SIGINT to the group, SIGTERM 7.5 s later, SIGKILL 2.5 s after).
Then `results process` per job, `results collect`, `pareto` and `report`, each as its own command.
What they wrote is read back into `selftest.Facts`; `selftest.verdict` judges; OUT/selftest.json
holds the facts' figures and every check.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ci_tools import engines, names
from ci_tools.errors import InputError, UsageError
from ci_tools.runner import selftest as st

SELFTEST_JSON = "selftest.json"
RESULTS_JSON = "results.json"
PARETO_MD = "pareto.md"
REPORT_HTML = "report.html"
LABEL = "cit-selftest"     # what the model build's container carries (docker), so `runner cleanup` finds it


@dataclass(frozen=True)
class SelftestRequest:
    out: Path
    backend: str = "process"
    engine: str = "vllm"
    engine_versions: tuple[str, ...] = ()
    recipe: Path | None = None
    aiperf_bin: str = "aiperf"
    engine_python: str | None = None
    model_size: str = "0.5b"
    work: Path | None = None
    gpus: str | None = None
    port: int = 8000
    ready_timeout: float = 900.0
    duration: float = 60.0
    cancel_after: float = 5.0
    server_cmd: str | None = None
    runner_name: str = ""
    keep_model: bool = False


@dataclass
class SelftestReport:
    checks: list[st.Check]
    out: Path
    data: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)


def _ci_tools() -> list[str]:
    return [sys.executable, "-m", "ci_tools"]


def _engine_and_image(req: SelftestRequest) -> tuple[str, list[str], str | None, dict[str, str]]:
    """(engine, engine-versions, image, serve env): the recipe's when given, else the options'."""
    if req.recipe is None:
        if req.backend == "docker":
            raise UsageError("--backend docker runs the recipe's image: give --recipe (a recipe of the engine under "
                             "test; its engine, engine-versions, image and serve env are used)")
        return req.engine, list(req.engine_versions), None, {}
    from ci_tools.yaml.load import load_yaml_file

    data = load_yaml_file(req.recipe).data
    if not isinstance(data, dict) or not data.get("engine"):
        raise InputError(f"{req.recipe}: not a recipe (no `engine:`); pass a recipe of the engine under test")
    env = ((data.get("serve") or {}).get("env") or {}) if isinstance(data.get("serve"), dict) else {}
    versions = [str(v) for v in data.get("engine-versions") or []] or list(req.engine_versions)
    image = str(data["image"]) if data.get("image") and req.backend == "docker" else None
    if req.backend == "docker" and not image:
        raise InputError(f"{req.recipe}: has no `image:`, which --backend docker runs")
    return str(data["engine"]), versions, image, {str(k): str(v) for k, v in env.items()}


def engine_python(req: SelftestRequest, engine: str) -> str:
    """The Python that has the engine's torch: --engine-python, else the interpreter of the engine's
    launcher on PATH (a console script's #! line), else python3."""
    if req.engine_python:
        return req.engine_python
    launcher = engines.require(engine, "the self-test").LAUNCHER[0]
    path = shutil.which(launcher)
    if path and launcher not in ("python", "python3"):
        try:
            first = Path(path).read_bytes()[:256].split(b"\n", 1)[0].decode(errors="replace")
        except OSError:
            first = ""
        words = first[2:].split() if first.startswith("#!") else []
        if words and Path(words[0]).name == "env":   # #!/usr/bin/env python3
            words = words[1:]
        if words and "python" in Path(words[0]).name:
            return shutil.which(words[0]) or words[0]
    return "python3"


def build_model(req: SelftestRequest, store: Path, image: str | None, engine: str,
                say: Callable[[str], None]) -> dict:
    """The random-weight model into STORE/selftest/rand-llama, built by the engine's own Python."""
    target = store / st.MODEL
    script = store.parent / "selftest_model.py"      # a copy: run from ci_tools/runner/ its neighbours
    shutil.copyfile(Path(__file__).with_name("selftest_model.py"), script)   # would shadow stdlib modules
    if image:
        argv = ["docker", "run", "--rm", "--label", f"ci-tools.job={LABEL}", "-v", f"{store.parent}:{store.parent}",
                image, "python3", str(script), str(target), "--size", req.model_size]
    else:
        argv = [engine_python(req, engine), str(script), str(target), "--size", req.model_size]
    say(f"building the model: {shlex.join(argv)}")
    try:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=1800, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InputError(f"the model could not be built: {exc}") from None
    if res.returncode != 0:
        raise InputError(f"the model could not be built (exit {res.returncode}): "
                         + " ".join((res.stderr or res.stdout).split())[-600:])
    try:
        info = json.loads(res.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise InputError(f"the model builder printed no summary: {res.stdout[-300:]}") from None
    say(f"model {st.MODEL}: {info['parameters']:,} parameters, vocabulary {info['vocabulary']:,}, "
        f"{info['seconds']} s on {info['device']}")
    return info


def tokenizer_to_hub_cache(model_dir: Path, hub: Path, model: str) -> None:
    """The model's tokenizer as the Hugging Face hub cache entry MODEL (AIPerf 0.13 loads a tokenizer by
    repository id only, not from a folder): its files under snapshots/<revision>, refs/main naming it."""
    entry = hub / ("models--" + model.replace("/", "--"))
    revision = "0" * 40
    snap = entry / "snapshots" / revision
    snap.mkdir(parents=True, exist_ok=True)
    for f in model_dir.iterdir():
        if f.is_file() and not f.name.endswith(".safetensors"):
            shutil.copyfile(f, snap / f.name)
    (entry / "refs").mkdir(exist_ok=True)
    (entry / "refs" / "main").write_text(revision, encoding="utf-8")


def gpu_memory(devices: list[str] | None) -> list[float]:
    """memory.used per GPU now, in MiB (the sampler's query, one reading); [] when nvidia-smi cannot answer."""
    from ci_tools.runner import telemetry

    argv = telemetry.sampler_argv(devices)
    argv = [a for a in argv if not a.startswith("--loop-ms")]
    try:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return []
    samples, _ = telemetry.parse_csv(res.stdout)
    return [s["mem_used_mib"] or 0.0 for s in samples]


def _left(label: str) -> list[str]:
    """What still carries the job's label: processes, docker containers (none are stopped here)."""
    from ci_tools.runner.cleanup import labelled_processes

    found = [f"process {p}" for p in labelled_processes(label)]
    if shutil.which("docker"):
        res = subprocess.run(["docker", "ps", "-aq", "--filter", f"label=ci-tools.job={label}"], capture_output=True,
                             text=True, timeout=30)
        found += [f"container {c}" for c in res.stdout.split()] if res.returncode == 0 else []
    return found


def _read(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


class Selftest:
    def __init__(self, req: SelftestRequest, say: Callable[[str], None]):
        self.req, self.say = req, say
        self.out = req.out.resolve()
        self.devices = [d.strip() for d in req.gpus.split(",") if d.strip()] if req.gpus else None

    def run_argv(self, name: str, work: Path) -> list[str]:
        r = self.req
        argv = [*_ci_tools(), "runner", "run", "--row", str(self.out / "rows" / f"{name}.json"), "--root",
                str(self.out), "--backend", r.backend, "--out", str(self.out / name), "--aiperf-bin", r.aiperf_bin,
                "--model-store", str(work / "models"), "--hf-cache", str(work / "hf" / "hub"),
                "--dataset", st.SYNTHETIC, "--port", str(r.port),
                "--ready-timeout", f"{r.ready_timeout:g}", "--runner-name", r.runner_name,
                "--duration", f"{(r.duration if name == 'agentic' else 3 * r.ready_timeout):g}"]
        if self.devices:
            argv += ["--gpus", ",".join(self.devices)]
        if r.server_cmd:
            argv += ["--server-cmd", r.server_cmd]
        return argv

    def env(self, work: Path) -> dict[str, str]:
        # no hub access: the model and its tokenizer are local files
        return {**os.environ, "HF_HOME": str(work / "hf"), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
                "PYTHONUNBUFFERED": "1"}

    def job(self, name: str, work: Path) -> int | None:
        self.say(f"job {name}: runner run (log: {self.out / (name + '.log')})")
        with (self.out / f"{name}.log").open("w", encoding="utf-8") as log:
            res = subprocess.run(self.run_argv(name, work), stdout=log, stderr=subprocess.STDOUT, env=self.env(work),
                                 stdin=subprocess.DEVNULL)
        self.say(f"job {name}: exit {res.returncode}")
        return res.returncode

    def cancel(self, work: Path, idle: list[float]) -> st.CancelFacts | None:
        """The third job, cancelled while its client runs, as GitHub cancels a step; then the GPU memory."""
        name = "cancel"
        client_log = self.out / name / names.CLIENT_LOG
        self.say(f"job {name}: runner run, cancelled {self.req.cancel_after:g} s into its client")
        with (self.out / f"{name}.log").open("w", encoding="utf-8") as log:
            step = subprocess.Popen(["bash", "-e", "-c", "exec " + shlex.join(self.run_argv(name, work))], stdout=log,
                                    stderr=subprocess.STDOUT, env=self.env(work), stdin=subprocess.DEVNULL,
                                    start_new_session=True)
        deadline = time.monotonic() + self.req.ready_timeout + 120
        while step.poll() is None and time.monotonic() < deadline and not (
                client_log.is_file() and client_log.stat().st_size > 0):
            time.sleep(0.25)
        if step.poll() is not None or time.monotonic() >= deadline:
            if step.poll() is None:
                self._github_cancel(step)
            self.say(f"job {name}: its client never started (exit {step.returncode})")
            return None
        time.sleep(self.req.cancel_after)
        before = gpu_memory(self.devices)
        t0 = time.monotonic()
        signals = self._github_cancel(step)
        stop_s = time.monotonic() - t0
        self.say(f"job {name}: {', '.join(signals)} -> exit {step.returncode} after {stop_s:.2f} s")
        after, freed_s, waited = before, None, 30.0
        while time.monotonic() - t0 < waited:
            after = gpu_memory(self.devices)
            if after and st.freed(after, idle):
                freed_s = time.monotonic() - t0
                break
            time.sleep(0.25)
        return st.CancelFacts(tuple(signals), step.returncode, round(stop_s, 3), tuple(before), tuple(after),
                              None if freed_s is None else round(freed_s, 3), waited)

    @staticmethod
    def _github_cancel(step: subprocess.Popen) -> list[str]:
        sent = []
        for sig, wait in ((signal.SIGINT, st.CANCEL_SIGTERM_AFTER_S), (signal.SIGTERM, st.CANCEL_SIGKILL_AFTER_S)):
            try:
                os.killpg(step.pid, sig)
            except ProcessLookupError:
                break
            sent.append(sig.name)
            try:
                step.wait(timeout=wait)
                return sent
            except subprocess.TimeoutExpired:
                continue
        try:
            os.killpg(step.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        sent.append("SIGKILL")
        step.wait(timeout=30)
        return sent

    def command(self, name: str, argv: list[str], work: Path, stdout: Path | None = None) -> int | None:
        with (self.out / "results.log").open("a", encoding="utf-8") as log:
            log.write(f"$ {shlex.join(argv)}\n")
            log.flush()
            res = subprocess.run(argv, stdout=(stdout.open("w", encoding="utf-8") if stdout else log),
                                 stderr=log, env=self.env(work), stdin=subprocess.DEVNULL, timeout=900)
        self.say(f"{name}: exit {res.returncode}")
        return res.returncode

    def facts(self, codes: dict[str, int | None], cancel: st.CancelFacts | None, idle: list[float],
              left: dict[str, list[str]], commands: dict[str, int | None], errors: dict[str, str]) -> st.Facts:
        jobs = {}
        for name in st.JOBS:
            d = self.out / name
            check = d / names.NODE_CHECK_TXT
            jobs[name] = st.JobFacts(
                exit_code=codes.get(name), status=_read(d / names.STATUS_JSON), job=_read(d / names.JOB_JSON),
                result=_read(d / names.RESULT_JSON) if name != "cancel" else None,
                node_check=check.read_text(encoding="utf-8", errors="replace") if check.is_file() else "",
                left=tuple(left.get(name, [])), process_error=errors.get(name, ""))
        return st.Facts(devices=tuple(self.devices) if self.devices else None, idle_memory_mib=tuple(idle),
                        ready_limit_s=self.req.ready_timeout, jobs=jobs, cancel=cancel, commands=commands)

    def run(self) -> SelftestReport:
        r = self.req
        if self.out.exists() and any(self.out.iterdir()):
            raise UsageError(f"{self.out} exists and is not empty: the self-test writes its jobs there; give an empty "
                             "or new folder")
        engine, versions, image, env = _engine_and_image(r)
        if engine not in st.SERVE_ARGS:
            raise UsageError(f"the self-test knows how to serve its model with {', '.join(st.SERVE_ARGS)}; not {engine}")
        self.out.mkdir(parents=True, exist_ok=True)
        (self.out / "rows").mkdir()
        if r.work is not None:
            r.work.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix="ci-tools-selftest-", dir=r.work))
        try:
            return self._run(work, engine, versions, image, env)
        finally:
            if not r.keep_model:
                shutil.rmtree(work, ignore_errors=True)

    def _run(self, work: Path, engine: str, versions: list[str], image: str | None, env: dict[str, str]) -> SelftestReport:
        (self.out / "recipe.yaml").write_text(json.dumps(st.recipe(engine, versions, image, env), indent=2) + "\n",
                                              encoding="utf-8")
        for name, row in st.rows(engine, image, self.req.runner_name).items():
            (self.out / "rows" / f"{name}.json").write_text(json.dumps(row, indent=1) + "\n", encoding="utf-8")
        (work / "models").mkdir(parents=True, exist_ok=True)
        (work / "hf" / "hub").mkdir(parents=True, exist_ok=True)
        idle = gpu_memory(self.devices)
        self.say(f"GPU memory before anything started: {', '.join(f'{m:,.0f} MiB' for m in idle) or 'unknown'}")
        model = build_model(self.req, work / "models", image, engine, self.say)
        tokenizer_to_hub_cache(work / "models" / st.MODEL, work / "hf" / "hub", st.MODEL)
        codes, left = {}, {}
        for name in ("agentic", "fixed"):
            codes[name] = self.job(name, work)
            left[name] = self._left_of(name)
        cancel = self.cancel(work, idle)
        codes["cancel"] = cancel.exit_code if cancel else None
        left["cancel"] = self._left_of("cancel")
        commands: dict[str, int | None] = {}
        errors: dict[str, str] = {}
        for name in ("agentic", "fixed"):
            cmd = [*_ci_tools(), "results", "process", str(self.out / name)]
            commands[f"process {name}"] = self.command(f"results process {name}", cmd, work)
            if commands[f"process {name}"] != 0:
                errors[name] = f"results process exit {commands[f'process {name}']} (see results.log)"
        done = [str(self.out / n) for n in ("agentic", "fixed") if (self.out / n / names.RESULT_JSON).is_file()]
        if done:
            commands["collect"] = self.command("results collect", [*_ci_tools(), "results", "collect", *done, "--out",
                                                                   str(self.out / RESULTS_JSON)], work)
            commands["pareto"] = self.command("results pareto", [*_ci_tools(), "results", "pareto",
                                                                 str(self.out / RESULTS_JSON), "--format", "markdown"],
                                              work, stdout=self.out / PARETO_MD)
            commands["report"] = self.command("results report", [
                *_ci_tools(), "results", "report", str(self.out / RESULTS_JSON), "--telemetry", str(self.out),
                "--title", "runner selftest", "--out", str(self.out / REPORT_HTML)], work)
        facts = self.facts(codes, cancel, idle, left, commands, errors)
        checks = st.verdict(facts)
        doc = {"ok": all(c.ok for c in checks), "checks": [c.as_dict() for c in checks],
               "engine": engine, "backend": self.req.backend, "image": image, "model": model,
               "idle_memory_mib": idle, "cancel": asdict(cancel) if cancel else None,
               "work": str(work) if self.req.keep_model else None,
               "jobs": {n: {"exit_code": j.exit_code, "status": j.status,
                            "headline": (j.result or {}).get("headline")} for n, j in facts.jobs.items()},
               "commands": commands}
        (self.out / SELFTEST_JSON).write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
        return SelftestReport(checks, self.out, doc)

    def _left_of(self, name: str) -> list[str]:
        label = (_read(self.out / name / names.JOB_JSON) or {}).get("label")
        return _left(label) if label else []


def selftest(req: SelftestRequest, say: Callable[[str], None]) -> SelftestReport:
    return Selftest(req, say).run()
