"""`/sweep approve <sha>` for fork PRs. decide.py: the approval and the head check (pure); flow.py:
the reply and `comment check-approval`."""
