"""Where sweep reports live on the repository's GitHub Pages site, and which ones are kept (pure).

One page per PR sweep run at `pr-<N>/run-<id>/`, one per main sweep at `main/run-<id>/`, with an
index of main's (the baseline history). A PR keeps its newest KEEP_PER_PR runs; a closed PR's pages
go. `results publish` (report_flow) lays the site out with these; the status card links `url(...)`.
"""

from __future__ import annotations

import html
import re

KEEP_PER_PR = 3
KEEP_MAIN = 100
PAGE = "index.html"
_RUN = re.compile(r"^(pr-(\d+)|main)/run-(\d+)$")


def run_dir(pr: int | None, run_id: int) -> str:
    return f"{'main' if pr is None else f'pr-{pr}'}/run-{run_id}"


def url(site: str, pr: int | None, run_id: int) -> str:
    return f"{site.rstrip('/')}/{run_dir(pr, run_id)}/"


def default_site(repository: str) -> str:
    """GitHub Pages' own address of a repository's site (`OWNER.github.io/NAME/`; the OWNER.github.io
    repository is served at the root); a custom domain must be given (CI_TOOLS_REPORT_SITE)."""
    owner, _, name = repository.partition("/")
    if not owner or not name:
        return ""
    host = f"{owner.lower()}.github.io"
    return f"https://{host}/" if name.lower() == host else f"https://{host}/{name}/"


def site_of(given: str, enabled: str, repository: str) -> str:
    """The site the reports are on: the one given (a custom domain), else Pages' own address when
    publishing is on, else none (the card then links the report artifact)."""
    if given.strip():
        return given.strip()
    return default_site(repository) if enabled.strip().lower() in ("true", "1", "yes") else ""


def parse(path: str) -> tuple[int | None, int] | None:
    """(pr or None for main, run id) of a run directory, None for anything else."""
    m = _RUN.match(path.strip("/"))
    if not m:
        return None
    return (int(m.group(2)) if m.group(2) else None), int(m.group(3))


def prune(dirs: list[str], open_prs: set[int] | None = None, keep_per_pr: int = KEEP_PER_PR,
          keep_main: int = KEEP_MAIN) -> list[str]:
    """The run directories to delete: beyond each PR's newest `keep_per_pr` runs (by run id), every
    run of a PR that is not open (when the open PRs are known), and main's beyond `keep_main`."""
    runs: dict[int | None, list[int]] = {}
    for d in dirs:
        parsed = parse(d)
        if parsed:
            runs.setdefault(parsed[0], []).append(parsed[1])
    out = []
    for pr, ids in runs.items():
        ids.sort(reverse=True)
        keep = keep_main if pr is None else (0 if open_prs is not None and pr not in open_prs else keep_per_pr)
        out += [run_dir(pr, i) for i in ids[keep:]]
    return sorted(out)


def index_html(dirs: list[str], titles: dict[str, str] | None = None) -> str:
    """The site's index: main's sweeps newest first (the baseline history), then each PR's runs."""
    titles = titles or {}
    runs = sorted((p for p in (parse(d) for d in dirs) if p), key=lambda t: (t[0] is not None, -(t[0] or 0), -t[1]))
    items = []
    for pr, run in runs:
        d = run_dir(pr, run)
        who = "main" if pr is None else f"PR #{pr}"
        items.append(f'<li><a href="{html.escape(d)}/">{who}, run {run}</a> {html.escape(titles.get(d, ""))}</li>')
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Sweep reports</title></head>"
            "<body><h1>Sweep reports</h1><p>main's sweeps are the baseline history; PR pages are kept for open PRs "
            f"(the newest {KEEP_PER_PR} runs each).</p><ul>" + "".join(items) + "</ul></body></html>\n")
