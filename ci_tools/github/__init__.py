"""GitHub adapters: the REST client (`client.GitHub`) and event payload readers (`events`).

Only this package talks to GitHub. Decisions live in the core (`ci_tools/prbot/`, `ci_tools/sweep/`) and take
plain data (`ci_tools/prbot/models.py`, which the parsers here fill). `actions` is the one writer
of what a GitHub Actions step hands back (outputs, step summary, annotations).

May import: httpx, `ci_tools.errors`, `ci_tools.names` and the core's plain data types; never the CLI.
"""

from ci_tools.github.client import CallLog, GitHub, GitHubError, token_from_env

__all__ = ["CallLog", "GitHub", "GitHubError", "token_from_env"]
