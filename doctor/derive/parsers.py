"""The model family and the parsers it expects on this engine; the release that first registers a parser the
command names; the tokens a tool parser needs that the served tokenizer lacks."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any

from doctor.errors import InputError
from doctor.facts import Facts
from doctor.versions import orderable_version

if TYPE_CHECKING:
    from doctor.engines.command import LaunchCommand


def family_facts(facts: Facts) -> Facts:
    """The model family (by name, architectures, model_type) and the parsers it expects on this engine.

    Read from six facts only, and the same for every target of a fleet that serves one model on one release:
    worked out once per distinct set (``check --targets``), the Facts returned are the one shared answer
    (its Fact objects are immutable; callers merge it, never change it)."""
    architectures = facts.get("model.architectures") or facts.get("server.architectures")
    key = (facts.get("launch.model") or facts.get("server.model_path") or facts.get("model.name"),
           tuple(architectures) if isinstance(architectures, list) else architectures,
           facts.get("model.model_type") or facts.get("server.model_type"), facts.get("launch.engine"),
           facts.get("launch.version"), "model.architectures" in facts)
    try:
        hash(key)
    except TypeError:  # a value no cache can hold (a list where a name belongs): worked out for this one alone
        return _family_facts.__wrapped__(*key)
    return _family_facts(*key)


@functools.lru_cache(maxsize=256)
def _family_facts(name: Any, architectures: Any, model_type: Any, engine: Any, version: Any,
                  has_config: bool) -> Facts:
    from doctor.engines.families import expected_facts, match_family

    found = match_family(architectures=list(architectures) if isinstance(architectures, tuple) else architectures,
                         model_type=model_type, name=name)
    out = Facts()
    if found is None:
        out.error("expect", f"no model family matches {name or 'this model'} (doctor/engines/families.yaml)")
        return out
    if engine is None:
        out.set("model.family", found.id, "doctor/engines/families.yaml")
        out.error("expect", "the engine is not known, so neither are its parser names")
    else:
        out = expected_facts(found, engine, orderable_version(version))
    if not has_config and (found.matched_by or "").startswith("name "):
        from doctor.model.names import NAME_ONLY

        for key in ("model.family", "model.family_variant", "model.family_alternatives"):
            if key in out:  # no config to confirm it: the name alone decided
                out.set(key, out.get(key), f"{NAME_ONLY} ({found.matched_by}); low confidence: no config.json",
                        learnt="guessed")
    return out


def parser_since_facts(command: LaunchCommand) -> Facts:
    """For parsers the command names but its engine version lacks: the first release that registers them."""
    from doctor.engines.catalog import registered_runs, registered_since

    out = Facts()
    for dest, attr, key in (("tool_call_parser", "tool_parsers", "launch.tool_parser_since"),
                            ("reasoning_parser", "reasoning_parsers", "launch.reasoning_parser_since")):
        name = command.get(dest)
        if not name or name == "auto":
            continue
        if name in getattr(command.catalog, attr):
            out.set(key, None, f"engine catalogs: {name!r} is registered in {command.engine} "
                               f"{command.catalog.version}")
            out.set(key.replace("_since", "_registered"), True, f"engine catalogs: {name!r} is registered in "
                    f"{command.engine} {command.catalog.version}")
            continue
        since = registered_since(command.engine, attr, name, command.catalog.version)
        out.set(key, since, f"engine catalogs: first {command.engine} release registering {name!r}"
                if since else f"engine catalogs: no {command.engine} release registers {name!r}")
        if since is None:
            out.set(key.replace("_since", "_registered"),
                    *_registered(command, attr, name, registered_runs(command.engine, attr, name)))
    return out


def _registered(command: LaunchCommand, attr: str, name: str, runs: list[tuple[str, str]]) -> tuple[bool | None, str]:
    """(registered, source) for a parser name the command's release lacks and no later release adds.

    A release that was read (or one between two) lacks it: False, whatever older releases had. With the version
    unknown: whether any release read has it. Older or newer than every release read: a name no release read has
    may be the unread release's own, so unknown (None)."""
    from doctor.engines.catalog import available

    engine, cat = command.engine, command.catalog
    what = attr.replace("_", " ")[:-1]
    releases = available(engine)
    had = f"; {engine} {runs[0][0]}–{runs[-1][1]} had it" if runs else f"; no {engine} release read " \
        f"({releases[0]}–{releases[-1]}) has it"
    if cat.coverage == "unknown":
        return bool(runs), f"engine catalogs: {name!r} is {'' if runs else 'not '}a {what} of any {engine} release " \
                           f"read ({releases[0]}–{releases[-1]})"
    if cat.coverage in ("older", "newer") and not runs:
        return None, f"engine catalogs: {name!r} is not a {what} of any release read; {cat.note}"
    return False, f"engine catalogs: {name!r} is not a registered {what} of {engine} {cat.version}{had}"


