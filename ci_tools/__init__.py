"""ci-tools: the CI toolkit for an InferenceX-style GPU inference benchmark repository."""

__version__ = "0.1.0"
