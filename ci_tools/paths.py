"""Where things live in the benchmark repository. Defined once; everything else imports from here."""

from __future__ import annotations

E2E_DIR = "inferencex-e2e"
CHANGELOG = f"{E2E_DIR}/perf-changelog.yaml"
CONFIGS_DIR = f"{E2E_DIR}/configs"
MASTER_GLOB = f"{CONFIGS_DIR}/*-master.yaml"
RUNNERS = f"{CONFIGS_DIR}/runners.yaml"
POLICY = f"{E2E_DIR}/ci-policy.yaml"
RECIPES_DIR = "recipes"
CODEOWNERS = ".github/CODEOWNERS"
REVIEW_CHECKLIST = "docs/PR_REVIEW_CHECKLIST.md"

# Paths whose change after a sweep's head commit makes that sweep's results stale (reuse must refuse).
BENCHMARK_INPUT_PREFIXES = (f"{E2E_DIR}/", f"{RECIPES_DIR}/")

# Workflow files, by the file name GitHub's REST API takes as a workflow id.
WORKFLOWS_DIR = ".github/workflows"
SWEEP_WORKFLOW = "run-sweep.yml"        # PR and push sweeps; `/use` pins its runs
TRUSTED_WORKFLOW = "trusted-sweep.yml"  # maintainer-approved sweeps of a fork PR's SHA
# Sign-offs posted as reviews, in two phases (a fork's pull_request_review run has a read-only token):
REVIEW_RECORD_WORKFLOW = "signoff-review.yml"          # untrusted: records which review to check
REVIEW_VERIFY_WORKFLOW = "signoff-review-verify.yml"   # workflow_run, trusted: verifies it and posts
REVIEW_ARTIFACT = "signoff-review"                     # the record, one JSON file
REVIEW_FILE = "review.json"
