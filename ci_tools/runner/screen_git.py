"""The plan's servability screen, with the recipes read from git at the planned head (adapter).

`plan` decides from git objects only, never the working tree: the recipes the selected master entries
name are read at the same head as the masters, then `servable.screen_for` decides (pure).

Every approved row goes to `runner run`, which serves a row from its entry's recipe only: a row
without a recipe is refused here, with the fix, even when the repository has no recipes/ folder at
all (before, such a row was approved and then refused on the GPU). A repository whose rows are served
by something else (InferenceX's own launch scripts, a replay of its history) says so explicitly with
`plan --no-runner-screen`; nothing is inferred from which files happen to exist.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Mapping

from ci_tools.errors import InputError

if TYPE_CHECKING:   # for the annotations: each reader loads when it is used, as below
    from ci_tools.config.recipe import Recipe
    from ci_tools.gitio import Git
    from ci_tools.runner.servable import Refusal
    from ci_tools.sweep.plan import Masters
    from ci_tools.sweep.row import MatrixRow


def recipes_at(git: Git, head: str, entries: Mapping[str, Mapping[str, Any]]) -> dict[str, Recipe | str]:
    """recipe path -> loaded `Recipe`, or the reason it cannot be read, for every entry's `recipe:`."""
    from ci_tools.config.recipe import Recipe
    from ci_tools.yaml.located import load_yaml_text

    wanted = sorted({e["recipe"] for e in entries.values()
                     if isinstance(e, Mapping) and isinstance(e.get("recipe"), str)})
    if not wanted:
        return {}
    blobs = git.show_many(head, wanted)
    out: dict[str, Recipe | str] = {}
    for path in wanted:
        blob = blobs.get(path)
        if blob is None:
            out[path] = f"no such file at {head}"
            continue
        try:
            doc = load_yaml_text(blob.decode("utf-8"), path)
        except UnicodeDecodeError:
            out[path] = "not UTF-8 text"
            continue
        except InputError as exc:
            out[path] = str(exc)
            continue
        out[path] = Recipe(doc.file, doc.data, doc) if isinstance(doc.data, dict) else "not a mapping"
    return out


def screen_at(git: Git, head: str, masters: Masters) -> Callable[[str, MatrixRow], list[Refusal]]:
    """`plan_sweep(screen=...)` for the head's masters (a `sweep.plan.Masters`)."""
    from ci_tools.runner.servable import screen_for

    return screen_for(masters.entries, recipes_at(git, head, masters.entries), masters.hardware, evals_at(git, head))


def evals_at(git: Git, head: str):
    """The `evals:` section of the policy file at `head` (the shipped default's when the repository has
    no policy file); None when it has none or it is malformed (eval rows are then refused, named)."""
    from ci_tools import names
    from ci_tools.errors import InputError
    from ci_tools.evals.policy import policy_from_doc
    from ci_tools.yaml.located import load_yaml_text

    blob = git.show(head, names.POLICY)
    if blob is None:
        from ci_tools.sweep.load import DEFAULT_POLICY_NAME, default_policy_text

        text, name = default_policy_text(), DEFAULT_POLICY_NAME
    else:
        text, name = blob.decode("utf-8", "replace"), names.POLICY
    try:
        return policy_from_doc(load_yaml_text(text, name))
    except InputError:
        return None
