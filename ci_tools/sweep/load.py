"""Reading the sweep-label policy from the working tree or from ci-tools' own package, and the
canary markers the release job downloaded (shell).

`labels.py` turns a policy file's text into a `Policy`; this module finds the text: the
repository's `inferencex-e2e/ci-policy.yaml`, else the default shipped beside this module. Plans read
the policy from git instead (`sweep/inputs.py`), at the head being planned.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from ci_tools import names, resources
from ci_tools.errors import Finding, InputError
from ci_tools.sweep.labels import Policy, policy_from_doc, policy_from_text
from ci_tools.yaml.load import load_yaml_file
from ci_tools.yaml.located import YamlDoc

DEFAULT_POLICY_RESOURCE = "default-ci-policy.yaml"  # in this package: ci_tools/sweep/
DEFAULT_POLICY_NAME = f"ci-tools' default policy (ci_tools/sweep/{DEFAULT_POLICY_RESOURCE})"


def load_policy(root: Path, path: Path | None = None) -> Policy:
    """The policy file of the repository at `root` (or `path`). Shape errors are located InputErrors."""
    return policy_from_doc(load_yaml_file(path or root / names.POLICY, str(path or names.POLICY)))


# ci-tools' default policy is the ci-tools repository's own inferencex-e2e/ci-policy.yaml: one file, no
# copy to keep in step. An installed package carries it (setup.py writes it into the wheel); a checkout
# or an editable install, which has no built copy, reads the repository file itself.
CHECKOUT_POLICY = Path(__file__).resolve().parents[2] / names.POLICY


def default_policy_text() -> str:
    """The text of the policy ci-tools ships, for a repository that has none of its own."""
    try:
        return resources.text("ci_tools.sweep", DEFAULT_POLICY_RESOURCE)
    except FileNotFoundError:
        pass
    if CHECKOUT_POLICY.is_file():
        return CHECKOUT_POLICY.read_text(encoding="utf-8")
    raise InputError(f"{DEFAULT_POLICY_NAME} is missing from this installation of ci-tools",
                     findings=[Finding(DEFAULT_POLICY_NAME, None, None, "the package has no default policy",
                                       "reinstall ci-tools from a release or a checkout (pip install ci-tools); "
                                       f"or give the repository its own {names.POLICY}")])


def default_policy() -> Policy:
    return policy_from_text(default_policy_text(), DEFAULT_POLICY_NAME)


def load_policy_or_default(root: Path) -> tuple[Policy, str | None]:
    """(policy, note): the working tree's policy file, else the default with a note saying so."""
    if not (root / names.POLICY).exists():
        return default_policy(), f"no {names.POLICY} in {root}: using {DEFAULT_POLICY_NAME}"
    return load_policy(root), None


def canary_markers(folder: Path) -> dict[str, str | None]:
    """Artifact folder name -> the text of its canary marker, for each `canary-passed-*` folder that
    download-artifact left in `folder` (none when no canary passed: the folder may not exist)."""
    if not folder.is_dir():
        return {}
    out: dict[str, str | None] = {}
    for sub in sorted(folder.glob(names.CANARY_PASSED_PATTERN)):
        marker = sub / names.CANARY_FAMILY_MARKER
        # a marker is one short line; a larger file is not one (read only its start)
        out[sub.name] = marker.read_bytes()[:1024].decode("utf-8", "replace") if marker.is_file() else None
    return out


def policy_section(path: Path | None, section: str, findings: Callable[[YamlDoc], list]) -> object:
    """One section of the policy file (`path`; else inferencex-e2e/ci-policy.yaml in the current
    directory; else ci-tools' default policy), checked by the section's own `findings`: a bad key or
    value is a located error, never ignored. None when the file has no such section."""
    from ci_tools.yaml.located import load_yaml_text

    if path is not None and not path.is_file():
        raise InputError(f"{path}: no such policy file", exit_code=2)
    if path is None and Path(names.POLICY).is_file():
        path = Path(names.POLICY)
    doc = load_yaml_file(path, str(path)) if path is not None else load_yaml_text(default_policy_text(),
                                                                                   DEFAULT_POLICY_NAME)
    problems = findings(doc)
    if problems:
        raise InputError(f"{doc.file}: the `{section}:` section is not valid", findings=problems)
    return doc.data.get(section) if isinstance(doc.data, dict) else None
