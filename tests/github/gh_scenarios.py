"""Building PR histories in the fake GitHub, and events for the flows."""

from __future__ import annotations

from pathlib import Path

from ci_tools.github.client import GitHub
from ci_tools.github.events import Comment, Event, PullRequest
from ci_tools.prbot import commands as cmds
from ci_tools.prbot.shell import Lazy, Settings

REPO_ROOT = Path(__file__).resolve().parents[2]
FULL = "full-sweep-fail-fast"
SHA1, SHA2, SHA3 = "a" * 40, "b" * 40, "c" * 40
MERGE = "e" * 40


def settings() -> Settings:
    return Settings(repo_root=REPO_ROOT, card_settle=0)


def lazy(fake, sleep=None) -> Lazy:
    return Lazy(lambda: GitHub(fake.repo, "test-token", api_url=fake.url, sleep=sleep or (lambda s: None),
                                 seconds_between_writes=0))


def pr_with_sweep(fake, number: int = 7, *, labels=(FULL,), commits=(SHA1,), filler: int = 0, **kw) -> dict:
    """An open PR whose labels were applied before any run, with `filler` unrelated comments."""
    pr = fake.add_pr(number, head_sha=commits[-1], commits=list(commits), **kw)
    pr["labels"] = []
    for label in labels:
        fake.label(number, label)
    for i in range(filler):
        fake.add_comment(number, f"looks good {i}", author="viewer", association="NONE")
    return pr


def authorise(fake, number: int, body: str = "/use", *, author: str = "maint", association: str = "MEMBER",
              permission: str = "write", answered: bool = True) -> dict:
    """`author` (with `permission`) comments `body`. A `/use` in it is `answered` by default: the bot's
    reply records the permission checked, as `comment handle` writes it (`answer`), since a `/use`
    counts at merge only by that record; `answered=False` is a comment whose handling job never ran."""
    fake.permissions[author] = permission
    comment = fake.add_comment(number, body, author=author, association=association)
    if answered and cmds.effective_use(cmds.parse(body)) is not None:
        answer(fake, number, comment, permission)
    return comment


def answer(fake, number: int, comment: dict, permission: str) -> dict:
    """The bot's reply to a command comment with the record `comment handle` keeps in it (its tests
    check that it does): the permission it found and the commands it checked it for."""
    from ci_tools.prbot import sticky
    from ci_tools.prbot.reuse.decide import handled_state

    runs = cmds.to_run(cmds.parse(comment["body"]), created=True)
    state = handled_state(permission, [x.text for x in runs if cmds.REQUIRED[type(x)]])
    return fake.add_comment(number, sticky.head(sticky.REPLY, comment["id"], state) + "noted\n", author=fake.bot,
                            association="NONE", type_="Bot")


def merge(fake, number: int, sha: str = MERGE) -> str:
    at = fake.tick()
    fake.pulls[number]["merged_at"] = at
    fake.pulls[number]["merged"] = True
    fake.pulls[number]["state"] = "closed"
    fake.commit_pulls[sha] = [number]
    return at


def push_event(fake, sha: str = MERGE, ref: str = "refs/heads/main") -> Event:
    return Event(name="push", repo=fake.repo, ref=ref, after=sha, before="0" * 40)


def pr_event(fake, number: int, action: str, *, before: str = "", after: str = "", body: str = "") -> Event:
    p = fake.pulls[number]
    pr = PullRequest(number=number, head_sha=p["head"]["sha"], head_ref=p["head"]["ref"], body=body or p["body"] or "",
                     labels=tuple(l["name"] for l in p["labels"]), head_repo=fake.repo, base_repo=fake.repo,
                     state=p["state"], draft=p["draft"])
    return Event(name="pull_request", action=action, repo=fake.repo, pull_request=pr, before=before,
                 after=after or pr.head_sha)


def comment_event(fake, number: int, comment: dict, action: str = "created", kind: str = "issue_comment") -> Event:
    c = Comment(id=comment["id"], body=comment["body"], author=comment["user"]["login"],
                author_type=comment["user"]["type"], association=comment["author_association"],
                created_at=comment["created_at"], updated_at=comment.get("updated_at", ""), html_url=comment["html_url"],
                node_id=comment.get("node_id", ""))
    if kind == "pull_request_review":
        p = fake.pulls[number]
        pr = PullRequest(number=number, head_sha=p["head"]["sha"], head_ref=p["head"]["ref"])
        return Event(name="pull_request_review", action="submitted", repo=fake.repo, pull_request=pr,
                     comment=Comment(**{**c.__dict__, "kind": "review",
                                        "commit_id": comment.get("commit_id") or p["head"]["sha"],
                                        "review_state": str(comment.get("state") or "COMMENTED").upper()}))
    return Event(name="issue_comment", action=action, repo=fake.repo, issue_number=number, is_pull_request=True,
                 comment=c)


def refused(res) -> bool:
    """`reuse resolve` refused an authorised pin and main sweeps instead (policy `on-refused-reuse: sweep`):
    the job passes, reuse is off, and the refusal is an output the card and the summary show."""
    return res.exit_code == 0 and res.outputs["reuse-refused"] == "true" and res.outputs["reuse-enabled"] == "false"
