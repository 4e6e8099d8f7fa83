"""Release rules outside the memory model: engine behaviour that changed between releases (release_rules.yaml).

Old incidents run old engines: vLLM before 0.2.2 did not read a checkpoint's quantization from its config, so the
same command means something else on 0.2.1 than on 0.6. Each rule cites the wheel file:line it was read from.
"""

from __future__ import annotations

from pathlib import Path

from doctor.versions import Rule, release_rule

DATA_PATH = Path(__file__).with_name("release_rules.yaml")


def rule(topic: str, engine: str, version: str | None) -> Rule | None:
    """The rule of ``topic`` for this release (the newest when the version is unknown: no claim about old ones)."""
    return release_rule(DATA_PATH, topic, engine, version)
