"""Placeholders in a pasted launch command: values the paste does not have, never invalid ones.

Commands arrive from shell scripts (``--port ${PORT}``, ``--model $MODEL``), Helm charts
(``--model {{ .Values.model }}``), READMEs (``--model <model>``) and ``$(...)`` substitutions. The engine never
sees these words — the shell or the template engine replaces them first — so reading ``${PORT}`` as an invalid
port is wrong. A placeholder with a default (``${PORT:-8000}``, ``${PORT-8000}``, ``{{ .Values.port | default
8000 }}``) stands for its default, as the shell would expand it when the variable is unset; anything else is an
unknown value, and the checks that need it say so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: ${VAR}, ${VAR:-default}, ${VAR-default}, ${VAR:=default}, $VAR, $(command), `command`; a script's positional
#: parameters too ($1, ${2}, $@: `--node-rank $1` in a launch script run once per node)
_SHELL = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*|\d+)(?:(:?[-=])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*|\d|[@*#])"
                    r"|\$\((.*?)(?:\)|$)|`[^`]*`?")
#: {{ .Values.model }}, {{- .Values.port | default 8000 -}}
_HELM = re.compile(r"\{\{-?\s*(.*?)\s*-?\}\}", re.S)
_HELM_DEFAULT = re.compile(r"\|\s*default\s+(\"[^\"]*\"|'[^']*'|\S+)")
#: <model>, <your-model-path>, <MODEL_ID> (README placeholders; never a flag value an engine accepts)
_ANGLE = re.compile(r"<[A-Za-z][A-Za-z0-9_./:-]*>")


@dataclass(frozen=True)
class Hole:
    """One placeholder inside a word: its text, the default it carries (None: none), what wrote it."""

    text: str
    default: str | None
    kind: str  # shell | helm | readme | substitution


def holes(word: str) -> list[Hole]:
    """The placeholders in ``word``, in order (empty for an ordinary word)."""
    if "$" not in word and "{{" not in word and "<" not in word and "`" not in word:
        return []  # most words: no scan (lint reads thousands of them)
    found: list[tuple[int, Hole]] = []
    for m in _SHELL.finditer(word):
        if m.group(1) is not None:
            default = m.group(3) if m.group(2) else None
            found.append((m.start(), Hole(m.group(0), default, "shell")))
        elif m.group(4) is not None:
            found.append((m.start(), Hole(m.group(0), None, "shell")))
        else:
            found.append((m.start(), Hole(m.group(0), None, "substitution")))
    for m in _HELM.finditer(word):
        default = _HELM_DEFAULT.search(m.group(1))
        found.append((m.start(), Hole(m.group(0), default.group(1).strip("\"'") if default else None, "helm")))
    for m in _ANGLE.finditer(word):
        found.append((m.start(), Hole(m.group(0), None, "readme")))
    return [hole for _, hole in sorted(found, key=lambda item: item[0])]


def expand(word: str) -> tuple[str | None, list[Hole]]:
    """(the word with every placeholder replaced by its default, or None when one has no default; the holes)."""
    found = holes(word)
    if not found:
        return word, []
    if any(h.default is None for h in found):
        return None, found
    out = word
    for hole in found:
        out = out.replace(hole.text, hole.default or "", 1)
    return out, found
