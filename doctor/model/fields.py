"""Reading config.json fields with their provenance, and refusing bad values with one clear line.

Multimodal checkpoints nest the language model under ``text_config`` (Qwen3.5, Gemma 3/4, Llama 4,
Kimi K2.5/K3); the serving engines size the KV cache from that part, so every lookup tries the text
config first and the top level second, and remembers which path answered. That path is what the
card shows as evidence (``text_config.num_key_value_heads``) and what an error names.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from doctor.errors import InputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Larger than any size, count or context a config holds (2^40); bigger values are typos or attacks.
MAX_INT = 2**40
#: Keys under which multimodal configs keep the language model's config.
TEXT_CONFIG_KEYS = ("text_config", "language_config", "llm_config")


@dataclass(frozen=True)
class Field:
    """A value read from the config and the dotted path it came from."""

    path: str
    value: Any


class ConfigView:
    """The language-model view of a raw config dict, with typed, provenance-keeping getters."""

    def __init__(self, raw: dict[str, Any], source: str) -> None:
        self.raw = raw
        self.source = source
        self.text: dict[str, Any] = raw
        self.prefix = ""
        for key in TEXT_CONFIG_KEYS:
            nested = raw.get(key)
            if isinstance(nested, dict) and ("num_hidden_layers" in nested or "hidden_size" in nested):
                self.text, self.prefix = nested, f"{key}."
                break

    # -- lookups -----------------------------------------------------------------------------
    def find(self, *names: str, root_too: bool = True) -> Field | None:
        """The first of ``names`` set (not null) in the text config, then at the top level."""
        scopes = [(self.text, self.prefix)]
        if root_too and self.text is not self.raw:
            scopes.append((self.raw, ""))
        for scope, prefix in scopes:
            for name in names:
                value = scope.get(name)
                if value is not None:
                    return Field(prefix + name, value)
        return None

    def root(self, name: str) -> Field | None:
        value = self.raw.get(name)
        return None if value is None else Field(name, value)

    def fail(self, path: str, problem: str) -> InputError:
        return InputError(f"{self.source}: {path}: {problem}")

    # -- typed getters ---------------------------------------------------------------------------
    def int(self, *names: str, minimum: int = 0, required: bool = False) -> Field | None:
        """An integer field (a JSON float with no fraction, like ``128.0``, is accepted)."""
        found = self.find(*names)
        if found is None:
            if required:
                raise self.fail(names[0], "missing (needed to size the model)")
            return None
        value = found.value
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(found.path, f"expected an integer, got {value!r}")
        if value < minimum:
            raise self.fail(found.path, f"expected an integer >= {minimum}, got {value}")
        if value > MAX_INT:
            raise self.fail(found.path, f"{value} is implausibly large for a model config")
        return Field(found.path, value)

    def int_or(self, *names: str, default: int) -> int:
        """An integer field's value, or ``default`` when the config leaves it out."""
        found = self.int(*names)
        return default if found is None else found.value

    def member_int(self, found: Field, key: str) -> int | None:
        """An integer inside an object field (``linear_attn_config.num_heads``); None when absent."""
        value = found.value.get(key) if isinstance(found.value, dict) else None
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_INT:
            raise self.fail(f"{found.path}.{key}", f"expected a positive integer, got {value!r}")
        return value

    def int_list(self, *names: str) -> Field | None:
        found = self.find(*names)
        if found is None:
            return None
        value = found.value
        if not isinstance(value, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value
        ):
            raise self.fail(found.path, "expected a list of integers")
        return found

    def str_list(self, *names: str) -> Field | None:
        found = self.find(*names)
        if found is None:
            return None
        if not isinstance(found.value, list) or not all(isinstance(v, str) for v in found.value):
            raise self.fail(found.path, "expected a list of strings")
        return found

    def string(self, *names: str) -> Field | None:
        found = self.find(*names)
        if found is None:
            return None
        if not isinstance(found.value, str):
            raise self.fail(found.path, f"expected a string, got {found.value!r}")
        return found

    def mapping(self, *names: str) -> Field | None:
        found = self.find(*names)
        if found is None:
            return None
        if not isinstance(found.value, dict):
            raise self.fail(found.path, "expected an object")
        return found

    def flag(self, *names: str) -> Field | None:
        """A boolean field; absent stays None so callers can tell 'false' from 'not said'."""
        found = self.find(*names)
        if found is None:
            return None
        if not isinstance(found.value, bool):
            raise self.fail(found.path, f"expected true or false, got {found.value!r}")
        return found


def shown(value: Any) -> Any:
    """A value small enough for an evidence line: long lists are summarised, not dumped."""
    if isinstance(value, list) and len(value) > 8:
        counts: dict[str, int] = {}
        for item in value:
            key = str(item)
            counts[key] = counts.get(key, 0) + 1
        if len(counts) <= 6:
            parts = ", ".join(f"{n}× {k}" for k, n in counts.items())
            return f"[{len(value)} items: {parts}]"
        return f"[{len(value)} items]"
    if isinstance(value, dict):
        return {k: shown(v) for k, v in value.items() if not isinstance(v, (dict, list)) or len(str(v)) < 80}
    return value
