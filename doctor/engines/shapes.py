"""Finding the engine launch in whatever people paste, and splitting it into the engine's argv.

Launch commands arrive as a shell line with backslash continuations, CRLF line ends, comments,
``VAR=1`` prefixes and ``export`` lines; as ``docker run ... vllm/vllm-openai:TAG ...``; as a
Kubernetes container (``command:``/``args:`` lists, or a whole manifest); or as an argv list. This
module only locates the launch and tokenises it (``Launch``); ``command.py`` interprets the tokens
with the engine's catalog. Every way the input can be unusable is one ``InputError`` line.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field

from doctor.errors import InputError
from doctor.versions import extract_version

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

WHERE = "launch command"
#: The longest launch command read: a pasted Kubernetes manifest is tens of KiB; past this it is not a command
#: (and splitting megabytes of shell text would take seconds for nothing).
MAX_COMMAND_CHARS = 1 << 20
_ENV_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_PYTHON = re.compile(r"^python(\d+(\.\d+)?)?$")
_WRAPPERS = {"sudo", "exec", "nohup", "time", "command", "stdbuf"}
_SHELLS = {"sh", "bash", "dash", "zsh"}
_CONTROL = re.compile("[\x01-\x08\x0e-\x1f\ufff0-\uffff]")
_YAML_HINT = re.compile(r"^\s*(-\s|(command|args|containers|spec|apiVersion|kind|image)\s*:)", re.MULTILINE)

#: python -m modules that start a server, and what they are.
_MODULES = {
    "vllm.entrypoints.openai.api_server": ("vllm", "python -m vllm.entrypoints.openai.api_server"),
    "vllm.entrypoints.api_server": ("vllm", "python -m vllm.entrypoints.api_server"),
    "sglang.launch_server": ("sglang", "python -m sglang.launch_server"),
    "sglang_router.launch_server": ("sglang", "python -m sglang_router.launch_server"),
}

#: docker/podman ``run`` options that take a value (everything else before the image is a switch).
_DOCKER_VALUE_OPTS = {
    "-e", "--env", "--env-file", "-v", "--volume", "-p", "--publish", "--name", "--gpus", "--ipc", "--shm-size",
    "--network", "--net", "--entrypoint", "-w", "--workdir", "--runtime", "--ulimit", "--mount", "-u", "--user",
    "--device", "--cpus", "-m", "--memory", "--restart", "-l", "--label", "--platform", "--pull", "--add-host",
    "--security-opt", "--cap-add", "--cap-drop", "-h", "--hostname", "--log-driver", "--log-opt", "--pid",
    "--cgroupns", "--memory-swap", "--cpuset-cpus", "--tmpfs", "--dns", "--expose", "--group-add", "--stop-signal",
    "--health-cmd", "--health-interval", "--label-file", "--volumes-from", "--userns", "--uts", "--cidfile",
}


@dataclass
class Launch:
    """One engine launch found in the input."""

    engine: str | None          # None: only flags were given; command.py guesses from them
    entry: str                  # how it was started ("vllm serve", "docker lmsysorg/sglang:...")
    argv: list[str]             # the engine's own arguments
    env: dict[str, str] = field(default_factory=dict)
    image: str | None = None
    image_version: str | None = None
    shape: str = "shell"        # shell | docker | kubernetes | argv
    notes: list[str] = field(default_factory=list)


def find_launch(source: str | list[str]) -> Launch:
    """The engine launch in ``source`` (text as pasted, or an argv list)."""
    if isinstance(source, (list, tuple)):
        tokens = [_as_str(t) for t in source]
        _check_size(sum(len(t) + 1 for t in tokens))
        launch = _from_segments([tokens], shape="argv")
        return launch
    if not isinstance(source, str):
        raise InputError(f"{WHERE}: expected text or a list of arguments, got {type(source).__name__}")
    text = _check_text(source)
    if _YAML_HINT.search(text) and not _looks_like_shell(text):
        launch = _from_yaml(text)
        if launch is not None:
            return launch
    return _from_segments(split_shell(text), shape="shell")


# ---------------------------------------------------------------------------------------------
# Text hygiene and shell tokenisation
# ---------------------------------------------------------------------------------------------
def _check_size(chars: int) -> None:
    if chars > MAX_COMMAND_CHARS:
        raise InputError(f"{WHERE}: {chars} characters is more than the {MAX_COMMAND_CHARS} a launch command can be")


def _check_text(text: str) -> str:
    _check_size(len(text))
    if "\x00" in text:
        raise InputError(f"{WHERE}: binary data (NUL bytes), not a command")
    if not text.strip():
        raise InputError(f"{WHERE}: empty")
    bad = len(_CONTROL.findall(text))
    if bad > max(2, len(text) // 50):
        raise InputError(f"{WHERE}: binary data ({bad} control characters), not a command")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _looks_like_shell(text: str) -> bool:
    first = next((ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("#")), "")
    return bool(re.match(r"^(\$\s*)?([A-Za-z_][A-Za-z0-9_]*=\S*\s+)*(vllm|sglang|python\d*(\.\d+)?|docker|podman|"
                         r"nerdctl|export|sudo|uv|env|CUDA)\b", first))


def split_shell(text: str) -> list[list[str]]:
    """Shell text → commands (lists of words), split the way a POSIX shell would.

    Quotes and backslashes follow POSIX rules; backslash-newline joins lines; ``;``, ``&&``,
    ``||``, ``|``, ``&`` and unquoted newlines end a command, except that a newline followed by a
    line starting with ``-`` continues it (a flag whose backslash was lost in pasting); ``#`` starts
    a comment at the start of a word; markdown fences and ``$`` prompts are dropped.
    """
    lines = []
    for raw in text.split("\n"):
        stripped = raw.lstrip()
        if stripped.startswith("```"):
            continue
        lines.append(stripped[2:] if stripped.startswith("$ ") else raw)
    return _tokenise("\n".join(lines))


def _tokenise(text: str) -> list[list[str]]:  # noqa: C901 - one state machine
    segments: list[list[str]] = [[]]
    word: list[str] = []
    in_word = False
    i, n = 0, len(text)

    def end_word() -> None:
        nonlocal word, in_word
        if in_word:
            segments[-1].append("".join(word))
        word, in_word = [], False

    while i < n:
        c = text[i]
        if c == "'":
            j = text.find("'", i + 1)
            if j < 0:
                raise InputError(f"{WHERE}: unbalanced ' quote")
            word.append(text[i + 1:j])
            in_word, i = True, j + 1
            continue
        if c == '"':
            i += 1
            while True:
                if i >= n:
                    raise InputError(f'{WHERE}: unbalanced " quote')
                d = text[i]
                if d == '"':
                    break
                if d == "\\" and i + 1 < n and text[i + 1] in '"\\$`\n':
                    if text[i + 1] != "\n":
                        word.append(text[i + 1])
                    i += 2
                    continue
                word.append(d)
                i += 1
            in_word, i = True, i + 1
            continue
        if c == "{" and text.startswith("{{", i) and (j := text.find("}}", i + 2)) >= 0:
            # a Helm/Go template action is one word, spaces and pipes included (doctor/engines/placeholders.py)
            word.append(text[i:j + 2])
            in_word, i = True, j + 2
            continue
        if c == "\\":
            if i + 1 < n and text[i + 1] != "\n":
                word.append(text[i + 1])
                in_word = True
            i += 2
            continue
        if c in " \t":
            end_word()
        elif c == "#" and not in_word:
            while i < n and text[i] != "\n":
                i += 1
            continue
        elif c == "\n":
            end_word()
            if not text[i + 1:].lstrip(" \t").startswith("-"):
                segments.append([])
        elif c in ";&|":
            end_word()
            segments.append([])
            if i + 1 < n and text[i + 1] == c and c in "&|":
                i += 1
        else:
            word.append(c)
            in_word = True
        i += 1
    end_word()
    return [seg for seg in segments if seg]


# ---------------------------------------------------------------------------------------------
# Locating the launch
# ---------------------------------------------------------------------------------------------
def launch_segment(segments: list[list[str]], shape: str = "shell") -> tuple[int, Launch] | None:
    """The first command of ``segments`` that starts an engine, with its index (``export`` lines before it
    give their variables to its env); None when no command does."""
    env: dict[str, str] = {}
    for index, tokens in enumerate(segments):
        tokens, local_env = _strip_env(tokens, env)
        if not tokens:
            continue
        launch = _wrapped_entry(tokens, shape)
        if launch is not None:
            launch.env = {**env, **local_env, **launch.env}
            return index, launch
    return None


def _from_segments(segments: list[list[str]], shape: str) -> Launch:
    found = launch_segment(segments, shape)
    if found is not None:
        return found[1]
    env: dict[str, str] = {}
    for tokens in segments:
        _strip_env(tokens, env)
    flags_only = [t for seg in segments for t in seg]
    if flags_only and flags_only[0].startswith("-"):
        # only engine arguments (a k8s args: list, a pasted flag list): command.py guesses the engine
        tokens, local_env = _strip_env(flags_only, env)
        return Launch(None, "arguments only", tokens, {**env, **local_env}, shape=shape)
    if shape == "argv":
        return _launcher_arguments(flags_only, env)
    first = " ".join(segments[0][:3]) if segments else ""
    raise InputError(f"{WHERE}: no vLLM or SGLang launch found (expected `vllm serve`, "
                     f"`python -m sglang.launch_server`, `sglang serve`, or a vllm/vllm-openai or "
                     f"lmsysorg/sglang image; saw {first[:60]!r}{_unread_why(segments)})")


def other_subcommand(text: str) -> str | None:
    """The sub-command of an engine CLI other than ``serve`` that ``text`` runs (``vllm chat`` -> ``chat``), or None.

    Such a run is a client or tool of the engine, not a deployment: its log lines are not a server's.
    """
    try:
        segments = split_shell(text)
    except InputError:
        return None
    tokens = _strip_env(segments[0], {})[0] if segments else []
    if len(tokens) > 1 and os.path.basename(tokens[0]) in ("vllm", "sglang") and not tokens[1].startswith("-") \
            and tokens[1] != "serve":
        return tokens[1][:30]
    return None


def _unread_why(segments: list[list[str]]) -> str:
    """What was not understood, where a word says: an image llmdoctor cannot tell the engine of, a subcommand the
    engine's CLI does not have."""
    tokens = _strip_env(segments[0], {})[0] if segments else []
    head = os.path.basename(tokens[0]) if tokens else ""
    if head in ("docker", "podman", "nerdctl") and len(tokens) > 2 and tokens[1] == "run":
        image = _docker_split(tokens[2:])[1]
        return (f": the image {image[:60]} is not one llmdoctor can tell the engine of, and the command after it "
                "starts no engine entry point")
    if head in ("vllm", "sglang") and len(tokens) > 1:
        return f": `{head} {tokens[1][:30]}` is not a command llmdoctor reads (`{head} serve` is)"
    return ""