def parser_token_facts(facts: Facts, card: Any) -> Facts:
    """launch.tool_parser_tokens_missing: tokens the tool parser's constructor needs (doctor/engines/
    parser_tokens.yaml, read from the engine's wheel) that the served tokenizer lacks — vLLM then refuses to
    start. Read only for the parsers listed, from the model directory's tokenizer files; unknown otherwise."""
    out = Facts()
    parser, engine = facts.get("launch.tool_call_parser"), facts.get("launch.engine")
    if not parser or engine != "vllm":
        return out
    if card is None:
        out.error("launch.tool_parser_tokens_missing", "the served tokenizer is not at hand (no model directory: "
                                                        "pass --config DIR of the served model)")
        return out
    from doctor.engines.catalog import version_key
    from doctor.yamlsafe import load_packaged

    table = load_packaged(Path(__file__).parents[1] / "engines" / "parser_tokens.yaml").get(engine) or {}
    read = sorted(table, key=version_key)
    entry = (table.get(read[-1]) or {}).get(parser) if read else None
    if entry is None:
        out.set("launch.tool_parser_tokens_missing", [], f"{parser} is not among the parsers that need tokens "
                                                         "(doctor/engines/parser_tokens.yaml)")
        return out
    config = Path(card.source)  # the config.json the card was read from (resolve.py: local, HF cache or Hub)
    if config.name != "config.json" or not config.is_file():
        out.error("launch.tool_parser_tokens_missing", f"the served tokenizer is not at hand (the config "
                                                        f"{card.source} is not in a model directory)")
        return out
    vocab = _tokenizer_vocab(config.parent)
    if vocab is None:
        out.error("launch.tool_parser_tokens_missing", f"no readable tokenizer.json or tokenizer_config.json in "
                                                        f"{config.parent}")
        return out
    missing = [t for t in entry["tokens"] if t not in vocab]
    out.set("launch.tool_parser_tokens_missing", missing,
            f"{config.parent.name}/tokenizer files vs tokens {parser} needs ({engine} {read[-1]} "
            f"{entry['source']})")
    return out


#: tokenizer.json of a large vocabulary is a few MB; past this it is not one.
_TOKENIZER_BYTES = 64 * 1024 * 1024


def _tokenizer_vocab(directory: Path) -> set[str] | None:
    """Every token string of the tokenizer in ``directory`` (vocabulary and added tokens), or None."""
    import json

    from doctor.inio import read_text_capped

    tokens: set[str] = set()
    found = False
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.json", "added_tokens.json"):
        path = directory / name
        if not path.is_file():
            continue
        try:
            data = json.loads(read_text_capped(path, limit=_TOKENIZER_BYTES, label=str(path)))
        except (InputError, ValueError, RecursionError):
            continue
        if not isinstance(data, dict):
            continue
        found = True
        model = data.get("model") if isinstance(data.get("model"), dict) else {}
        for source in (model.get("vocab"), data if name in ("vocab.json", "added_tokens.json") else None):
            if isinstance(source, dict):
                tokens.update(k for k in source if isinstance(k, str))
            elif isinstance(source, list):  # unigram vocabularies: [[piece, score], ...]
                tokens.update(p[0] for p in source if isinstance(p, list) and p and isinstance(p[0], str))
        for item in data.get("added_tokens") or []:
            if isinstance(item, dict) and isinstance(item.get("content"), str):
                tokens.add(item["content"])
        for item in (data.get("added_tokens_decoder") or {}).values():
            if isinstance(item, dict) and isinstance(item.get("content"), str):
                tokens.add(item["content"])
    return tokens if found else None
