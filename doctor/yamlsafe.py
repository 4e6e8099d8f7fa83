"""Loading YAML that came from outside (playbooks, targets files, Kubernetes snippets) without trusting it.

``yaml.safe_load`` already refuses to build objects, but it still expands anchors and aliases, so a
"billion laughs" document of a few hundred bytes can eat gigabytes. Our YAML never needs aliases, so they
are refused outright, the size is capped before parsing, and the composed node tree is returned next to
the data so that schema errors can name the line they are on.
"""

from __future__ import annotations

from pathlib import Path

from doctor.errors import InputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAX_YAML_BYTES = 4 * 1024 * 1024
# libyaml's composer recurses in C once per nesting level: 100,000 nested '[' overflow the C stack (a segfault,
# not a RecursionError). No real targets file, manifest or playbook nests past a few dozen levels.
MAX_YAML_DEPTH = 500


def load_packaged(path: Path) -> Any:
    """A YAML data file shipped with llmdoctor (reviewed with the code, so trusted), kept parsed between runs
    (doctor.datacache)."""
    from doctor.datacache import cached

    return cached(f"{path.parent.name}.{path.stem}", [path], lambda: parse_packaged(path))


def parse_packaged(path: Path, label: str | None = None) -> Any:
    """Parse a shipped YAML file with a safe loader — libyaml's when PyYAML has it (the pure-Python parser
    costs ~10x) — with one InputError line naming the file (``label``, else its path) on any problem."""
    import yaml

    name = label or str(path)
    try:
        return yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except OSError as exc:
        raise InputError(f"{name}: cannot read: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or " ".join(str(exc).split())
        raise InputError(f"{name}{where}: not valid YAML: {problem}") from None


def load_yaml(text: str | bytes, source: str, *, max_bytes: int = MAX_YAML_BYTES) -> tuple[Any, Any]:
    """Return ``(data, node)``: the plain data and PyYAML's node tree (for line numbers), or raise InputError."""
    documents = _load(text, source, max_bytes, single=True)
    return documents[0] if documents else (None, None)


def load_yaml_documents(text: str | bytes, source: str, *, max_bytes: int = MAX_YAML_BYTES) -> list[Any]:
    """Every ``---``-separated document (a pasted Kubernetes manifest), with the same refusals as :func:`load_yaml`."""
    return [data for data, _node in _load(text, source, max_bytes, single=False)]


def _load(text: str | bytes, source: str, max_bytes: int, *, single: bool) -> list[tuple[Any, Any]]:
    import yaml

    if isinstance(text, bytes):
        if len(text) > max_bytes:
            raise InputError(f"{source}: larger than {max_bytes} bytes; refusing to parse")
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"{source}: not UTF-8 text (byte {exc.start})") from None
    elif len(text) > max_bytes:
        raise InputError(f"{source}: larger than {max_bytes} bytes; refusing to parse")
    text = text.replace("\r\n", "\n")
    if _flow_depth(text) > MAX_YAML_DEPTH:
        raise InputError(f"{source}: YAML nested too deeply (over {MAX_YAML_DEPTH} levels of [ or {{)")
    if _block_depth(text) > MAX_YAML_DEPTH:
        raise InputError(f"{source}: YAML nested too deeply (over {MAX_YAML_DEPTH} levels of indentation or '- ')")
    # One pass with libyaml when present (pure-Python PyYAML is ~10x slower on our playbooks): compose the node
    # tree (aliases stay shared nodes, so a billion-laughs document composes cheaply), refuse any alias, then
    # build the data from that same tree.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    documents: list[tuple[Any, Any]] = []
    try:
        if single:
            node = loader.get_single_node()
            if node is not None:
                _reject_aliases(node, source)
                documents.append((loader.construct_document(node), node))
        else:
            while loader.check_node():
                node = loader.get_node()
                _reject_aliases(node, source)
                documents.append((loader.construct_document(node), node))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{source}:{mark.line + 1}" if mark is not None else source
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"{where}: invalid YAML: {problem}") from None
    except RecursionError:
        raise InputError(f"{source}: YAML nested too deeply") from None
    finally:
        loader.dispose()
    return documents


def _flow_depth(text: str) -> int:
    """The deepest running count of open ``[``/``{`` — an upper bound on flow-style nesting, cheap enough to run
    before the parser (brackets inside quoted strings count too, which only ever over-estimates)."""
    if text.count("[") + text.count("{") <= MAX_YAML_DEPTH:
        return 0
    import re

    depth = deepest = 0
    for match in re.finditer(r"[\[\]{}]", text):
        depth += 1 if match.group() in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


def _block_depth(text: str) -> int:
    """An upper bound on block-style nesting: the longest run of indentation and ``- ``/``? ``/``: `` markers
    starting a line, halved (each level takes at least two characters). ``'- ' * 100000`` overflows libyaml's C
    stack just as 100,000 nested '[' do."""
    import re

    runs = re.findall(rf"^[ \t?:-]{{{2 * MAX_YAML_DEPTH + 1},}}", text, re.MULTILINE)
    return max((len(run) for run in runs), default=0) // 2


def _reject_aliases(root: Any, source: str) -> None:
    """An alias (*name) composes to a node already seen: refuse the first one met, naming its line."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            raise InputError(f"{source}:{node.start_mark.line + 1}: YAML aliases (*name) are not allowed here")
        seen.add(id(node))
        if isinstance(node.value, list):
            for item in node.value:
                stack.extend(item if isinstance(item, tuple) else (item,))


def line_of(node: Any, path: list[Any] | tuple[Any, ...]) -> int | None:
    """1-based line of the value at ``path`` (keys and list indexes) in a composed YAML node tree."""
    import yaml

    current = node
    line = current.start_mark.line + 1 if current is not None else None
    for step in path:
        if isinstance(current, yaml.MappingNode):
            for key_node, value_node in current.value:
                if key_node.value == str(step):  # a YAML key 8 is the data's 8
                    current = value_node
                    line = key_node.start_mark.line + 1
                    break
            else:
                return line
        elif isinstance(current, yaml.SequenceNode) and isinstance(step, int) and step < len(current.value):
            current = current.value[step]
            line = current.start_mark.line + 1
        else:
            return line
    return line
