"""Secret redaction, applied to every command line, environment, URL and document before it is shown or saved.

Launch commands are pasted into incident channels and snapshots are attached to bug reports, so an
``--api-key`` on a command line or an ``HF_TOKEN`` in a process environment must never survive into any
output. Redaction is by name (flags and keys that hold secrets) and by shape (credentials in URLs,
bearer tokens, well-known token prefixes), because a secret can hide in either.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MASK = "***"

# Names (flags without dashes, env vars, JSON keys), compared case-insensitively with - and _ unified.
_SECRET_NAME = re.compile(
    r"(^|_)(api_?key|apikey|token|access_?token|auth_?token|hf_?token|secret|secret_?key|password|passwd|"
    r"credentials?|private_?key|auth|authorization|bearer)($|_)"
)
# Names that look secret by the rule above but carry no secret.
_NOT_SECRET = {"max_tokens", "tokenizer", "tokenizer_mode", "tokenizer_path", "skip_tokenizer_init",
               "token_usage", "auth_mode", "api_key_env", "token_env"}

_URL_USERINFO = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<user>[^/\s:@]*):(?P<pw>[^/\s@]+)@")
_BEARER = re.compile(r"(?i)\b(bearer)(\s+)([A-Za-z0-9._~+/=-]{8,})")
#: Well-known token shapes, each with a literal prefix every match starts with: the prefixes are a cheap
#: substring test before the regex, built from the same table so that a new shape can never be skipped by it.
_TOKEN_TABLE = (
    (("hf_",), r"hf_[A-Za-z0-9]{16,}"),
    (("sk-",), r"sk-[A-Za-z0-9_-]{16,}"),
    (("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), r"gh[pousr]_[A-Za-z0-9]{20,}"),
    (("xoxa-", "xoxb-", "xoxp-", "xoxr-"), r"xox[abpr]-[A-Za-z0-9-]{10,}"),
    (("AKIA",), r"AKIA[0-9A-Z]{16}"),
)
_TOKEN_SHAPES = re.compile(r"\b(" + "|".join(pattern for _, pattern in _TOKEN_TABLE) + r")\b")
_TOKEN_PREFIXES = tuple(prefix for prefixes, _ in _TOKEN_TABLE for prefix in prefixes)
#: Every name _SECRET_NAME accepts contains one of these words (tests/test_secrets.py checks each alternative): a
#: text holding none has no secret name, so its assignments and flag pairs need no scan (each of those regexes
#: walks every word of the text).
_NAME_WORDS = ("key", "token", "secret", "passw", "credential", "auth", "bearer")
_ANY_NAME_WORD = re.compile("|".join(_NAME_WORDS), re.IGNORECASE)
# name, separator and opening quote only: the value is found after a secret name, so that a non-secret
# "Label: " never swallows the "api_key=x" that follows it.
_NAME_SEP = re.compile(r"([A-Za-z_][A-Za-z0-9_.-]*)(['\"]?\s*[=:]\s*)(['\"]?)")
#: A backtick ends a value too: Markdown's `--api-key ***` keeps its closing quote.
_VALUE = re.compile(r"[^\s'\",}&`]*")


def is_secret_name(name: str) -> bool:
    """True for a flag, env var or JSON key whose value is a secret (``--api-key``, ``HF_TOKEN``)."""
    norm = name.lstrip("-").lower().replace("-", "_")
    if norm in _NOT_SECRET:
        return False
    return bool(_SECRET_NAME.search(norm))


def redact_text(text: str) -> str:
    """Mask secrets that show by their shape or by a ``name=value`` next to them, in free text."""
    if not text:
        return text
    text = redact_shapes(text)
    if not _ANY_NAME_WORD.search(text):
        return text
    return _redact_flag_pairs_in_text(_mask_assignments(text))


def redact_shapes(text: str) -> str:
    """Mask only what a secret's shape gives away: a URL's password, a bearer token, well-known token prefixes.

    Safe on any finished document (JSON, Markdown, HTML, text): it never touches quotes or structure, so every
    output llmdoctor writes passes through it last (doctor.cli.output.emit, doctor.outio.write_atomic, the
    one-line errors) — a model path or --config given as ``https://user:pass@host/m`` is masked wherever it is
    echoed, in every line of every format."""
    if not text:
        return text
    # Substring checks first: each regex scans the whole text (~0.6 ms per 36 kB), and most outputs hold none.
    if "@" in text:
        text = _URL_USERINFO.sub(lambda m: f"{m['scheme']}{MASK}@", text)  # one form: Target.display()
    if "bearer" in text.lower():
        text = _BEARER.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", text)
    return _mask_token_shapes(text)


def _mask_token_shapes(text: str) -> str:
    """``_TOKEN_SHAPES.sub(MASK, text)``, the pattern tried only where one of its prefixes occurs: every match
    starts with one, and a scan of the whole text tries the pattern at every position (~0.5 ms per 38 kB JSON
    document of a `check`, whose fact names hold ``hf_``). The same matches, left to right, never overlapping
    (tests/test_secrets.py compares the two on random texts)."""
    starts = sorted({at for prefix in _TOKEN_PREFIXES for at in _occurrences(text, prefix)})
    out: list[str] = []
    pos = 0
    for at in starts:
        if at < pos:
            continue
        found = _TOKEN_SHAPES.match(text, at)  # \b still sees the character before ``at``
        if found:
            out += [text[pos:at], MASK]
            pos = found.end()
    if not out:
        return text
    out.append(text[pos:])
    return "".join(out)


def _occurrences(text: str, part: str) -> list[int]:
    found = []
    at = text.find(part)
    while at >= 0:
        found.append(at)
        at = text.find(part, at + 1)
    return found


def _mask_assignments(text: str) -> str:
    """``HF_TOKEN=x``, ``"api_key": "x"``, ``?api_key=x`` → the value masked."""
    out: list[str] = []
    pos = 0
    for m in _NAME_SEP.finditer(text):
        if m.start() < pos or not is_secret_name(m.group(1)) or text[m.start() - 1:m.start()] in ("/", "\\"):
            continue  # a path's last part (``/etc/passwd: no such file``) names a file, not a secret
        start = m.end()
        end = start + len(_VALUE.match(text, start).group(0))
        if end > start:
            out += [text[pos:start], MASK]
            pos = end
    out.append(text[pos:])
    return "".join(out)


def _redact_flag_pairs_in_text(text: str) -> str:
    """``--api-key SECRET`` inside a single string (a pasted command)."""
    return re.sub(
        r"(?<![\w-])(?P<flag>--?[A-Za-z][A-Za-z0-9_-]*)(?P<sep>\s+)(?P<quote>['\"]?)(?P<value>[^\s'\"`]+)",
        lambda m: (f"{m['flag']}{m['sep']}{m['quote']}{MASK}"
                   if is_secret_name(m["flag"]) and not m["value"].startswith("-") else m.group(0)),
        text,
    )


def redact_argv(argv: list[str]) -> list[str]:
    """Mask the values of secret flags in an argv list (``--api-key X``, ``--api-key=X``) and any shaped secret."""
    out: list[str] = []
    mask_next = False
    for arg in argv:
        if mask_next and not arg.startswith("-"):
            out.append(MASK)
            mask_next = False
            continue
        mask_next = False
        if arg.startswith("-") and "=" in arg:
            flag, _, _value = arg.partition("=")
            if is_secret_name(flag):
                out.append(f"{flag}={MASK}")
                continue
        elif arg.startswith("-") and is_secret_name(arg):
            mask_next = True
        elif "=" in arg and not arg.startswith("-"):
            name, _, _value = arg.partition("=")
            if is_secret_name(name):  # VAR=value in front of a command
                out.append(f"{name}={MASK}")
                continue
        out.append(redact_text(arg))
    return out


def redact_env(env: dict[str, str]) -> dict[str, str]:
    return {k: (MASK if is_secret_name(k) else redact_text(v)) for k, v in env.items()}


#: Deeper than any document we read (server_info is 3-4 levels): below this, everything is masked rather than
#: walked, so a hostile document cannot exhaust the stack and nothing down there can leak.
MAX_DEPTH = 64


def redact_obj(obj: Any, _depth: int = 0) -> Any:
    """Recursively redact a JSON-like document (server_info, snapshots, targets files)."""
    if _depth > MAX_DEPTH and isinstance(obj, (dict, list, str)):
        return MASK
    if isinstance(obj, dict):
        # Only string values are secrets: SGLang's numeric `token_capacity` is not a token.
        return {
            k: (MASK if isinstance(k, str) and is_secret_name(k) and isinstance(v, str) and v
                else redact_obj(v, _depth + 1))
            for k, v in obj.items()
        }
    if isinstance(obj, list):
        if obj and all(isinstance(x, str) for x in obj) and any(x.startswith("-") for x in obj):
            return redact_argv(obj)
        return [redact_obj(x, _depth + 1) for x in obj]
    if isinstance(obj, str):
        return redact_text(obj)
    return obj
