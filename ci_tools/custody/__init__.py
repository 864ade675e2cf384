"""Chain of custody of a job's client exports: what the runner seals and `results process` verifies.

The runner hashes the client's exports the moment it exits (`runner/seal.py`) and results hashes them
again and judges the difference (`results/custody.py`, `results/custody_files.py`); both go through
this package, so the record's format and the way a file is hashed are defined once, below both.

`record.py` (core): the record's text (sha256sum's format), its parser, which paths lie under a folder,
a record's entries after one more client exited. `hashing.py` (adapter): the sha256 of a file or a
symbolic link, and of every file under some folders.

May import: `ci_tools.names`, `ci_tools.errors` and each other; never a higher package (the runner and
results import this, not each other).
"""
