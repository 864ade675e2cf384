"""The PR-description check. decide.py: disclosure and checklist (pure); flow.py: `bot pr-body`."""
