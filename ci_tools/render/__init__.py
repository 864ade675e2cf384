"""Rendering of results for people (text, Markdown) and for GitHub (annotations, outputs).

Pure: findings and plans in, strings out; writing them is `ci_tools.github.actions`'.

May import: `ci_tools.errors` and the core types it renders.
"""
