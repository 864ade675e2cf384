"""The daily self-hosted runner digest: which runners each `runners.yaml` label can count on.

Pure: GitHub's runner list (`GET /repos/{r}/actions/runners` items) and the label -> runner names
map of `inferencex-e2e/configs/runners.yaml` in, a `Digest` out. A runner named in `runners.yaml`
that GitHub does not know is *missing* (deregistered, renamed or never set up): a sweep row with
that label may wait for a machine that will never come, so it is reported next to the offline ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field

STATES = ("offline", "missing", "busy", "idle")


@dataclass(frozen=True)
class LabelRow:
    label: str
    offline: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    busy: tuple[str, ...] = ()
    idle: tuple[str, ...] = ()

    @property
    def total(self) -> int:
        return len(self.offline) + len(self.missing) + len(self.busy) + len(self.idle)

    @property
    def available(self) -> int:
        """Runners that are online (busy ones finish their job and take the next)."""
        return len(self.busy) + len(self.idle)


@dataclass(frozen=True)
class Digest:
    repo: str
    labels: tuple[LabelRow, ...]
    offline: tuple[str, ...]                    # every registered runner that is offline, sorted
    unlisted: tuple[str, ...] = ()              # registered, named under no label in runners.yaml
    registered: int = 0
    problems: tuple[str, ...] = field(default=())

    @property
    def missing(self) -> tuple[str, ...]:
        return tuple(sorted({n for row in self.labels for n in row.missing}))

    @property
    def busy(self) -> tuple[str, ...]:
        return tuple(sorted({n for row in self.labels for n in row.busy}))

    @property
    def down_labels(self) -> tuple[str, ...]:
        """Labels with no online runner: their rows cannot start at all."""
        return tuple(row.label for row in self.labels if row.total and not row.available)


def _state(runner: dict) -> str:
    if runner.get("status") != "online":
        return "offline"
    return "busy" if runner.get("busy") else "idle"


def build_digest(repo: str, runners: list[dict], expected: dict[str, list[str]]) -> Digest:
    by_name = {str(r.get("name")): r for r in runners}
    rows = []
    for label in sorted(expected):
        groups: dict[str, list[str]] = {s: [] for s in STATES}
        for name in sorted(set(expected[label])):
            groups["missing" if name not in by_name else _state(by_name[name])].append(name)
        rows.append(LabelRow(label, **{s: tuple(v) for s, v in groups.items()}))
    listed = {n for names in expected.values() for n in names}
    offline = tuple(sorted(n for n, r in by_name.items() if _state(r) == "offline"))
    unlisted = tuple(sorted(set(by_name) - listed))
    return Digest(repo=repo, labels=tuple(rows), offline=offline, unlisted=unlisted, registered=len(by_name))


def expected_runners(runners_yaml: dict) -> dict[str, list[str]]:
    """The `labels:` map of runners.yaml (label -> runner names); validated by `config validate`."""
    labels = (runners_yaml or {}).get("labels") or {}
    return {str(k): [str(n) for n in (v or [])] for k, v in labels.items()}


def as_dict(d: Digest) -> dict:
    """The digest for tools (`runner digest --format json`): each label's runners by state."""
    return {"repo": d.repo, "registered": d.registered, "down-labels": list(d.down_labels),
            "labels": [{"label": r.label, "online": r.available, "total": r.total,
                        **{s: list(getattr(r, s)) for s in STATES}} for r in d.labels],
            "offline": list(d.offline), "unlisted": list(d.unlisted)}


def _names(names: tuple[str, ...]) -> str:
    return ", ".join(f"`{n}`" for n in names) if names else "–"


def render_markdown(d: Digest, *, date: str, run_url: str = "") -> str:
    down = len(d.offline) + len(d.missing)
    head = (f"## Runner digest — {date}\n\n"
            + (f"**{len(d.offline)}/{d.registered}** self-hosted runners offline in `{d.repo}`"
               f", **{len(d.missing)}** listed in `runners.yaml` but not registered"
               if down else f"All {d.registered} self-hosted runners in `{d.repo}` are online")
            + (f" ([run]({run_url}))" if run_url else "") + ".\n")
    lines = [head]
    if d.down_labels:
        lines.append("**No online runner** for " + ", ".join(f"`{label}`" for label in d.down_labels)
                     + ": rows with these labels cannot start.\n")
    lines += ["| label | online | offline | missing | busy |", "|---|---|---|---|---|"]
    for row in d.labels:
        lines.append(f"| `{row.label}` | {row.available}/{row.total} | {_names(row.offline)} | "
                     f"{_names(row.missing)} | {_names(row.busy)} |")
    unlisted_offline = tuple(n for n in d.offline if n in d.unlisted)
    if unlisted_offline:
        lines.append(f"\nOffline and under no label in `runners.yaml`: {_names(unlisted_offline)}.")
    return "\n".join(lines) + "\n"


def digest_outputs(d: Digest, queued: int = 0) -> dict[str, str]:
    """`runner digest`'s step outputs (names in cli/runner.py GITHUB_OUTPUTS)."""
    return {"offline": str(len(d.offline)), "missing": str(len(d.missing)), "busy": str(len(d.busy)),
            "total": str(d.registered), "down-labels": ",".join(d.down_labels),
            "healthy": "true" if not (d.offline or d.missing) else "false", "queued": str(queued)}
