"""Flag edits on an engine's argument list, resolved the way the engine's own parser resolves flags.

The arguments are split into groups — an option word and the value words after it (``--tp 8``,
``--tp=8``, ``--enable-expert-parallel``) — and an edit names the flag it acts on by the engine's option
(``--tensor-parallel-size``). A group matches when the engine's catalog resolves its option word to the same
destination (so ``-tp``, ``--tp`` and ``--tensor-parallel-size`` are one flag), or, for a word the catalog
does not know (an unknown or other-engine flag), when the word is the flag as typed. Words are never
re-quoted or re-read here: untouched groups pass through byte for byte, secrets included, so a patched
manifest still deploys; only the text shown to people is redacted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from doctor.engines.catalog import Catalog

_NEGATIVE_NUMBER = re.compile(r"^-\d")
#: edit operations: what each does to the argument groups
OPS = ("remove", "replace", "set", "add")


@dataclass(frozen=True)
class Edit:
    """One flag operation. ``flag`` is the option acted on; ``to`` the new option (replace); ``value`` the
    value words (set/add; empty for a switch)."""

    op: str
    flag: str
    to: str | None = None
    value: tuple[str, ...] = ()

    def describe(self) -> str:
        value = " ".join(self.value)
        if self.op == "remove":
            return f"remove {self.flag}"
        if self.op == "replace":
            return f"{self.flag} → {self.to}"
        return f"{'set' if self.op == 'set' else 'add'} {self.flag} {value}".rstrip()


#: one argument, and where it was written in the text it came from (None: written by an edit)
Span = tuple[int, int]
Word = tuple[str, "Span | None"]


def groups(argv: list[Word]) -> list[list[Word]]:
    """``[model, --tp, 8, --x]`` → ``[[model], [--tp, 8], [--x]]``: leading positionals form one group each."""
    out: list[list[Word]] = []
    for word in argv:
        if is_option(word[0]) or not out or not is_option(out[-1][0][0]):
            out.append([word])
        else:
            out[-1].append(word)
    return out


def is_option(word: str) -> bool:
    return word.startswith("-") and word not in ("-", "--") and not _NEGATIVE_NUMBER.match(word)


def _dest(word: str, catalog: Catalog) -> str | None:
    spec = catalog.resolve(word)
    return spec.dest if spec is not None else None


def _matches(group: list[Word], flag: str, catalog: Catalog) -> bool:
    word = group[0][0]
    if not is_option(word):
        return False
    if word.partition("=")[0] == flag:
        return True
    wanted = _dest(flag, catalog)
    return wanted is not None and _dest(word, catalog) == wanted


def apply(argv: list[str], edits: list[Edit], catalog: Catalog,
          spans: list[Span] | None = None) -> tuple[list[Word], list[tuple[Edit, str]]]:
    """The arguments with every edit applied in order, each word with where it was written (``spans``, parallel
    to ``argv``) or None where an edit wrote it; and the edits that could not be applied, said why.
    An edit with nothing to change is a no-op."""
    words: list[Word] = list(zip(argv, spans if spans is not None else [None] * len(argv), strict=True))
    parts = groups(words)
    skipped: list[tuple[Edit, str]] = []
    for edit in edits:
        parts = _apply_one(parts, edit, catalog, skipped)
    return [word for group in parts for word in group], skipped


def _new(words: tuple[str, ...] | list[str]) -> list[Word]:
    return [(w, None) for w in words]


def _apply_one(parts: list[list[Word]], edit: Edit, catalog: Catalog,
               skipped: list[tuple[Edit, str]]) -> list[list[Word]]:
    hits = [i for i, group in enumerate(parts) if _matches(group, edit.flag, catalog)]
    if edit.op == "remove":
        return [group for i, group in enumerate(parts) if i not in hits]
    if edit.op == "replace":
        assert edit.to is not None
        target = catalog.resolve(edit.to)
        if target is not None and any(_dest(group[0][0], catalog) == target.dest for group in parts
                                      if is_option(group[0][0])):
            # the new flag is given already (--enable-reasoning beside --reasoning-parser NAME): the old one goes
            return [group for i, group in enumerate(parts) if i not in hits]
        out = [list(group) for group in parts]
        for i in hits:
            _, eq, value = out[i][0][0].partition("=")
            has_value = bool(eq) or len(out[i]) > 1
            if target is not None and target.is_boolean == has_value:
                # a switch renamed to a flag that takes a value (--enable-reasoning → --reasoning-parser), or
                # the reverse: the new flag cannot take the old words as they are
                skipped.append((edit, f"{edit.to} {'is a switch' if target.is_boolean else 'needs a value'} and "
                                      f"{out[i][0][0]} {'has one' if has_value else 'has none'}: change it by hand"))
                continue
            out[i][0] = (f"{edit.to}={value}" if eq else edit.to, None)
        return out
    if edit.op == "set":
        if not hits:
            return parts + [_new([edit.flag, *edit.value])]
        # argparse keeps the last occurrence: change that one, drop the earlier ones
        last = hits[-1]
        return [_new([group[0][0].partition("=")[0], *edit.value]) if i == last else group
                for i, group in enumerate(parts) if i == last or i not in hits]
    if edit.op == "add":
        return parts if hits else parts + [_new([edit.flag, *edit.value])]
    raise ValueError(f"unknown edit op {edit.op!r}")
