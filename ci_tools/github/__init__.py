"""GitHub adapters: the REST client (`client.GitHub`) and event payload readers (`events`).

Only this package talks to GitHub. Decisions live in the core (`ci_tools/prbot/`, `ci_tools/policy/`) and take
plain data (`ci_tools/prbot/models.py`, which the parsers here fill).
"""

from ci_tools.github.client import CallLog, GitHub, GitHubError, token_from_env

__all__ = ["CallLog", "GitHub", "GitHubError", "token_from_env"]