def _launcher_arguments(tokens: list[str], env: dict[str, str]) -> Launch:
    """A process's argv that starts no engine entry point llmdoctor knows: the engine's flags behind a launcher
    of the operator's own (``python serve.py --model ...``), or no engine at all (a proxy on the port).

    The program (and for Python its options and script or module) is not an engine argument: only what follows
    is read, and only if it is flags. A process with no flags after its program is not a launch to lint; saying
    its path is a stray argument would be a false "the server cannot start" about a server that is running.
    """
    tokens, local_env = _strip_env(tokens, env)
    if not tokens:
        raise InputError(f"{WHERE}: empty")
    program, i = os.path.basename(tokens[0]), 1
    if _PYTHON.match(program):
        i = _interpreter_options_end(tokens)
        i = min(i + (2 if i < len(tokens) and tokens[i] == "-m" else 1), len(tokens))
    launcher, rest = " ".join([program, *tokens[1:i]]), tokens[i:]
    if not rest or not rest[0].startswith("-"):
        raise InputError(f"{WHERE}: `{launcher[:80]}` is not a vLLM or SGLang launch (no engine entry point, "
                         "no engine flags)")
    return Launch(None, "arguments only", rest, {**env, **local_env}, shape="argv",
                  notes=[f"started by `{launcher[:80]}`, a launcher llmdoctor does not know: the arguments after "
                         "it are read as the engine's"])


