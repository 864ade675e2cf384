"""GitHub adapters: the REST client (`client.GitHub`) and event payload readers (`events`).

Only this package talks to GitHub. Decisions live in `ci_tools/policy/` and take plain data.
"""

from ci_tools.github.client import CallLog, GitHub, GitHubError, token_from_env

__all__ = ["CallLog", "GitHub", "GitHubError", "token_from_env"]
