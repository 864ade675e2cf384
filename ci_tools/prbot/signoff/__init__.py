"""CODEOWNER sign-off. decide.py: ownership, checklist, verdict, carry-over (pure); flow.py: `signoff
verify` and `signoff record`."""