def _interpreter_options_end(tokens: list[str]) -> int:
    """In ``python [options] (-m MODULE | SCRIPT) …``, the index of ``-m`` or of the script."""
    i = 1
    while i < len(tokens) and tokens[i].startswith("-") and tokens[i] != "-m":
        i += 1
    return i


def _strip_env(tokens: list[str], env: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """Remove ``export A=1``, ``A=1 cmd``, ``env A=1 cmd`` and wrappers such as sudo/nohup."""
    local: dict[str, str] = {}
    i = 0
    if tokens and tokens[0] == "export":
        for tok in tokens[1:]:
            if _ENV_ASSIGN.match(tok):
                name, _, value = tok.partition("=")
                env[name] = value
        return [], local
    while i < len(tokens):
        tok = tokens[i]
        if _ENV_ASSIGN.match(tok):
            name, _, value = tok.partition("=")
            local[name] = value
        elif tok in _WRAPPERS or tok == "env":
            pass
        elif tok in ("uv", "pixi", "poetry", "conda") and i + 1 < len(tokens) and tokens[i + 1] == "run":
            i += 1
        else:
            break
        i += 1
    return tokens[i:], local


def _wrapped_entry(tokens: list[str], shape: str) -> Launch | None:
    """The engine launch in ``tokens``, also where a runner llmdoctor does not model starts it: ``uvx --with X
    vllm serve …``, ``pipx run``, ``conda run -n env``, ``srun …``, ``ssh host …``, ``docker exec c …`` — the first
    word from which an engine entry point reads is the launch, and the words before it are only its runner (said
    in a note). ``sh -c "…"`` is read as the script it runs."""
    launch = _entry(tokens, shape)
    if launch is not None:
        return launch
    if len(tokens) >= 3 and os.path.basename(tokens[0]) in _SHELLS and tokens[1] in ("-c", "-lc", "-ec"):
        found = launch_segment(split_shell(tokens[2]), shape)
        return found[1] if found is not None else None
    for start in range(1, len(tokens)):
        head = os.path.basename(tokens[start])
        if head not in ("vllm", "sglang") and not _PYTHON.match(head):
            continue
        inner_tokens, inner_env = _strip_env(tokens[start:], {})
        launch = _entry(inner_tokens, shape) if inner_tokens else None
        if launch is not None:
            runner = " ".join(tokens[:start])
            launch.env = {**inner_env, **launch.env}
            launch.notes.append(f"started through `{runner[:80]}`: the engine's arguments are read from "
                                f"`{launch.entry}` on")
            return launch
    return None


def _script_module(path: str) -> str | None:
    """The engine module a script path is (``python python/sglang/launch_server.py`` from a source checkout)."""
    if not path.endswith(".py"):
        return None
    dotted = path[:-3].replace("\\", "/").replace("/", ".")
    return next((m for m in _MODULES if dotted == m or dotted.endswith("." + m)), None)


def _entry(tokens: list[str], shape: str) -> Launch | None:
    head = os.path.basename(tokens[0])
    if head == "vllm" and len(tokens) > 1 and tokens[1] == "serve":
        return Launch("vllm", "vllm serve", tokens[2:], shape=shape)
    if head == "sglang" and len(tokens) > 1 and tokens[1] == "serve":
        return Launch("sglang", "sglang serve", tokens[2:], shape=shape)
    if _PYTHON.match(head):
        i = _interpreter_options_end(tokens)
        if i + 1 < len(tokens) and tokens[i] == "-m":
            module = tokens[i + 1]
            if module in _MODULES:
                engine, entry = _MODULES[module]
                return Launch(engine, entry, tokens[i + 2:], shape=shape)
            if module == "vllm.entrypoints.cli.main" and i + 2 < len(tokens) and tokens[i + 2] == "serve":
                return Launch("vllm", "vllm serve", tokens[i + 3:], shape=shape)
        elif i < len(tokens) and os.path.basename(tokens[i]) in ("vllm", "sglang"):
            # The console script run by its shebang: how `vllm serve` reads in /proc/PID/cmdline.
            return _entry(tokens[i:], shape)
        elif i < len(tokens) and (module := _script_module(tokens[i])) is not None:
            engine, entry = _MODULES[module]
            return Launch(engine, entry, tokens[i + 1:], shape=shape,
                          notes=[f"the script {tokens[i]} is the module {module}, run from a source checkout"])
        return None
    if head in ("docker", "podman", "nerdctl") and len(tokens) > 1 and tokens[1] == "run":
        return _docker(tokens[2:])
    return None


def _docker_split(tokens: list[str]) -> tuple[dict[str, str], str, list[str]]:
    """``docker run``'s words after ``run`` → (its ``-e`` environment, the image, the command after the image)."""
    env: dict[str, str] = {}
    i = 0
    while i < len(tokens) and tokens[i].startswith("-"):
        tok = tokens[i]
        name, eq, value = tok.partition("=")
        takes = name in _DOCKER_VALUE_OPTS
        if takes and not eq:
            value = tokens[i + 1] if i + 1 < len(tokens) else ""
            i += 1
        elif not takes and re.fullmatch(r"-e[A-Za-z_]\w*=.*", tok):  # -eVAR=value
            name, value = "-e", tok[2:]
        if name in ("-e", "--env") and value:
            var, has_value, val = value.partition("=")
            env[var] = val if has_value else "<from host environment>"
        i += 1
    if i >= len(tokens):
        raise InputError(f"{WHERE}: `docker run` without an image")
    return env, tokens[i], tokens[i + 1:]


def _docker(tokens: list[str]) -> Launch | None:
    env, image, rest = _docker_split(tokens)
    engine = _engine_of_image(image)
    version = extract_version(image.rpartition(":")[2]) if ":" in image.rpartition("/")[2] else None
    entry = f"docker {image}"
    if rest:
        inner_tokens = _strip_env(rest, env)[0] if not rest[0].startswith("-") else []
        inner = _wrapped_entry(inner_tokens, "docker") if inner_tokens else None
        if inner is not None:
            inner.env = {**env, **inner.env}
            inner.image, inner.image_version, inner.shape = image, version, "docker"
            inner.entry = f"{entry} {inner.entry}"
            if engine is None:
                return inner
            if inner.engine != engine:
                inner.notes.append(f"image {image} looks like {engine} but runs {inner.engine}")
            return inner
    if engine is None:
        return None
    notes = []
    if engine == "sglang" and (not rest or rest[0].startswith("-")):
        notes.append("the lmsysorg/sglang image has no server entrypoint: arguments read as "
                     "python -m sglang.launch_server's")
    return Launch(engine, entry, rest, env, image, version, "docker", notes)


def _engine_of_image(image: str) -> str | None:
    repo = image.rpartition(":")[0] if ":" in image.rpartition("/")[2] else image
    repo = repo.split("@", 1)[0].lower()
    if "vllm" in repo:
        return "vllm"
    if "sglang" in repo:
        return "sglang"
    return None


# ---------------------------------------------------------------------------------------------
# Kubernetes YAML
# ---------------------------------------------------------------------------------------------
def _from_yaml(text: str) -> Launch | None:
    from doctor.yamlsafe import load_yaml_documents  # lazy: only YAML pastes pay for it

    # Aliases are refused (a billion-laughs manifest would make the container search below exponential).
    try:
        docs = [d for d in load_yaml_documents(text, WHERE, max_bytes=MAX_COMMAND_CHARS * 4) if d is not None]
    except InputError:
        if re.search(r"^\s*(apiVersion|kind|containers)\s*:", text, re.MULTILINE):
            raise
        return None
    for doc in docs:
        if isinstance(doc, dict) and set(doc) <= {"args", "env"} and isinstance(doc.get("args"), list):
            doc_env = _container_env(doc.get("env"))  # a container's `args:` block on its own: the bare list
            doc = doc["args"]
        else:
            doc_env = {}
        if isinstance(doc, list) and all(isinstance(x, (str, int, float)) for x in doc):
            launch = _from_segments([[_as_str(x) for x in doc]], shape="kubernetes")
            launch.env = {**doc_env, **launch.env}
            return launch
        for container in _containers(doc):
            launch = _from_container(container)
            if launch is not None:
                return launch
    return None


def _containers(node: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    if isinstance(node, dict):
        if any(k in node for k in ("command", "args")) or ("image" in node and isinstance(node.get("image"), str)):
            found.append(node)
        for value in node.values():
            found.extend(_containers(value))
    elif isinstance(node, list):
        for value in node:
            found.extend(_containers(value))
    return found


def container_launch(container: dict[str, Any]) -> Launch | None:
    """The launch a container (``command``, ``args``, ``env``, ``image``) runs, or None; an ``args:`` block with
    no image is the engine's arguments alone when they are flags."""
    launch = _from_container(container)
    if launch is None and "image" not in container:
        tokens = _as_list(container.get("command")) + _as_list(container.get("args"))
        if tokens and tokens[0].startswith("-"):
            return Launch(None, "arguments only", tokens, shape="kubernetes")
    return launch


def _from_container(container: dict[str, Any]) -> Launch | None:
    command = _as_list(container.get("command"))
    args = _as_list(container.get("args"))
    env = _container_env(container.get("env"))
    image = container.get("image") if isinstance(container.get("image"), str) else None
    tokens = command + args
    # `sh -c "vllm serve ..."`: the launch is inside the script string
    if len(tokens) >= 3 and os.path.basename(tokens[0]) in _SHELLS and tokens[1] in ("-c", "-lc", "-ec"):
        segments = split_shell(" ".join(tokens[2:]) if len(tokens) > 3 else tokens[2])
    else:
        segments = [tokens] if tokens else []
    launch: Launch | None = None
    for seg in segments:
        seg, local = _strip_env(seg, env)
        if seg:
            launch = _entry(seg, "kubernetes")
            if launch is not None:
                launch.env = {**env, **local, **launch.env}
                break
    engine = _engine_of_image(image) if image else None
    version = extract_version(image.rpartition(":")[2]) if image and ":" in image.rpartition("/")[2] else None
    if launch is None:
        if engine is None or not tokens:
            return None
        launch = Launch(engine, f"kubernetes {image}", tokens, env, shape="kubernetes")
    launch.image, launch.image_version = image, version
    launch.shape = "kubernetes"
    return launch


def _container_env(env: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    if isinstance(env, list):
        for item in env:
            if isinstance(item, dict) and isinstance(item.get("name"), str):
                if "value" in item:
                    out[item["name"]] = _as_str(item["value"])
                else:
                    out[item["name"]] = "<from valueFrom>"
    return out


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        try:
            return shlex.split(value)
        except ValueError as exc:
            raise InputError(f"{WHERE}: cannot split {value[:40]!r}: {exc}") from None
    if isinstance(value, list):
        return [_as_str(v) for v in value]
    raise InputError(f"{WHERE}: command/args: expected a list of strings, got {type(value).__name__}")


def _as_str(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    raise InputError(f"{WHERE}: argument {value!r}: expected a string")
