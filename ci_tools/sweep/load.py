"""Reading the sweep-label policy from the working tree or from ci-tools' own package (shell).

`labels.py` turns a policy file's text into a `Policy`; this module finds the text: the
repository's `inferencex-e2e/ci-policy.yaml`, else the default shipped beside this module. Plans read
the policy from git instead (`sweep/inputs.py`), at the head being planned.
"""

from __future__ import annotations

from pathlib import Path

from ci_tools import names, resources
from ci_tools.sweep.labels import Policy, policy_from_doc, policy_from_text
from ci_tools.yaml.load import load_yaml_file

DEFAULT_POLICY_RESOURCE = "default-ci-policy.yaml"  # in this package: ci_tools/sweep/
DEFAULT_POLICY_NAME = f"ci-tools' default policy (ci_tools/sweep/{DEFAULT_POLICY_RESOURCE})"


def load_policy(root: Path, path: Path | None = None) -> Policy:
    """The policy file of the repository at `root` (or `path`). Shape errors are located InputErrors."""
    return policy_from_doc(load_yaml_file(path or root / names.POLICY, str(path or names.POLICY)))


def default_policy_text() -> str:
    """The text of the policy ci-tools ships, for a repository that has none of its own."""
    return resources.text("ci_tools.sweep", DEFAULT_POLICY_RESOURCE)


def default_policy() -> Policy:
    return policy_from_text(default_policy_text(), DEFAULT_POLICY_NAME)


def load_policy_or_default(root: Path) -> tuple[Policy, str | None]:
    """(policy, note): the working tree's policy file, else the default with a note saying so."""
    if not (root / names.POLICY).exists():
        return default_policy(), f"no {names.POLICY} in {root}: using {DEFAULT_POLICY_NAME}"
    return load_policy(root), None
