"""Judged results: AIPerf's exports -> result.json -> a run's collection -> Pareto, comparisons, tables.

Core (pure; may import `ci_tools.errors`, `ci_tools.names` and each other, never a file,
process, network or CLI module): `scan.py` (`RecordScan`, the excluded-record reasons), `record_fields.py`
and `record_batches.py` (one record's fields and checks; a batch of lines into the scan), `metrics.py`,
`validity.py`, `intervals.py`, `stats.py`, `pareto.py` (frontier, claims; CSV and collection
parsers over text and data), `compare.py`, `compare_render.py` (Markdown, text, JSON, PNG bytes),
`telemetry.py` (the runner's nvidia-smi CSV: summary, energy), `custody.py` (the export-custody verdict;
the record is `ci_tools.custody`'s). Never the runner's package: it shares this floor.

Shell (I/O): `flow.py` (`results process` / `collect` flows), `compare_flow.py`, `load.py` (the one
CSV-or-JSON file rule, Pareto points from a file), and the adapters `records.py` (the
streaming export reader), `process.py` (one job directory), `collect.py` (result files -> collection),
`sources.py` (a comparison's sides), `custody_files.py` (the exports hashed again), `baselines.py` (main's results from its sweep runs' artifacts,
through `ci_tools.github.client`) and `render.py` (the Pareto PNG file).
"""
