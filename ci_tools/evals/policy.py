"""What an eval row runs (pure): the `evals:` section of ci-policy.yaml, and the harness commands of one
row, one run per eval concurrency.

A suite (per scenario: fixed-seq-len rows run lm-eval, agentic-coding rows an agentic harness) names a
harness and its tasks (shots, limit, local task definitions). Eval concurrencies come from the policy
(`concurrencies`, a batched eval), else the row's `eval-conc` (multi-node picks), else its `conc`.

Harness result contract (what `score.py` reads, per concurrency): a JSON object
`{"results": {<task>: {"exact_match,<filter>": <score>, ...}}}`, lm-eval's own results format.
lm-eval writes it itself; a `command` harness must write it to `{results}`.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from ci_tools import names
from ci_tools.errors import Finding, InputError
from ci_tools.sweep.row import MatrixRow

AGENTIC = "agentic-coding"
FIXED = "fixed-seq-len"
DEFAULT_TIMEOUT_S = 6 * 3600
LM_EVAL_SEED = 42
PLACEHOLDERS = ("base_url", "model", "conc", "tasks", "limit", "work_dir", "results")

# Environment that makes an engine fake speculative acceptance (spec §6): never on an eval server.
# SGLang's SGLANG_SIMULATE_ACC_{LEN,METHOD,TOKEN_MODE}, TRT-LLM's forced accepted-token count, and
# InferenceX's launcher switch SYNTHETIC_ACCEPTANCE[_LENGTH] (a recipe copied from there may carry it).
SIMULATED_ACCEPTANCE_ENV_PREFIXES = ("SGLANG_SIMULATE_ACC_", "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS",
                                     "SYNTHETIC_ACCEPTANCE")


@dataclass(frozen=True)
class Task:
    name: str
    num_fewshot: int | None = None
    limit: int | None = None
    include_path: str | None = None


@dataclass(frozen=True)
class Harness:
    name: str
    type: str                      # "lm-eval" | "command"
    api: str = "local-chat-completions"
    command: str = ""
    version: str = ""
    extra_args: tuple[str, ...] = ()
    requires: str = ""


@dataclass(frozen=True)
class Suite:
    scenario: str
    harness: Harness
    tasks: tuple[Task, ...]


@dataclass(frozen=True)
class EvalPolicy:
    suites: dict[str, Suite]
    concurrencies: tuple[int, ...] = ()
    timeout_s: float = DEFAULT_TIMEOUT_S
    file: str = ""


def is_eval_row(row: MatrixRow) -> bool:
    return row.is_eval


def policy_from_doc(doc) -> EvalPolicy:
    """The `evals:` section of a loaded ci-policy.yaml (a YamlDoc); located InputErrors for bad input."""
    from ci_tools.config import schemas

    data = doc.data if isinstance(doc.data, dict) else {}
    section = data.get("evals")
    if section is None:
        raise InputError(f"{doc.file}: no `evals:` section, so eval rows cannot be run", findings=[Finding(
            doc.file, None, None, "no `evals:` section: eval rows have no harness or tasks",
            "add evals: {suites: ..., harnesses: ...} (see ci_tools/schemas/ci-policy.schema.json)")])
    # the yes/no interpreter first: plan reads this section and must not pay jsonschema's import
    quick = schemas.is_valid("ci-policy", "evals", section)
    problems = [] if quick else schemas.check(doc, section, "ci-policy", "evals", ("evals",))
    harnesses: dict[str, Harness] = {}
    for name, h in ((section.get("harnesses") or {}) if not problems else {}).items():
        harnesses[name] = Harness(name=name, type=h["type"], api=h.get("api", "local-chat-completions"),
                                  command=h.get("command", ""), version=h.get("version", ""),
                                  extra_args=tuple(h.get("extra-args") or ()), requires=h.get("requires", ""))
        if h["type"] == "command":
            problems += _template_problems(doc, ("evals", "harnesses", name, "command"), h["command"])
    suites: dict[str, Suite] = {}
    for scenario, s in ((section.get("suites") or {}) if not problems else {}).items():
        harness = harnesses.get(s["harness"])
        if harness is None:
            problems.append(doc.finding(("evals", "suites", scenario, "harness"),
                                        f"suite {scenario} names harness {s['harness']!r}, which is not under "
                                        "evals.harnesses", f"define it, or use one of: {', '.join(sorted(harnesses))}"))
            continue
        tasks = tuple(Task(t["name"], t.get("num-fewshot"), t.get("limit"), t.get("include-path")) for t in s["tasks"])
        suites[scenario] = Suite(scenario, harness, tasks)
    if problems:
        raise InputError(f"{doc.file}: invalid `evals:` section ({len(problems)} problem(s))", findings=problems)
    return EvalPolicy(suites=suites, concurrencies=tuple(section.get("concurrencies") or ()),
                      timeout_s=float(section.get("timeout-seconds", DEFAULT_TIMEOUT_S)), file=doc.file)


def _template_problems(doc, path: tuple, template: str) -> list[Finding]:
    import string

    try:
        shlex.split(template)
        names = {f for _, f, _, _ in string.Formatter().parse(template) if f is not None}
    except ValueError as exc:
        return [doc.finding(path, f"the harness command cannot be parsed: {exc}", "check quotes and braces")]
    unknown = sorted(n for n in names if n not in PLACEHOLDERS)
    found = []
    if unknown:
        found.append(doc.finding(path, f"unknown placeholder(s) {', '.join('{' + n + '}' for n in unknown)} in the "
                                       "harness command", f"use only {', '.join('{' + n + '}' for n in PLACEHOLDERS)}"))
    if "results" not in names:
        found.append(doc.finding(path, "the harness command never names {results}, so its scores cannot be found",
                                 "pass {results} to the harness as the file it writes its scores to"))
    return found


def suite_for(row: MatrixRow, policy: EvalPolicy) -> Suite:
    scenario = AGENTIC if row.is_agentic else FIXED
    suite = policy.suites.get(scenario)
    if suite is None:
        raise InputError(f"{policy.file}: no eval suite for {scenario} rows (evals.suites.{scenario}); "
                         f"the row {row.config_key or ''} conc {row.get('conc')} cannot be evaluated")
    return suite


def eval_concurrencies(row: MatrixRow, policy: EvalPolicy) -> list[int]:
    """The policy's (a batched eval), else the concurrency eval marking picked, else the row's highest."""
    if policy.concurrencies:
        return list(policy.concurrencies)
    if row.eval_conc is not None:
        return [row.eval_conc]
    return [max(row.concs)]


def split_simulated_acceptance(env: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """(env without simulated acceptance, the names removed): an eval verifies speculation for real (W7)."""
    kept = {k: v for k, v in env.items() if not k.startswith(SIMULATED_ACCEPTANCE_ENV_PREFIXES)}
    return kept, sorted(set(env) - set(kept))


@dataclass
class HarnessRun:
    conc: int
    task: str                 # one task (lm-eval) or the comma-joined tasks (command harness)
    argv: list[str]
    output: str               # lm-eval: --output_path dir (results_*.json below it); command: {results}
    env: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"conc": self.conc, "task": self.task, "argv": self.argv, "output": self.output, "env": self.env}


def _lm_eval_run(suite: Suite, task: Task, conc: int, *, model: str, base_url: str, lm_eval_bin: str,
                 root: str, out_dir: str) -> HarnessRun:
    h = suite.harness
    output = f"{out_dir}/{names.EVAL_DIR}/lm_eval_{task.name}_conc{conc}"
    args = ",".join([f"model={model}", f"base_url={base_url}/v1/chat/completions", f"num_concurrent={conc}",
                     "max_retries=3", "tokenized_requests=False"])
    argv = [lm_eval_bin, "run", "--model", h.api, "--model_args", args, "--tasks", task.name,
            "--apply_chat_template", "--output_path", output, "--log_samples", "--seed", str(LM_EVAL_SEED)]
    if task.num_fewshot is not None:
        argv += ["--num_fewshot", str(task.num_fewshot)]
    if task.limit is not None:
        argv += ["--limit", str(task.limit)]
    if task.include_path:
        argv += ["--include_path", f"{root}/{task.include_path}"]
    return HarnessRun(conc, task.name, argv + list(h.extra_args), output)


def _command_run(suite: Suite, conc: int, *, model: str, base_url: str, out_dir: str) -> HarnessRun:
    limits = {t.limit for t in suite.tasks if t.limit is not None}
    tasks = ",".join(t.name for t in suite.tasks)
    work = f"{out_dir}/{names.EVAL_DIR}/work_conc{conc}"
    results = f"{work}/{names.EVAL_HARNESS_RESULTS}"
    values = {"base_url": base_url, "model": model, "conc": str(conc), "tasks": tasks,
              "limit": str(min(limits)) if limits else "0", "work_dir": work, "results": results}
    argv = [word.format(**values) for word in shlex.split(suite.harness.command)]
    return HarnessRun(conc, tasks, argv, results)


def harness_runs(row: MatrixRow, policy: EvalPolicy, *, model: str, base_url: str, lm_eval_bin: str, root: str,
                 out_dir: str) -> list[HarnessRun]:
    """Every harness run of the row, in order: per concurrency, per task (lm-eval) or once (command)."""
    suite = suite_for(row, policy)
    runs: list[HarnessRun] = []
    for conc in eval_concurrencies(row, policy):
        if suite.harness.type == "lm-eval":
            runs += [_lm_eval_run(suite, t, conc, model=model, base_url=base_url, lm_eval_bin=lm_eval_bin,
                                  root=root, out_dir=out_dir) for t in suite.tasks]
        else:
            runs.append(_command_run(suite, conc, model=model, base_url=base_url, out_dir=out_dir))
    return runs


def eval_spec(row: MatrixRow, policy: EvalPolicy, runs: list[HarnessRun], stripped: list[str]) -> dict:
    """The eval part of job.json: what the driver runs and what `results process` checks."""
    suite = suite_for(row, policy)
    h = suite.harness
    return {
        "suite": suite.scenario,
        "harness": {"name": h.name, "type": h.type, "version": h.version, "requires": h.requires},
        "tasks": [t.name for t in suite.tasks],
        "concurrencies": eval_concurrencies(row, policy),
        "model-prefix": row.model_prefix,
        "timeout-s": policy.timeout_s,
        "acceptance": {"simulated": False, "removed-env": stripped},
        "runs": [r.as_dict() for r in runs],
    }


def config_findings(checked, findings: list[Finding]) -> list[Finding]:
    """`config validate`'s checks of the eval files (a `config.validate.UpperCheck`): eval-thresholds.yaml
    and the policy's `evals:` section."""
    from ci_tools.evals import thresholds

    src = checked.src
    found = thresholds.check(src.thresholds) if src.thresholds is not None else []
    if src.policy is not None and isinstance(src.policy.data, dict) and "evals" in src.policy.data:
        try:
            policy_from_doc(src.policy)
        except InputError as exc:
            found += exc.findings or [Finding(src.policy.file, None, None, exc.message)]
    return found
