"""The welcome comment tells every primary label apart (the three full-sweep variants included)."""

from __future__ import annotations

from ci_tools.prbot.messages import label_what as _label_what
from ci_tools.sweep.load import load_policy


def test_every_primary_label_reads_differently(repo_root):
    policy = load_policy(repo_root)
    for lang in (0, 1):
        said = {name: _label_what(label)[lang] for name, label in policy.primary.items()}
        assert len(set(said.values())) == len(said), said
