"""The config area's shell: finds and reads the files that `masters`, `recipe` and `validate` decide on.

Everything that touches the file system for config data lives here; the modules it feeds take parsed
documents. `load_sources` never raises for a file it cannot read or parse: that file becomes a finding,
so `config validate` reports every broken file at once.
"""

from __future__ import annotations

import glob
import os
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from ci_tools import names
from ci_tools.config.masters import MasterSet, merge_master_docs
from ci_tools.config.recipe import Recipe
from ci_tools.errors import Finding, InputError, UsageError
from ci_tools.yaml.load import load_yaml_file, read_text
from ci_tools.yaml.located import YamlDoc, load_yaml_text

if TYPE_CHECKING:  # `matrix` and the runner read masters through here: keep validate's imports off that path
    from ci_tools.config.crossfile import Change
    from ci_tools.config.validate import Report, Sources


def display(path: Path, root: Path | None) -> str:
    """The name a finding shows: repository-relative under `root`, else the path as given."""
    if root is not None:
        try:
            return path.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            pass
    return str(path)


def default_master_paths(root: Path) -> list[Path]:
    return sorted(Path(p) for p in glob.glob(str(root / names.MASTER_GLOB)))


def read_masters(files: list[Path], root: Path | None = None) -> MasterSet:
    if not files:
        raise InputError("no master config files found",
                         findings=[Finding(names.MASTER_GLOB, None, None, "no master config files found",
                                           "run from the repository root, or pass --root / --master")])
    return merge_master_docs([load_yaml_file(path, display(path, root)) for path in files])


def read_runners(path: Path, root: Path | None = None) -> YamlDoc:
    return load_yaml_file(path, display(path, root))


def load_image_policy(path: Path) -> tuple[tuple[str, ...], str]:
    """(`images.allowed`, file) of a trusted policy file (`runner run` / `plan --image-policy`): the
    workflow commit's policy, so a fork's change cannot allow its own registry. A missing file or one
    without an allowlist is refused: nothing could be checked."""
    from ci_tools.config.images import allowlist_of, no_allowlist

    if not path.is_file():
        raise InputError(f"{path}: image policy not found; no image can be checked without it", exit_code=2)
    patterns = allowlist_of(load_yaml_file(path, str(path)).data)
    if patterns is None:
        raise InputError(no_allowlist(str(path)))
    return patterns, str(path)


def resolves_outside(path: Path, root: Path) -> Path | None:
    """Where PATH really is, when that is outside ROOT (a symbolic link, or `..`, out of the repository);
    None when it lies inside. A file outside was never part of the change under review."""
    real = Path(os.path.realpath(path))
    try:
        real.relative_to(os.path.realpath(root))
    except ValueError:
        return real
    return None


def outside_finding(shown: str, real: Path) -> Finding:
    return Finding(shown, None, None,
                   f"a symbolic link to {real}, outside the repository: what it points at is no file of the change "
                   "under review, and a runner would read whatever that path holds on its host",
                   "commit the file itself (a symbolic link to another file inside the repository is fine)")


def load_recipe(path: Path | str, shown: str | None = None, root: Path | None = None) -> Recipe:
    """The recipe at PATH; with ROOT, one that resolves outside it is refused (`resolves_outside`)."""
    real = resolves_outside(Path(path), root) if root is not None else None
    if real is not None:
        f = outside_finding(shown or str(path), real)
        raise InputError(f"{f.file}: {f.message}", findings=[f])
    doc = load_yaml_file(path, shown)
    if not isinstance(doc.data, dict):
        raise InputError(f"{doc.file}: a recipe must be a mapping",
                         findings=[doc.finding((), "a recipe must be a mapping with `serve` and `points`")])
    return Recipe(doc.file, doc.data, doc)


def _load(path: Path, shown: str, src: Sources, texts: dict[str, str] | None = None,
          refuse: Callable[[str, str], list[Finding]] | None = None) -> YamlDoc | None:
    """The file's document (and, with TEXTS, its text under SHOWN); None, with its findings, when unreadable
    or when REFUSE, a check of the text alone, finds something (then the costly located parse never runs)."""
    try:
        text = read_text(path, shown)
        early = refuse(text, shown) if refuse is not None else []
        if early:
            src.findings.extend(early)
            return None
        doc = load_yaml_text(text, shown)
    except InputError as exc:
        src.findings.extend(exc.findings or [Finding(shown, None, None, exc.message)])
        return None
    if texts is not None:
        texts[shown] = text
    return doc


def _repeated_rows(text: str, shown: str) -> list[Finding]:
    from ci_tools.config import duplicates

    return duplicates.findings(shown, text)


