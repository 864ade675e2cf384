"""GitHub adapters: the REST client (`client.GitHub`), event payload readers (`events`), the timeline
reader, and GitHub's object models (`models`: plain `PullRequest`, `Comment`, `WorkflowRun`, ...).

Only this package talks to GitHub. Decisions live in the floors above (`ci_tools/prbot/`,
`ci_tools/sweep/`) and take the plain data of `models.py`, which the parsers here fill. `actions` is
the one writer of what a GitHub Actions step hands back (outputs, step summary, annotations).
`models.py` is core (importable by any core module); the other modules are shell. This `__init__`
imports nothing, so importing the models does not load the HTTP client.

May import: httpx, click (`actions`), `ci_tools.errors`, `ci_tools.names`; nothing of a higher floor
(`tests/test_layers.py`), never the CLI.
"""
