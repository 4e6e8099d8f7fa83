"""Which releases of each engine register a model architecture (``architectures.json``, generated from every release
wheel of tools/catalog_versions.txt by ``tools/gen_pp_architectures.py --history``: each run of releases with the
file:line that registers the architecture at its first release).

"Model architectures [...] are not supported" means one of two things, and the fix differs: the release is older
than the first one that registers the architecture (upgrade), or the release registers it and could not import its
module — vLLM's registry and SGLang's ``import_model_classes`` (sglang/srt/models/registry.py:127-133, 0.5.23) both
catch the import error and then report the architecture as unsupported (fix the import). The table tells them apart.
The table is opened only when a log shows such a refusal.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from doctor.versions import version_key

DATA = Path(__file__).with_name("architectures.json")
NAMES = {"vllm": "vLLM", "sglang": "SGLang"}


@lru_cache(maxsize=1)
def _doc() -> dict:
    return json.loads(DATA.read_text(encoding="utf-8"))


def _table() -> tuple[dict[str, list[str]], dict[str, dict[str, list[list[str | None]]]]]:
    doc = _doc()
    return doc["releases"], doc["architectures"]


def model_type_architectures(model_type: str) -> list[str]:
    """The architectures transformers' auto mappings give a model type (of those an engine registers; the transformers
    release the table read is in its ``model_types.read``), for a refusal that names only the model type."""
    return list(_doc()["model_types"]["types"].get(model_type, []))


@dataclass(frozen=True)
class Registration:
    """What the table says of one architecture on one engine version.

    ``state``: ``registered`` (the release read registers it), ``later`` (first registered after it), ``dropped``
    (registered before it, no longer), ``never`` (no release read registers it), ``unknown`` (the version is not
    given or is older than every release read, and releases differ)."""

    engine: str
    architecture: str
    version: str | None
    state: str
    since: str | None = None
    until: str | None = None
    where: str | None = None

    def sentence(self) -> str:
        name, arch, version = NAMES.get(self.engine, self.engine), self.architecture, self.version
        releases = _table()[0][self.engine]
        at = f"{self.where}" if self.where else ""
        if self.state == "later":
            return f"{arch} is registered from {name} {self.since} ({at}); this server runs {version}"
        if self.state == "registered":
            return (f"{name} {version} registers {arch} (from {self.since}: {at}), so the release did not refuse it: "
                    f"its model module failed to import, and the import error in the log names the cause")
        if self.state in ("dropped", "never"):  # vLLM may still run it: a *ForSequenceClassification converted from
            # its *ForCausalLM (registry.py _normalize_arch), or the Transformers backend; no claim on the release
            return f"{name} {version} does not register {arch} in its own registry (releases read: {releases[0]}–{releases[-1]})"
        what = "the version was not given" if version is None else f"{version} is older than every release read"
        return (f"{arch} is registered from {name} {self.since} ({at}) ({what}): a release before {self.since} "
                f"refuses it as too old; one from {self.since} on refuses it only when its model module failed to "
                f"import (pass --engine-version to decide)")


def could_be(engine: str, version: str | None) -> bool:
    """Whether ``version`` can be a release of ``engine``: not of a later series than the newest release read (the
    table holds every release up to it), so an SGLang-only number (0.5.x) is not read as vLLM's and vLLM's 0.15.0 not
    as SGLang's. True for an unknown version."""
    releases = _table()[0].get(engine)
    want = version_key(version) if version else None
    if not releases or want is None:
        return True
    newest = version_key(releases[-1])
    return want[:2] <= newest[:2]


def registration(engine: str, architecture: str, version: str | None) -> Registration | None:
    """The table's answer for ``architecture`` on ``engine`` ``version``; None for an engine the table lacks."""
    releases, table = _table()
    if engine not in releases:
        return None
    order = releases[engine]
    runs = table.get(architecture, {}).get(engine, [])
    if not runs:
        return Registration(engine, architecture, version, "never")
    first = runs[0]
    want = version_key(version) if version else None
    below = [i for i, r in enumerate(order) if want is not None and version_key(r) <= want]
    if not below:
        state = "later" if want is not None and first[0] != order[0] else "unknown"
        return Registration(engine, architecture, version, state, first[0], first[1], first[2])
    at = below[-1]
    for since, until, where in runs:
        start, end = order.index(since), order.index(until) if until else len(order) - 1
        if start <= at <= end:
            return Registration(engine, architecture, version, "registered", since, until, where)
        if start > at:
            return Registration(engine, architecture, version, "later", since, until, where)
    last = runs[-1]
    return Registration(engine, architecture, version, "dropped", first[0], last[1], first[2])
