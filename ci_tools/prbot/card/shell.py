"""Writing one section of the PR's status card without clobbering the others (the shell of card/decide.py).

GitHub has no conditional write for comments, so two jobs that each read the card, change their own
part and write it back can lose one of the two changes. Each writer therefore:

1. re-reads the card (a fresh GET, never a cached timeline) and patches only its own section;
2. after writing, waits `settle` seconds (longer than any writer's read-to-write gap) and reads the
   card again: if its section is gone, a writer that had read the card before this write has
   overwritten it, and it patches again on top of what is there now;
3. carries a `rank` for its section (a run id, a comment id): a section already written with a
   higher rank is newer than what this writer knows, and is left alone, so two writers of the same
   section (two sweep runs) converge on the newest instead of taking turns;
4. when it finds no card, creates one, then lists the comments again: if another writer created a
   card at the same moment, the oldest is kept, this writer deletes its own and patches the oldest.

The workflows that write the card also share one concurrency group per PR (`docs/workflows.md`),
so on GitHub the re-read protocol is the second line of defence, not the only one.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Callable, Protocol

from ci_tools.github.client import GitHubError
from ci_tools.github.models import Comment
from ci_tools.prbot import sticky
from ci_tools.prbot.card import decide as card

class CardClient(Protocol):
    """The calls of the re-reading writer: fresh comment lists and single comments, create, edit, delete."""

    def issue_comments(self, number: int, *, fresh: bool = False) -> list[Comment]: ...
    def comment(self, comment_id: int) -> Comment: ...
    def create_comment(self, number: int, body: str) -> Comment: ...
    def update_comment(self, comment_id: int, body: str) -> Comment: ...
    def delete_comment(self, comment_id: int) -> None: ...


SETTLE_S = 2.0
ATTEMPTS = 6


@dataclass
class Written:
    action: str          # "create", "update", "none" (already shown) or "superseded" (a newer rank is there)
    comment_id: int
    attempts: int


def _cards(gh: CardClient, pr: int, bot: str) -> list[Comment]:
    marker = sticky.marker(card.KIND)
    return sorted((c for c in gh.issue_comments(pr, fresh=True)
                   if c.author == bot and c.body.split("\n", 1)[0].strip() == marker), key=lambda c: c.id)


def _ranks(body: str) -> dict:
    ranks = sticky.state_of_text(body).get("ranks")
    return ranks if isinstance(ranks, dict) else {}


def _superseded(body: str, name: str, rank: int | None) -> bool:
    have = _ranks(body).get(name)
    return rank is not None and isinstance(have, int) and have > rank


def _patched(body: str, sections: dict[str, str], ranks: dict[str, int],
             state_change: Callable[[dict], None] | None) -> str:
    state = sticky.state_of_text(body)
    for name, rank in ranks.items():
        if name in sections:
            state.setdefault("ranks", {})[name] = rank
    if state_change is not None:
        state_change(state)
    out = body
    for name, content in sections.items():
        out = card.patch(out, name, content, state=state)
    return out if sections else card.patch(body, "sweep", card.sections_of(body).get("sweep", ""), state=state)


def _shown(body: str, sections: dict[str, str], ranks: dict[str, int]) -> bool:
    return all(card.has(body, n, c) or _superseded(body, n, ranks.get(n)) for n, c in sections.items())


def write_section(gh: CardClient, pr: int, name: str, content: str, *, bot: str, rank: int | None = None,
                  **kw) -> Written:
    """Show `content` in section `name` of PR `pr`'s card; see the module docstring."""
    return write_sections(gh, pr, {name: content}, bot=bot, ranks={name: rank} if rank is not None else None, **kw)


def write_sections(gh: CardClient, pr: int, sections: dict[str, str], *, bot: str, ranks: dict[str, int] | None = None,
                   state_change: Callable[[dict], None] | None = None, settle: float = SETTLE_S,
                   attempts: int = ATTEMPTS, sleep: Callable[[float], None] = time.sleep,
                   jitter: Callable[[], float] = random.random) -> Written:
    """Show each `sections` content in its section of PR `pr`'s card, leaving the others as they are."""
    ranks = dict(ranks or {})
    unknown = set(sections) - set(card.NAMES)
    if unknown:
        raise ValueError(f"unknown card section(s): {', '.join(sorted(unknown))}")
    created_here: int | None = None
    for attempt in range(1, attempts + 1):
        cards = _cards(gh, pr, bot)
        if not cards:
            body = _patched("", sections, ranks, state_change)
            created_here = gh.create_comment(pr, body).id
            cards = _cards(gh, pr, bot)
            if len(cards) > 1 and cards[0].id != created_here:
                # another writer created a card at the same moment: the oldest stays
                gh.delete_comment(created_here)
                created_here = None
                continue
            action = "create"
        else:
            for extra in cards[1:]:
                if extra.id == created_here:
                    gh.delete_comment(created_here)
            current = gh.comment(cards[0].id)
            body_now = current.body.replace("\r\n", "\n")
            todo = {n: c for n, c in sections.items() if not _superseded(body_now, n, ranks.get(n))}
            if sections and not todo:
                return Written("superseded", current.id, attempt)
            body = _patched(body_now, todo, ranks, state_change)
            if body == body_now:
                return Written("none", current.id, attempt)
            gh.update_comment(current.id, body)
            action = "update"
        cid = cards[0].id
        sleep(settle * (1.0 + jitter()))
        if _shown(gh.comment(cid).body, sections, ranks):
            return Written(action if attempt == 1 else "update", cid, attempt)
    raise GitHubError(f"the status card of PR #{pr} kept changing while its {', '.join(sections)} section(s) "
                      f"were written ({attempts} attempts); nothing is lost: re-run the job to write them again")
