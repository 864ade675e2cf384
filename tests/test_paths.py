"""Names in ci_tools/paths.py point at files the repository has."""

from pathlib import Path

from ci_tools import paths

REPO = Path(__file__).resolve().parents[1]


def test_workflow_names_are_workflow_files():
    for name in (paths.SWEEP_WORKFLOW, paths.TRUSTED_WORKFLOW, paths.REVIEW_RECORD_WORKFLOW,
                 paths.REVIEW_VERIFY_WORKFLOW):
        assert (REPO / paths.WORKFLOWS_DIR / name).is_file(), name


def test_repository_paths_exist():
    for rel in (paths.CHANGELOG, paths.CONFIGS_DIR, paths.RUNNERS, paths.POLICY, paths.RECIPES_DIR,
                paths.CODEOWNERS, paths.REVIEW_CHECKLIST):
        assert (REPO / rel).exists(), rel
    assert sorted(REPO.glob(paths.MASTER_GLOB)), paths.MASTER_GLOB
