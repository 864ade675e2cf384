"""What the welcome comment says about this repository's labels (pure, from the policy)."""

from __future__ import annotations

from ci_tools import names
from ci_tools.sweep.labels import Policy
from ci_tools.prbot.messages import label_what
from ci_tools.prbot.signoff.decide import CHECK, PHRASE


def welcome_values(policy: Policy, repo: str) -> dict:
    primaries = sorted(policy.primary)
    recommended = next((p for p in primaries if policy.primary[p].recommended), primaries[0])
    what, what_zh = label_what(policy.primary[recommended])
    others = [p for p in primaries if p != recommended]
    blockers = [m for m in sorted(policy.modifiers) if policy.modifiers[m].blocks_reuse]
    code = lambda names, sep: sep.join(f"`{n}`" for n in names)  # noqa: E731
    return dict(checklist_url=f"https://github.com/{repo}/blob/main/{names.REVIEW_CHECKLIST}", phrase=PHRASE,
                signoff_context=CHECK, changelog=names.CHANGELOG, recommended=recommended,
                recommended_what=what, recommended_what_zh=what_zh,
                other_primaries="; ".join(f"`{p}` ({label_what(policy.primary[p])[0]})" for p in others),
                other_primaries_zh="；".join(f"`{p}`（{label_what(policy.primary[p])[1]}）" for p in others),
                modifiers=code(sorted(policy.modifiers), ", "), modifiers_zh=code(sorted(policy.modifiers), "、"),
                blockers=code(blockers, ", ") or "none", blockers_zh=code(blockers, "、") or "无")
