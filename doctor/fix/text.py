"""Writing edited engine arguments back into the text they came from, changing nothing else.

Two shapes of text, one idea: find where each engine argument was written (its span), then replace the span
from the first argument to the last with the new arguments — untouched ones as they were written (quotes,
escapes and secrets byte for byte), new ones quoted for the shape — joined the way the original joined them
(one flag per line with backslash continuations, or one line). Everything before and after (other lines of a
script, ``docker run`` options, the rest of a manifest with its comments) is kept as it was.

* Shell text (a line, a script, ``docker run``): the words of the launch are found in order in the text.
* YAML (a Kubernetes ``args:``/``command:`` list, a container, a whole manifest): PyYAML's node marks give the
  span of each list item, so only the list's lines change — no round-trip re-emitting of the document, which
  would re-indent and re-quote lines the fix never touched.

When a span cannot be found (a word written with escapes the search cannot see), :class:`NotInPlace` is
raised and the caller shows the corrected command re-rendered instead, saying so.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass

from doctor.fix.argv import Word

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_BETWEEN = re.compile(r"^(?:[\s\\'\"]|#[^\n]*)*$")


class NotInPlace(Exception):
    """The arguments could not be located in the text: re-render instead."""


@dataclass(frozen=True)
class Located:
    """Where the engine's arguments sit in a text: each argument's (start, end) and how they are joined."""

    spans: list[tuple[int, int]]
    #: insertion point when there are no arguments (just after the entry)
    after: int
    yaml_style: str | None = None   # None: shell; "block" | "flow": a YAML sequence


def locate_shell(text: str, argv: list[str]) -> Located:
    """The spans of ``argv`` — the launch's engine arguments — in shell ``text``."""
    from doctor.engines.shapes import launch_segment, split_shell

    segments = split_shell(text)
    found = launch_segment(segments)
    # no entry point: the text is the engine's arguments alone (a pasted flag list)
    index = found[0] if found is not None else len(segments) - 1
    words = [w for seg in segments[: index + 1] for w in seg]
    spans: list[tuple[int, int]] = []
    cursor = 0
    for word in words:
        start = text.find(word, cursor) if word else -1
        if start < 0 or not _BETWEEN.match(_unprompted(text[cursor:start])):
            raise NotInPlace(word)
        end = start + len(word)
        if start > 0 and text[start - 1] in "'\"" and end < len(text) and text[end] == text[start - 1]:
            start, end = start - 1, end + 1
        spans.append((start, end))
        cursor = end
    tail = spans[len(spans) - len(argv):] if argv else []
    return Located(tail, spans[-1][1] if spans else 0)


def _unprompted(gap: str) -> str:
    """The text between two words, less what split_shell drops: ``$ `` prompts and markdown fences."""
    return re.sub(r"(^|\n)\s*(\$ |```[^\n]*)", r"\1", gap)


def write_shell(text: str, located: Located, new: list[Word]) -> str:
    """``text`` with the arguments replaced by ``new``, joined as the original joined its flag groups."""
    if not located.spans:
        return text[: located.after] + "".join(" " + _shell_quote(w) for w, _ in new) + text[located.after:]
    start, end = located.spans[0][0], located.spans[-1][1]
    return text[:start] + _join(text, new, _shell_joiner(text, located.spans), " ", _shell_quote) + text[end:]


def _join(text: str, new: list[Word], group_joiner: str, word_joiner: str, quote: Any) -> str:
    """The new words as text: each written as it was where it was kept, quoted for the shape where new; two
    words that were neighbours keep what stood between them (a comment, the line break), others are joined
    with ``group_joiner`` before a flag and ``word_joiner`` before a value."""
    from doctor.fix.argv import is_option

    out: list[str] = []
    for i, (word, span) in enumerate(new):
        if i:
            before = new[i - 1][1]
            if before is not None and span is not None and _neighbours(text, before, span):
                out.append(text[before[1]:span[0]])
            else:
                out.append(group_joiner if is_option(word) else word_joiner)
        out.append(text[span[0]:span[1]] if span is not None else quote(word))
    return "".join(out)


def _neighbours(text: str, before: tuple[int, int], after: tuple[int, int]) -> bool:
    """Whether nothing but separators (space, line breaks, ``-`` list marks, comments) stood between them."""
    return before[1] <= after[0] and bool(re.fullmatch(r"(?:[\s\\,\-]|#[^\n]*)*", text[before[1]:after[0]]))


