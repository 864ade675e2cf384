"""Each PR-bot flow declares the few client calls it makes (a Protocol); the GitHub adapter has each,
with the same parameters, so a flow cannot come to depend on a call the adapter lacks."""

from __future__ import annotations

import inspect

import pytest

from ci_tools.github.client import GitHub
from ci_tools.prbot import shell
from ci_tools.prbot.approval import flow as approval
from ci_tools.prbot.card import flow as card
from ci_tools.prbot.card import shell as card_shell
from ci_tools.prbot.reuse import runs_flow
from ci_tools.prbot.reuse import flow as reuse
from ci_tools.prbot.signoff import flow as signoff
from ci_tools.prbot.staging import flow as staging
from ci_tools.prbot.welcome import flow as welcome

PROTOCOLS = [shell.Comments, card_shell.CardClient, card.Client, runs_flow.Source, reuse.Client, approval.Client,
             staging.Client, staging.Dispatcher, signoff.Client, signoff.Teams, welcome.Client]


def _members(proto) -> set[str]:
    names = set()
    for klass in proto.__mro__:
        if klass is object or klass.__name__ in ("Protocol", "Generic"):
            continue
        names |= {n for n in vars(klass) if not n.startswith("_")} | set(getattr(klass, "__annotations__", {}))
    return names


@pytest.mark.parametrize("proto", PROTOCOLS, ids=lambda p: f"{p.__module__}.{p.__name__}")
def test_the_adapter_has_every_call_a_flow_declares(proto):
    client = GitHub("octo/bench", "token", api_url="http://127.0.0.1:9")
    for name in sorted(_members(proto)):
        assert hasattr(client, name), f"{proto.__name__}.{name} is not a GitHub method"
        want = getattr(proto, name, None)
        if callable(want):
            declared = list(inspect.signature(want).parameters)[1:]
            actual = list(inspect.signature(getattr(GitHub, name)).parameters)[1:]
            assert declared == actual[:len(declared)], f"{proto.__name__}.{name}{declared} vs GitHub.{name}{actual}"
