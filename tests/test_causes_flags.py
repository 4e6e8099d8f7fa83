"""The fixes the causes print name flags that really exist: each engine's fix against that engine's newest
catalog (generated from its wheel), `any` fixes against either engine or llmdoctor's own CLI."""

from __future__ import annotations

import re

from doctor.cli.main import COMMANDS
from doctor.engines.catalog import load_catalog
from doctor.playbook.loader import load_playbooks

FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
#: llmdoctor's own options that fixes tell the user to re-run with
OURS = {"--active", "--symptom", "--engine-version", "--config", "--gpu", "--endpoint", "--metrics", "--log"}


def test_every_flag_in_a_fix_exists() -> None:
    catalogs = {engine: load_catalog(engine) for engine in ("vllm", "sglang")}
    missing = []
    for cause in load_playbooks().causes.values():
        for engine, text in cause.fix.items():
            for flag in FLAG.findall(text):
                engines = [engine] if engine in catalogs else list(catalogs)
                if flag not in OURS and not any(catalogs[e].resolve(flag) for e in engines):
                    missing.append((cause.id, engine, flag))
    assert not missing
    assert "check" in COMMANDS  # the `any` fixes point at `llmdoctor check`