def _shell_joiner(text: str, spans: list[tuple[int, int]]) -> str:
    """How the original separated flag groups: a backslash-newline and its indent, else one space."""
    for (_, end), (start, _) in zip(spans, spans[1:], strict=False):
        gap = text[end:start]
        if "\n" in gap:
            indent = gap[gap.rindex("\n") + 1:]
            return " \\\n" + indent
    return " "


def _shell_quote(word: str) -> str:
    return word if re.fullmatch(r"[A-Za-z0-9_@%+=:,./{}-]+", word) and "{{" not in word else shlex.quote(word)


# ------------------------------------------------------------------------------------------- YAML
@dataclass(frozen=True)
class Container:
    """A mapping with a ``command`` or ``args`` list (a container, or an ``args:`` block alone)."""

    command: YamlList | None
    args: YamlList | None
    image: str | None


@dataclass(frozen=True)
class YamlList:
    """One list of a container (``command`` or ``args``): its items' spans and values, and its style."""

    key: str
    items: list[tuple[int, int, str]]   # (start, end, value)
    style: str                          # block | flow
    start: int                          # where the list's text starts (for an empty flow list)


def container_lists(text: str) -> list[Container]:
    """Every mapping in ``text`` with a ``command`` or ``args`` list of strings, in document order; a bare
    top-level list counts as ``args``."""
    import yaml

    out: list[Container] = []
    try:
        documents = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
    except yaml.YAMLError as exc:
        raise NotInPlace(str(exc)) from exc
    for root in documents:
        if isinstance(root, yaml.SequenceNode):
            found = _as_list("args", root)
            if found is not None:
                out.append(Container(None, found, None))
            continue
        stack: list[Any] = [root]
        while stack:
            node = stack.pop(0)
            if isinstance(node, yaml.MappingNode):
                lists = {k.value: _as_list(k.value, v) for k, v in node.value
                         if isinstance(k, yaml.ScalarNode) and k.value in ("command", "args")}
                image = next((v.value for k, v in node.value if isinstance(k, yaml.ScalarNode)
                              and k.value == "image" and isinstance(v, yaml.ScalarNode)), None)
                if any(v is not None for v in lists.values()):
                    out.append(Container(lists.get("command"), lists.get("args"), image))
                stack.extend(v for _, v in node.value)
            elif isinstance(node, yaml.SequenceNode):
                stack.extend(node.value)
    return out


def _as_list(key: str, node: Any) -> YamlList | None:
    import yaml

    if not isinstance(node, yaml.SequenceNode) or not all(isinstance(i, yaml.ScalarNode) for i in node.value):
        return None
    items = [(i.start_mark.index, i.end_mark.index, i.value) for i in node.value]
    return YamlList(key, items, "flow" if node.flow_style else "block", node.start_mark.index)


def write_yaml(text: str, target: YamlList, keep: int, new: list[Word]) -> str:
    """``text`` with the items of ``target`` from index ``keep`` on replaced by ``new``."""
    items = target.items
    if keep >= len(items):
        raise NotInPlace("nothing to replace")
    if len(items) > 1:
        joiner = text[items[0][1]:items[1][0]]
        joiner = joiner[joiner.rfind("\n"):] if "\n" in joiner else joiner   # not a comment of the first item
    elif target.style == "block":
        line_start = text.rfind("\n", 0, items[0][0]) + 1
        joiner = "\n" + text[line_start:items[0][0]]
    else:
        joiner = ", "
    if target.style == "block" and "\n" not in joiner:
        raise NotInPlace("block list with two items on one line")
    return text[:items[keep][0]] + _join(text, new, joiner, joiner, _yaml_quote) + text[items[-1][1]:]


def _yaml_quote(word: str) -> str:
    """A plain scalar where YAML reads it back as the same string, else a double-quoted one."""
    import yaml

    if re.fullmatch(r"--?[A-Za-z0-9][A-Za-z0-9_.-]*", word) or re.fullmatch(r"[A-Za-z][A-Za-z0-9_./-]*", word):
        try:
            if yaml.safe_load(word) == word:
                return word
        except yaml.YAMLError:
            pass
    return json.dumps(word, ensure_ascii=False)
