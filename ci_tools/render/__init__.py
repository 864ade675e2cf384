"""Rendering of results for people (text, Markdown) and for GitHub (annotations, outputs)."""
