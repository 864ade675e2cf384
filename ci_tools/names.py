"""Every name the repository, the workflows and the jobs agree on, defined once.

Repository paths, workflow files, run names, artifact names and the files of a runner job. A leaf:
imports nothing from ci_tools (anything may import it). The workflows spell some of these names in
GitHub syntax; `tests/workflows/test_security.py` checks each spelling against this module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

# --- repository paths ------------------------------------------------------------------------------
E2E_DIR = "inferencex-e2e"
CHANGELOG = f"{E2E_DIR}/perf-changelog.yaml"
CONFIGS_DIR = f"{E2E_DIR}/configs"
MASTER_GLOB = f"{CONFIGS_DIR}/*-master.yaml"
RUNNERS = f"{CONFIGS_DIR}/runners.yaml"
POLICY = f"{E2E_DIR}/ci-policy.yaml"
EVAL_THRESHOLDS = f"{E2E_DIR}/eval-thresholds.yaml"  # minimum eval scores (model prefix -> task)
ACCEPTANCE_REFERENCES = f"{E2E_DIR}/acceptance-lengths.yaml"  # measured speculative acceptance lengths
RECIPES_DIR = "recipes"
CODEOWNERS = ".github/CODEOWNERS"
REVIEW_CHECKLIST = "docs/PR_REVIEW_CHECKLIST.md"

# The collaborator permissions (GitHub's `GET .../collaborators/{login}/permission`) of a maintainer:
# who may `/use` a run, approve a fork's sweep, request profiling (`runner profile --requested-by`).
MAINTAINER_PERMISSIONS = frozenset({"admin", "maintain", "write"})

# Paths whose change after a sweep's head commit makes that sweep's results stale (reuse must refuse).
BENCHMARK_INPUT_PREFIXES = (f"{E2E_DIR}/", f"{RECIPES_DIR}/")

# Workflow files, by the file name GitHub's REST API takes as a workflow id.
WORKFLOWS_DIR = ".github/workflows"
SWEEP_WORKFLOW = "run-sweep.yml"        # PR and push sweeps; `/use` pins its runs
TRUSTED_WORKFLOW = "trusted-sweep.yml"  # maintainer-approved sweeps of a fork PR's SHA
ACCEPTANCE_WORKFLOW = "speedbench-al.yml"  # the SPEED-Bench acceptance-length collection
# Sign-offs posted as reviews, in two phases (a fork's pull_request_review run has a read-only token):
REVIEW_RECORD_WORKFLOW = "signoff-review.yml"          # untrusted: records which review to check
REVIEW_VERIFY_WORKFLOW = "signoff-review-verify.yml"   # workflow_run, trusted: verifies it and posts
REVIEW_ARTIFACT = "signoff-review"                     # the record, one JSON file
REVIEW_FILE = "review.json"

# --- run names and run-level artifacts ------------------------------------------------------------
# The trusted sweep's `run-name:` spells the same text with `${{ inputs.pr }}` and `${{ inputs.sha }}`
# (ci_tools.prbot.approval.decide formats and parses it).
TRUSTED_RUN_NAME = "trusted sweep of PR #{pr} at {sha}"
# status-card.yml's card job: one concurrency group per PR (`ci-tools bot card-pr` resolves the PR).
CARD_GROUP = "status-card-pr-{pr}"
# merge-ready.yml's ready job: one concurrency group per PR (`ci-tools reuse ready-pr` resolves it as
# `reuse ready` does), so two evaluations of one PR never run at once and the newest event decides.
READY_GROUP = "merge-ready-pr-{pr}"
READY_OPEN_PRS_GROUP = "merge-ready-open-prs"     # the daily pass over every open PR
CHANGELOG_METADATA = "changelog-metadata"   # the sweep's plan (PLAN_JSON); `/use` and ingest need it
REUSED_RUN_ARTIFACT = "reused-run"          # a push reusing a pinned `/use` run: that run's artifacts, re-uploaded
# Canary release: each passed canary job uploads `canary-passed-<job index>` holding one file,
# CANARY_FAMILY_MARKER, whose line is the hardware family the canary released.
CANARY_PASSED_PREFIX = "canary-passed-"
CANARY_PASSED_PATTERN = CANARY_PASSED_PREFIX + "*"
CANARY_FAMILY_MARKER = "family"

# --- runner jobs ----------------------------------------------------------------------------------
# Job directory (`runner run --out DIR`):
#
#   DIR/job.json                    the resolved job: row, recipe point, commands, environment
#   DIR/commands.txt                the exact commands, as `--dry-run` prints them
#   DIR/server.log                  engine stdout+stderr (router.log for DEP points)
#   DIR/client.log                  AIPerf stdout+stderr
#   DIR/status.json                 how the job ended: {"ok", "phase", "reason", "exit_code", ...}
#   DIR/node_check.txt              the pre-run node check's output
#   DIR/engine_version.txt          what the engine's version command printed (job.json `engine` has the verdict)
#   DIR/gpu_telemetry.csv           nvidia-smi samples (power, clocks, memory, utilisation) of the job
#   DIR/aiperf_artifacts/           AIPerf's --artifact-dir (profile_export.jsonl, ..._aiperf.json)
#   DIR/client_exports.sha256       sha256 of every file the client wrote, taken when it exited
#                                   (sha256sum's format; custody/record.py)
#   DIR/engine_files/               files the runner writes for the engine (TensorRT-LLM's options):
#                                   the only part of DIR a container sees, read-only
#   DIR/result.json                 written by `results process DIR`
#   DIR/evals/                      eval jobs: results_conc<N>.json per concurrency, meta_env.json, logs
#   DIR/eval_result.json            eval jobs: written by `results process DIR`
#
# GitHub artifact names per job are `<kind>_<result-filename>`; the run-level collection is
# `results_bmk` holding `results.json`.

JOB_JSON = "job.json"
COMMANDS_TXT = "commands.txt"
SERVER_LOG = "server.log"
ROUTER_LOG = "router.log"
DYNAMO_STORE = "dynamo_store"  # multi-node Dynamo: file discovery shared by every node (DYN_FILE_KV)
INSTALL_DIR = "site"           # a recipe's `install:` requirements, installed once per job (engines/install.py)
ROUTER_DIR = "router"          # a single-node router's own folder (its pinned install), all its container sees
CLIENT_LOG = "client.log"
STATUS_JSON = "status.json"
IMAGE_IMPORT_LOG = "image_import.log"   # Slurm: the job's one enroot import of its image (runner/backends.py)
NODE_CHECK_TXT = "node_check.txt"   # the pre-run node check's output (GPUs, model, disk)
ENGINE_VERSION_TXT = "engine_version.txt"   # what the engine plug-in's version command printed where it runs
GPU_TELEMETRY_CSV = "gpu_telemetry.csv"   # nvidia-smi samples for the whole job (runner/sampler.py)
GPU_TELEMETRY_META = "gpu_telemetry.meta.json"   # the sampler host's UTC offset (nvidia-smi prints local time)
# The sampler's nvidia-smi query, which is also the CSV's columns in this order: the runner's sampler
# asks for them (runner/sampler.py) and results reads them (results/telemetry.py). The query recorded
# on a real H200 (tests/data/nvidia-smi-h200/README.md).
GPU_TELEMETRY_FIELDS = (
    "timestamp", "index", "uuid", "name", "pci.bus_id", "driver_version", "pstate", "power.draw",
    "power.draw.instant", "power.limit", "enforced.power.limit", "clocks.sm", "clocks.mem", "clocks.max.sm",
    "temperature.gpu", "temperature.memory", "utilization.gpu", "utilization.memory", "memory.used",
    "memory.total", "clocks_event_reasons.active", "ecc.errors.uncorrected.volatile.total")
AIPERF_DIR = "aiperf_artifacts"
# Chain of custody (custody/record.py): the client's exports are hashed the moment it exits, into this
# file of the job directory, which no container mounts; its own sha256 is `runner run`'s step output
# EXPORT_SHA256_OUTPUT, which `results process --export-sha256` checks the file against.
EXPORT_RECORD = "client_exports.sha256"
EXPORT_SHA256_OUTPUT = "export-sha256"
ENGINE_FILES_DIR = "engine_files"
AIPERF_TMP = "aiperf_tmp"  # AIPerf's memory-mapped dataset files; removed when the job ends
PROFILE_JSONL = "profile_export.jsonl"
PROFILE_JSON = "profile_export_aiperf.json"
RESULT_JSON = "result.json"
# eval jobs (ci_tools.evals): the harness's files under DIR/evals/, the judged result beside job.json
EVAL_DIR = "evals"
EVAL_MANIFEST = "meta_env.json"            # eval_concs / completed_eval_concs / failed_eval_concs
EVAL_RESULTS_PATTERN = "results_conc{conc}.json"
EVAL_HARNESS_RESULTS = "harness_results.json"   # what a `command` harness writes ({results})
EVAL_RESULT_JSON = "eval_result.json"
COLLECTION_JSON = "results.json"

# AIPerf files too large or useless to upload (the per-request export stays: it is the evidence)
UPLOAD_EXCLUDE = (f"{AIPERF_DIR}/inputs.json", f"{AIPERF_DIR}/profile_export_raw.jsonl", f"{AIPERF_TMP}/",
                  # multi-node jobs with several concurrencies: one AIPerf directory per conc<N>/
                  f"*/{AIPERF_DIR}/inputs.json", f"*/{AIPERF_DIR}/profile_export_raw.jsonl",
                  f"{DYNAMO_STORE}/", f"{INSTALL_DIR}/", f"{ROUTER_DIR}/{INSTALL_DIR}/")

ARTIFACT_KINDS = {
    "result": "bmk",            # result.json (valid or not; `results collect` filters)
    "job": "job",               # the whole job directory minus UPLOAD_EXCLUDE
    "server-logs": "server_logs",
}
COLLECTION_ARTIFACT = "results_bmk"
# `runner profile`: the engine's per-rank traces, the merged trace and its README under DIR/profile_traces/,
# uploaded as profile_<result-filename>
PROFILE_TRACE_DIR = "profile_traces"
PROFILE_ARTIFACT_PREFIX = "profile_"
# measured speculative acceptance (runner/acceptance.py): the engine's metric bodies before and after the
# client window under DIR/acceptance/, the length in DIR/acceptance.json; the SPEED-Bench collection
# uploads each cell as acceptance_<cell id> and `config acceptance-update` reads them back
ACCEPTANCE_DIR = "acceptance"
ACCEPTANCE_JSON = "acceptance.json"
ACCEPTANCE_ARTIFACT_PREFIX = "acceptance_"
# the sweep report, one self-contained HTML file (results report), uploaded unzipped (upload-artifact v7,
# `archive: false`: the file's name is the artifact's), so that GitHub opens it in the browser
REPORT_ARTIFACT = "sweep-report.html"
# The run's eval verdict, said by the artifact's name (ci_tools.evals.gate; `/use` reads the names)
EVAL_VERDICT_ARTIFACTS = {"passed": "evals_passed", "failed": "evals_failed", "none": "evals_none"}
EVAL_VERDICT_JSON = "eval-verdict.json"
EVAL_TABLE_MD = "evals.md"
PLAN_JSON = "plan.json"    # the sweep's plan inside the changelog-metadata artifact


def artifact_name(kind: str, result_filename: str) -> str:
    return f"{ARTIFACT_KINDS[kind]}_{result_filename}"


def result_filename(row: dict, runner_name: str = "") -> str:
    """Unique, readable name of one job's results (InferenceX's RESULT_FILENAME, single node)."""
    dpa = "true" if row.get("dp-attn") else "false"
    base = (f"{row.get('exp-name', 'run')}_{row.get('precision', '')}_{row.get('framework', '')}"
            f"_tp{row.get('tp')}-ep{row.get('ep', 1)}-dpa{dpa}_spec-{row.get('spec-decoding', 'none')}"
            f"_conc{row.get('conc')}")
    return _finish(base, row, runner_name)


CANARY_SMOKE_SUFFIX = "_canary-smoke"


def _finish(base: str, row: Mapping[str, Any], runner_name: str) -> str:
    # a smoke canary runs the same point as a full job of the same sweep: its files and artifacts
    # must not collide with (or replace) the point's own
    if row.get("canary") == "smoke":
        base += CANARY_SMOKE_SUFFIX
    if runner_name:
        base += f"_{runner_name}"
    return base.replace("/", "-").replace(" ", "-")


def github_outputs(result_filename: str, out_dir: str) -> dict[str, str]:
    """Step outputs of `runner run` (written to $GITHUB_OUTPUT before anything starts, so that a
    cancelled or failed job can still upload under the right names)."""
    return {
        "result-filename": result_filename,
        "out-dir": out_dir,
        "artifact-result": artifact_name("result", result_filename),
        "artifact-job": artifact_name("job", result_filename),
        "artifact-server-logs": artifact_name("server-logs", result_filename),
    }


# The checks a repository requires in branch protection (docs/workflows.md, "Checks to require"), each
# with the workflow and job it comes from: a job's own check (by the job's name) or the check run a
# command of that job writes. Each reports on every PR and on a merge queue's group
# (tests/workflows/test_merge_group.py): a required check that never reports blocks merging.
REQUIRED_CHECKS = {
    "changelog lint": ("changelog.yml", "lint"),
    "tests": ("toolkit-ci.yml", "tests"),
    "ci-tools / ready to merge": ("merge-ready.yml", "ready"),
    "codeowner-signoff-verify": ("signoff-verify.yml", "merge-group"),
}
