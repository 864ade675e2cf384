"""Posting the runner digest to a Slack incoming webhook (the only Slack call ci-tools makes)."""

from __future__ import annotations

from ci_tools.errors import InputError


def post(webhook_url: str, markdown: str, *, timeout: float = 20.0) -> None:
    """POST the digest as the webhook's `text`; a refusal fails the step (someone should notice).

    Slack's mrkdwn is not GitHub Markdown, but tables and backticks stay readable as plain text."""
    import httpx

    try:
        r = httpx.post(webhook_url, json={"text": markdown}, timeout=timeout)
    except httpx.HTTPError as exc:
        raise InputError(f"posting the runner digest to Slack failed: {type(exc).__name__}: {exc}") from None
    if r.status_code != 200 or r.text.strip() != "ok":
        raise InputError(f"Slack refused the runner digest: HTTP {r.status_code}: {r.text[:200]}")
