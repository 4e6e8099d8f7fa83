"""Engine versions: one parser and one ordering for every comparison the tool makes.

PEP 440-ish, without importing `packaging` on the start-up path: ``0.10.1.1``, ``0.5.1.post3``,
``v0.11.0rc1``, ``0.13.0+cu129``, ``0.23.0-2`` are versions; ``latest`` and ``nightly`` are not. Release
numbers are padded, so ``0.5`` == ``0.5.0``; pre-releases sort below their release, post-releases above.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from doctor.errors import InputError

_VERSION = re.compile(
    r"^v?(?P<release>\d+(?:\.\d+)*)"
    r"(?:[-_.]?(?P<pre>a|b|c|rc|alpha|beta|pre|preview)[-_.]?(?P<pre_n>\d*))?"
    r"(?:[-_.]?post[-_.]?(?P<post>\d*)|-(?P<build>\d+))?"
    r"(?:[-_.]?dev[-_.]?(?P<dev>\d*))?"
    r"(?:\+[0-9A-Za-z.]+)?$",
    re.IGNORECASE,
)
_PRE_RANK = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2, "pre": 2, "preview": 2}
_RELEASE_WIDTH = 5
#: a version inside an image tag or a longer string (``v0.13.0-cu129``, ``lmsysorg/sglang:v0.5.4.post3``)
_EMBEDDED = re.compile(r"(?<![\w.])v?(\d+\.\d+(?:\.\d+){0,2}(?:\.?post\d+|rc\d+)?)")


def version_key(version: Any) -> tuple[Any, ...] | None:
    """A sortable key for ``version``, or None when it is not a version number."""
    return _key(str(version).strip())


@lru_cache(maxsize=4096)
def _key(text: str) -> tuple[Any, ...] | None:
    """version_key of the text, remembered: the rules, catalogs and conditions compare the same few releases over
    and over (a plan sizes many layouts on one release)."""
    match = _VERSION.match(text)
    if match is None:
        return None
    release = [int(part) for part in match["release"].split(".")][:_RELEASE_WIDTH]
    release += [0] * (_RELEASE_WIDTH - len(release))
    dev = match["dev"]
    post = match["post"] if match["post"] is not None else match["build"]
    if match["pre"]:
        pre = (_PRE_RANK[match["pre"].lower()], int(match["pre_n"] or 0))
    elif dev is not None and post is None:
        pre = (-1, 0)  # 1.0.dev3 sorts before 1.0a1
    else:
        pre = (3, 0)  # a final release sorts after its pre-releases
    post_key = -1 if post is None else int(post or 0)
    dev_key = float("inf") if dev is None else int(dev or 0)
    return (*release, *pre, post_key, dev_key)


def release(version: Any) -> tuple[int, ...] | None:
    """Just the release numbers (``0.5.4.post3`` → (0, 5, 4, 0, 0)): post-releases share their base's rules."""
    key = version_key(version)
    return None if key is None else key[:_RELEASE_WIDTH]


def require_key(version: Any, what: str = "engine version") -> tuple[Any, ...]:
    key = version_key(version)
    if key is None:
        raise InputError(f"{what}: {str(version)!r} is not a version number (expected e.g. 0.13.0)")
    return key


TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Protocol, TypeVar

    class _Since(Protocol):
        since: str

    _R = TypeVar("_R", bound=_Since)


def rule_for(rules: Sequence[_R], version: str | None) -> _R | None:
    """The newest of ``rules`` (sorted by ``since``) that holds on ``version``: the newest of all when the version is
    unknown, None when the version predates every rule. Pre/post tags do not move a boundary (0.5.6.post2 follows
    the 0.5.6 rules); a version that is not one is an InputError naming it."""
    if not rules:
        return None
    if version is None:
        return rules[-1]
    require_key(version)
    index = _holding(tuple(r.since for r in rules), _release_text(version))
    return None if index is None else rules[index]


def _release_text(version: Any) -> str:
    return ".".join(map(str, release(version) or ()))


@lru_cache(maxsize=1024)
def _holding(sinces: tuple[str, ...], at: str) -> int | None:
    """Which of the rules starting at ``sinces`` holds on release ``at``: the newest whose span, said as conditions
    of the playbooks' one language (doctor/playbook/conditions.py) over release numbers alone, is not false — a
    pre/post tag moves no boundary, on either side. Remembered: a plan sizes many layouts on one release."""
    from doctor.facts import Facts
    from doctor.playbook.conditions import newest_holding, release_spans

    facts = Facts()
    facts.set(RELEASE_FACT, at, "the engine release a rule is picked for")
    return newest_holding(release_spans(RELEASE_FACT, [_release_text(since) for since in sinces]), facts)


#: the fact the release conditions of :func:`rule_for` test (the same name the playbooks test a release by)
RELEASE_FACT = "launch.version"


def version_at_least(version: Any, since: Any) -> bool:
    """True when ``version`` is ``since`` or newer (``0.5.1.post3`` >= ``0.5.1``); InputError for non-versions."""
    return require_key(version) >= require_key(since, "since")


def extract_version(text: str) -> str | None:
    """The version inside an image tag or version string (``v0.13.0-cu129`` → ``0.13.0``), else None."""
    match = _EMBEDDED.search(text)
    return match.group(1) if match else None


@dataclass(frozen=True)
class Rule:
    """One release rule of a topic: it holds from ``since`` until the engine's next rule of the topic."""

    since: str
    values: dict[str, Any]
    evidence: str


@lru_cache(maxsize=8)
def load_rules(path: Path) -> dict[str, dict[str, tuple[Rule, ...]]]:
    """topic -> engine -> rules sorted by ``since``, from a packaged YAML of release rules (each with ``since`` and
    the ``evidence`` it was read from: engine wheel file:line)."""
    from doctor.datacache import cached

    # sorted and normalized once per edit of the file (or of this module), kept between runs (doctor.datacache)
    prepared = cached(f"{path.parent.name}.{path.stem}.rules", [path, Path(__file__)], lambda: _prepare_rules(path))
    return {topic: {engine: tuple(Rule(since, values, evidence) for since, values, evidence in rules)
                    for engine, rules in engines.items()}
            for topic, engines in prepared.items()}


def _prepare_rules(path: Path) -> dict[str, dict[str, list[list[Any]]]]:
    """topic -> engine -> [since, values, evidence] sorted by ``since``, evidence on one line (marshal-able)."""
    from doctor.yamlsafe import load_packaged

    out: dict[str, dict[str, list[list[Any]]]] = {}
    for topic, engines in load_packaged(path).items():
        out[topic] = {}
        for engine, rules in engines.items():
            parsed = [[str(r["since"]), {k: v for k, v in r.items() if k not in ("since", "evidence")},
                       " ".join(str(r["evidence"]).split())] for r in rules]
            out[topic][engine] = sorted(parsed, key=lambda r: require_key(r[0]))
    return out


def release_rule(path: Path, topic: str, engine: str, version: str | None) -> Rule | None:
    """The rule of ``topic`` in ``path`` for this engine release (the newest rule when the version is unknown or
    not a version number: a rule hedges rather than refuses)."""
    return rule_for(load_rules(path).get(topic, {}).get(engine) or (), version if release(version) else None)


def orderable_version(version: Any) -> str | None:
    """``version`` as text when it can be ordered (release rules compare it), else None ("latest", "nightly")."""
    return str(version) if version and version_key(version) is not None else None
