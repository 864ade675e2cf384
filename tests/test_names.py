"""Names in ci_tools/names.py point at files the repository has (the workflows' spellings of artifact
and run names are checked in tests/workflows/)."""

from pathlib import Path

from ci_tools import names

REPO = Path(__file__).resolve().parents[1]


def test_workflow_names_are_workflow_files():
    for name in (names.SWEEP_WORKFLOW, names.TRUSTED_WORKFLOW, names.REVIEW_RECORD_WORKFLOW,
                 names.REVIEW_VERIFY_WORKFLOW):
        assert (REPO / names.WORKFLOWS_DIR / name).is_file(), name


def test_repository_paths_exist():
    for rel in (names.CHANGELOG, names.CONFIGS_DIR, names.RUNNERS, names.POLICY, names.RECIPES_DIR,
                names.CODEOWNERS, names.REVIEW_CHECKLIST):
        assert (REPO / rel).exists(), rel
    assert sorted(REPO.glob(names.MASTER_GLOB)), names.MASTER_GLOB
