"""Hypothesis helpers for "bad input never crashes": any JSON value, and a document with values swapped out.

Real documents (configs, /server_info bodies, snapshots) are the best seeds: a mutation keeps most of the
structure a parser walks, so the fuzzer reaches deep code instead of failing at the first key.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from hypothesis import strategies as st

#: Any JSON-like value, with the awkward corners: NaN and infinities (Python's json writes and reads them),
#: huge and negative numbers, empty and odd strings, nesting.
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12) | st.sampled_from(["", "auto", "-1", "1e309", "NaN", "--api-key", "\u202e", "a" * 300]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=8)


def paths(node: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every key path in a document (for lists: the first and last item, enough to reach each shape)."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield (*prefix, key)
            yield from paths(value, (*prefix, key))
    elif isinstance(node, list) and node:
        for index in sorted({0, len(node) - 1}):
            yield (*prefix, index)
            yield from paths(node[index], (*prefix, index))


@st.composite
def mutated(draw: st.DrawFn, document: Any, max_changes: int = 3) -> Any:
    """``document`` with 1..max_changes values (at any depth) replaced by arbitrary JSON, or keys removed."""
    doc = copy.deepcopy(document)
    candidates = list(paths(doc))
    if not candidates:
        return draw(JSON_VALUES)
    for path in draw(st.lists(st.sampled_from(candidates), min_size=1, max_size=max_changes)):
        node = doc
        try:
            for key in path[:-1]:
                node = node[key]
            if isinstance(node, dict) and draw(st.integers(0, 4)) == 0:
                node.pop(path[-1], None)
            else:
                node[path[-1]] = draw(JSON_VALUES)
        except (KeyError, IndexError, TypeError):
            continue  # an earlier change replaced a parent of this path
    return doc
