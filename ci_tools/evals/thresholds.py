"""Eval score thresholds (`inferencex-e2e/eval-thresholds.yaml`), looked up as InferenceX does:
`models.<model-prefix>.<task>`, then `default.<task>`, then `floor`. Pure over the loaded document."""

from __future__ import annotations

from dataclasses import dataclass

from ci_tools.errors import Finding, InputError
from ci_tools.yaml.located import YamlDoc


@dataclass(frozen=True)
class Threshold:
    minimum: float
    source: str          # the key that decided, e.g. "models.qwen3.5.gsm8k", "default.gsm8k", "floor"
    where: str = ""      # file:line of that key

    def as_dict(self) -> dict:
        return {"minimum": self.minimum, "source": self.source, "where": self.where}


@dataclass(frozen=True)
class Thresholds:
    doc: YamlDoc

    def lookup(self, model_prefix: str | None, task: str) -> Threshold:
        data = self.doc.data
        models = data.get("models") or {}
        candidates: list[tuple[tuple[str, ...], str]] = []
        if model_prefix and task in (models.get(model_prefix) or {}):
            candidates.append((("models", model_prefix, task), f"models.{model_prefix}.{task}"))
        if task in (data.get("default") or {}):
            candidates.append((("default", task), f"default.{task}"))
        candidates.append((("floor",), "floor"))
        path, source = candidates[0]
        value = data
        for part in path:
            value = value[part]
        line, _ = self.doc.mark(path)
        return Threshold(float(value), source, f"{self.doc.file}:{line}" if line else self.doc.file)


def check(doc: YamlDoc) -> list[Finding]:
    """Schema findings of a thresholds document (`config validate`)."""
    from ci_tools.config import schemas

    if doc.data is None:
        return [Finding(doc.file, 1, 1, "the eval thresholds file is empty",
                        "write thresholds-version: 1, floor: and default: (see ci_tools/schemas/eval-thresholds.schema.json)")]
    return schemas.check(doc, doc.data, "eval-thresholds")


def from_doc(doc: YamlDoc) -> Thresholds:
    """The thresholds of a loaded document, schema-checked; an invalid one is an InputError listing
    every finding (`evals/load.py` reads the file)."""
    problems = check(doc)
    if problems:
        raise InputError(f"{doc.file}: invalid eval thresholds ({len(problems)} problem(s))", findings=problems)
    return Thresholds(doc)