def load_sources(root: Path | None, masters: list[Path] | None = None, runners: Path | None = None) -> Sources:
    """Find and parse the inputs. With `root`, missing --master/--runners default to the repo layout,
    and recipes under root/recipes are loaded; without it, only the given files are read."""
    from ci_tools.config.validate import Sources

    src = Sources(root)
    if masters is None:
        if root is None:
            raise ValueError("load_sources needs a root or explicit master files")
        masters = default_master_paths(root)
        if not masters:
            src.findings.append(Finding(names.CONFIGS_DIR, None, None,
                                        f"no master configs found ({names.MASTER_GLOB} under {root})",
                                        "run from the repository root, or pass --root DIR or --master FILE"))
    for path in masters:
        doc = _load(path, display(path, root), src, refuse=_repeated_rows)
        if doc is not None:
            src.masters.append(doc)
        else:
            src.masters_failed += 1
    if runners is None and root is not None:
        runners = root / names.RUNNERS
        if not runners.is_file():
            src.findings.append(Finding(names.RUNNERS, None, None, "runners file not found",
                                        "every master `runner` label must be declared there; create it or pass --runners"))
            runners = None
    if runners is not None:
        src.runners = _load(runners, display(runners, root), src)
    else:
        src.notes.append("runner labels not checked: no runners file (pass --runners FILE)")
    if root is not None:
        rdir = root / names.RECIPES_DIR
        found = sorted(rdir.rglob("*")) if rdir.is_dir() else []
        for path in found:
            rel = path.relative_to(root).as_posix()
            real = resolves_outside(path, root)
            if real is not None:
                # a recipe (or a folder of them) linked from outside the repository: refused, never read
                src.findings.append(outside_finding(rel, real))
                if path.suffix in (".yaml", ".yml"):
                    src.recipe_paths.add(rel)
                continue
            if path.suffix not in (".yaml", ".yml") or not path.is_file():
                continue
            src.recipe_paths.add(rel)
            doc = _load(path, rel, src, src.recipe_texts)
            if doc is not None:
                src.recipes[rel] = doc
    else:
        src.notes.append("recipes not checked: no repository root (pass --root DIR to check recipe references)")
    if root is not None:
        _load_eval_inputs(root, src)
    return src


def _load_eval_inputs(root: Path, src: Sources) -> None:
    """The thresholds file (required) and the policy's `evals:` section (checked when present)."""
    path = root / names.EVAL_THRESHOLDS
    if path.is_file():
        src.thresholds = _load(path, names.EVAL_THRESHOLDS, src)
    else:
        src.findings.append(Finding(names.EVAL_THRESHOLDS, None, None, "eval thresholds file not found",
                                    "eval rows are scored against it: restore it (thresholds-version: 1, floor:, "
                                    "default: <task>: <minimum>)"))
    if (root / names.POLICY).is_file():
        src.policy = _load(root / names.POLICY, names.POLICY, src)
    if (root / names.ACCEPTANCE_REFERENCES).is_file():
        src.acceptance = _load(root / names.ACCEPTANCE_REFERENCES, names.ACCEPTANCE_REFERENCES, src)



def validate_root(root: Path, change: Change | None = None, upper=()) -> Report:
    """Validate a repository checkout: its masters, runners.yaml and recipes/ (and the `upper` checks
    of the floors above, `config.validate.UpperCheck`s the caller composes)."""
    from ci_tools.config.crossfile import Change
    from ci_tools.config.validate import check

    return check(load_sources(root), change or Change(), upper)


def validate_files(masters: list[Path], runners: Path | None = None, root: Path | None = None,
                   change: Change | None = None, upper=()) -> Report:
    """Validate files outside the repository layout (e.g. the InferenceX corpus)."""
    from ci_tools.config.crossfile import Change
    from ci_tools.config.validate import check

    return check(load_sources(root, masters, runners), change or Change(), upper)


def change_since(root: Path, base: str, masters: list[YamlDoc], keys: frozenset[str] = frozenset()) -> Change:
    """The Change between `base` and the working tree of the repository at `root` (`--base REF`).

    `masters` are the loaded master documents with `file` names relative to `root`."""
    from ci_tools.config.touched import change_from
    from ci_tools.gitio import Git, GitMissing

    git = Git(root)
    try:
        sha = git.rev_parse(base)
    except GitMissing as exc:
        raise UsageError(f"--base needs git: {exc.message}") from None
    except InputError:
        raise UsageError(f"--base {base}: not a commit in the git repository at {root}") from None
    try:
        files = set(git.worktree_changes(sha))
        shown = git.show_relative_many(sha, [doc.file for doc in masters if doc.file in files])
    except InputError as exc:
        raise UsageError(f"--base {base}: {exc.message}") from None
    texts = {name: (None if data is None else data.decode("utf-8", "replace")) for name, data in shown.items()}
    return change_from(base, files, masters, texts, keys)


def bump_image(root: Path, key: str, image: str) -> list:
    """`config bump-image`: rewrite the image lines of `key`'s master entry and recipes in place; the
    edits made (the changelog entry to append is the changelog floor's: the command asks it)."""
    from ci_tools.config.bumpimage import plan_bump

    masters = {str(p.relative_to(root)): p.read_text(encoding="utf-8") for p in sorted(root.glob(names.MASTER_GLOB))}
    recipes = {str(p.relative_to(root)): p.read_text(encoding="utf-8")
               for p in sorted((root / names.RECIPES_DIR).rglob("*.yaml"))}
    edits, texts = plan_bump(masters, recipes, key, image)
    for file in dict.fromkeys(e.file for e in edits):
        (root / file).write_text(texts[file], encoding="utf-8")
    return edits


def validate_flow(root: Path | None, masters: list[Path], runners: Path | None, base: str | None,
                  changed_keys: tuple[str, ...], upper: tuple = ()):
    """`config validate`: read the files (the repository's by default), work out what the change
    touched (`--base`, `--changed-key`), and check it all; `upper` are the checks of the floors above
    config, composed by the command."""
    from ci_tools.config.crossfile import Change
    from ci_tools.config.validate import check

    if root is None and (not (masters or runners) or base):
        root = Path.cwd()
    src = load_sources(root, masters or None, runners)
    change = Change(frozenset(changed_keys))
    if base:
        # `--base` compares with the working tree: of the current directory when no --root is given (above)
        change = change_since(root or Path.cwd(), base, src.masters, change.keys)
    return check(src, change, upper=upper)
