"""A local stand-in for the Hugging Face Hub on 127.0.0.1, for model resolution tests (``HF_ENDPOINT``).

It answers the routes huggingface_hub's client really calls (read from huggingface_hub 2.x:
``HfApi.model_info`` → ``GET /api/models/{repo}[/revision/{rev}]``; ``hf_hub_download`` /
``get_hf_file_metadata`` → ``HEAD /{repo}/resolve/{rev}/{file}`` for X-Repo-Commit, ETag and size, then
``GET`` of the same URL; ``parse_safetensors_file_metadata`` → ``GET`` with ``Range: bytes=0-100000``, then a
second range for a larger header; ``hf_raise_for_status`` maps ``X-Error-Code`` GatedRepo / RepoNotFound /
EntryNotFound / RevisionNotFound to its exceptions), the way the real Hub answers them:

* a gated repo's files without a token: 401 with ``X-Error-Code: GatedRepo`` (with a wrong token: 403, same
  code); its ``/api/models`` card stays public, as on the Hub;
* a repo that does not exist: 401 ``X-Error-Code: RepoNotFound`` (the Hub hides private repos that way);
* a file that does not exist: 404 ``X-Error-Code: EntryNotFound``.

File contents are real configs read in place (``fixtures/configs``) and *scenario* safetensors
files made here: a real safetensors header (what the ``safetensors`` format defines: 8-byte little-endian
length, JSON of dtype/shape/data_offsets) and no tensor data. The declared size is header + the offsets'
end, as the real file's; a range inside the header returns the header's bytes, a range past it zeros. A GET
of a weights file without a range is answered 403 and recorded: llmdoctor must never download weights.
"""

from __future__ import annotations

import hashlib
import json
import re
import struct
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

#: Bytes per element of the safetensors dtypes the scenarios use (safetensors' own dtype names).
DTYPE_BYTES = {"F64": 8, "F32": 4, "BF16": 2, "F16": 2, "F8_E4M3": 1, "F8_E5M2": 1, "U8": 1, "I8": 1,
               "I32": 4, "I64": 8, "F8_E8M0": 1}


def safetensors_header(tensors: Iterable[tuple[str, str, list[int]]]) -> tuple[bytes, int]:
    """A real safetensors header for ``(name, dtype, shape)`` tensors laid out back to back.

    Returns the file's first bytes (length prefix + JSON header, padded with spaces to 8 bytes as the
    reference writer does) and the whole file's size had the data been written.
    """
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, dtype, shape in tensors:
        size = DTYPE_BYTES[dtype]
        for dim in shape:
            size *= dim
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    body = json.dumps(header, separators=(",", ":")).encode()
    body += b" " * (-len(body) % 8)
    head = struct.pack("<Q", len(body)) + body
    return head, len(head) + offset


@dataclass
class HubFile:
    """One file of a repo: bytes (or a real fixture read in place), or a header-only safetensors file."""

    data: bytes | None = None
    path: Path | None = None
    size: int | None = None  # declared size when larger than ``data`` (header-only safetensors)

    def head(self) -> bytes:
        return self.path.read_bytes() if self.path is not None else (self.data or b"")

    def total(self) -> int:
        return self.size if self.size is not None else len(self.head())

    @property
    def weights(self) -> bool:
        return self.size is not None


@dataclass
class HubRepo:
    files: dict[str, HubFile]
    gated: bool = False
    sha: str = ""

    def __post_init__(self) -> None:
        if not self.sha:
            digest = hashlib.sha1()
            for name in sorted(self.files):
                digest.update(name.encode() + self.files[name].head()[:4096])
            self.sha = digest.hexdigest()


@dataclass
class HubRequest:
    method: str
    path: str
    headers: dict[str, str]


@dataclass
class HubServer:
    """``with HubServer(repos) as hub``: ``hub.endpoint`` is the ``HF_ENDPOINT`` to use."""

    repos: dict[str, HubRepo]
    token: str = "hf_standin_token"  # the one token that opens gated repos
    requests: list[HubRequest] = field(default_factory=list)
    port: int = 0
    #: seconds each request waits before its answer (a slow or stalled Hub: longer than any client timeout)
    stall_s: float = 0.0

    def __enter__(self) -> HubServer:
        self._httpd = ThreadingHTTPServer(("127.0.0.1", self.port), _handler(self))
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        # a port the OS hands out again is a new Hub: an earlier run's "unreachable" memo for it must not answer
        # for this one (doctor/model/hubmemo.py keeps it an hour, per endpoint)
        from doctor.model.hubmemo import forget_unreachable

        forget_unreachable(self.endpoint)
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def weight_downloads(self) -> list[HubRequest]:
        """Requests that would have fetched tensor data (a GET of a weights file past its header)."""
        return [r for r in self.requests if r.method == "GET" and r.path.endswith(".safetensors")
                and "range" not in r.headers]


_API = re.compile(r"^/api/models/(?P<repo>[^/]+/[^/]+?)(?:/revision/(?P<rev>[^/]+))?/?$")
_RESOLVE = re.compile(r"^/(?P<repo>[^/]+/[^/]+)/resolve/(?P<rev>[^/]+)/(?P<file>.+)$")
_RANGE = re.compile(r"^bytes=(\d+)-(\d*)$")


def _handler(hub: HubServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:  # quiet
            pass

        def do_HEAD(self) -> None:  # noqa: N802 (http.server's naming)
            self._serve(body=False)

        def do_GET(self) -> None:  # noqa: N802
            self._serve(body=True)

        def _serve(self, *, body: bool) -> None:
            from urllib.parse import unquote, urlsplit

            path = unquote(urlsplit(self.path).path)
            headers = {k.lower(): v for k, v in self.headers.items()}
            hub.requests.append(HubRequest(self.command, path, headers))
            if hub.stall_s:
                time.sleep(hub.stall_s)
            api, resolve = _API.match(path), _RESOLVE.match(path)
            match = api or resolve
            if match is None:
                return self._error(404, "", "Not Found", body)
            repo = hub.repos.get(match["repo"])
            if repo is None:
                return self._error(401, "RepoNotFound", "Repository not found", body)
            if repo.gated and resolve is not None:  # a gated repo's card and file list are public
                auth = headers.get("authorization", "")
                if not auth:
                    return self._error(401, "GatedRepo", "Access to model is restricted. You must be "
                                       "authenticated to access it.", body)
                if auth != f"Bearer {hub.token}":
                    return self._error(403, "GatedRepo", "Access to model is restricted and you are not in "
                                       "the authorized list.", body)
            rev = match["rev"] or "main"
            if rev not in ("main", repo.sha):
                return self._error(404, "RevisionNotFound", f"Invalid rev id: {rev}", body)
            if api is not None:
                return self._api(match["repo"], repo, body)
            return self._file(repo, match["file"], headers, body)

        def _api(self, name: str, repo: HubRepo, body: bool) -> None:
            info = {"_id": repo.sha[:24], "id": name, "modelId": name, "sha": repo.sha, "private": False,
                    "gated": "auto" if repo.gated else False, "disabled": False, "tags": [],
                    "siblings": [{"rfilename": f} for f in sorted(repo.files)]}
            self._send(200, json.dumps(info).encode(), "application/json", {}, body)

        def _file(self, repo: HubRepo, name: str, headers: dict[str, str], body: bool) -> None:
            item = repo.files.get(name)
            if item is None:
                return self._error(404, "EntryNotFound", f"{name} does not exist on \"main\"", body)
            head, total = item.head(), item.total()
            etag = hashlib.sha256(head).hexdigest() if item.weights else hashlib.sha1(head).hexdigest()
            extra = {"X-Repo-Commit": repo.sha, "ETag": f'"{etag}"', "Accept-Ranges": "bytes"}
            if item.weights:
                extra["X-Linked-Etag"] = f'"{etag}"'
                extra["X-Linked-Size"] = str(total)
            wanted = _RANGE.match(headers.get("range", ""))
            if self.command == "GET" and item.weights and wanted is None:
                return self._error(403, "", "the Hub stand-in never serves tensor data", body)
            if wanted is None:
                return self._send(200, head, "application/octet-stream", extra, body, length=total)
            start = int(wanted[1])
            end = min(int(wanted[2]) if wanted[2] else total - 1, total - 1)
            if start >= total:
                return self._send(416, b"", "text/plain", {"Content-Range": f"bytes */{total}"}, body)
            chunk = head[start:end + 1]
            chunk += b"\0" * (end + 1 - start - len(chunk))
            extra["Content-Range"] = f"bytes {start}-{end}/{total}"
            self._send(206, chunk, "application/octet-stream", extra, body)

        def _error(self, status: int, code: str, message: str, body: bool) -> None:
            extra = {"X-Error-Message": message}
            if code:
                extra["X-Error-Code"] = code
            self._send(status, json.dumps({"error": message}).encode(), "application/json", extra, body)

        def _send(self, status: int, data: bytes, content_type: str, extra: dict[str, str], body: bool,
                  length: int | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(length if length is not None and not body else len(data)))
            for key, value in extra.items():
                self.send_header(key, value)
            self.end_headers()
            if body:
                self.wfile.write(data)

    return Handler


def config_repo(config: Path, *, gated: bool = False, extra: dict[str, HubFile] | None = None) -> HubRepo:
    """A repo whose config.json is a real fixture, read in place."""
    return HubRepo({"config.json": HubFile(path=config), **(extra or {})}, gated=gated)


def repo_id_of(fixture: Path) -> str:
    """``Qwen__Qwen3-8B.json`` → ``Qwen/Qwen3-8B`` (how fixtures/configs names its files)."""
    return fixture.stem.removesuffix(".reconstructed").replace("__", "/", 1)


def dense_tensors(config: dict, fmt: str = "BF16") -> list[tuple[str, str, list[int]]]:
    """A *scenario* tensor list for a dense Llama/Qwen-style checkpoint with ``config``'s shapes, named as
    Hugging Face writes them. ``fmt``: BF16, FP8 (128×128 block scales, ``weight_scale_inv`` F32, as
    DeepSeek/Qwen FP8 repos store them) or NVFP4 (ModelOpt: U8 packed pairs, an F8_E4M3 scale per 16 values,
    F32 ``weight_scale_2``/``input_scale``); embeddings, norms and lm_head stay BF16."""
    h, inter, vocab = config["hidden_size"], config["intermediate_size"], config["vocab_size"]
    heads, kv = config["num_attention_heads"], config.get("num_key_value_heads", config["num_attention_heads"])
    hd = config.get("head_dim") or h // heads
    out: list[tuple[str, str, list[int]]] = [("model.embed_tokens.weight", "BF16", [vocab, h]),
                                              ("model.norm.weight", "BF16", [h])]
    if not config.get("tie_word_embeddings"):
        out.append(("lm_head.weight", "BF16", [vocab, h]))

    def linear(name: str, rows: int, cols: int) -> None:
        if fmt == "BF16":
            out.append((f"{name}.weight", "BF16", [rows, cols]))
        elif fmt == "FP8":
            out.append((f"{name}.weight", "F8_E4M3", [rows, cols]))
            out.append((f"{name}.weight_scale_inv", "F32", [-(-rows // 128), -(-cols // 128)]))
        elif fmt == "NVFP4":
            out.append((f"{name}.weight", "U8", [rows, cols // 2]))
            out.append((f"{name}.weight_scale", "F8_E4M3", [rows, cols // 16]))
            out.append((f"{name}.weight_scale_2", "F32", []))
            out.append((f"{name}.input_scale", "F32", []))
        else:
            raise ValueError(fmt)

    for i in range(config["num_hidden_layers"]):
        p = f"model.layers.{i}"
        linear(f"{p}.self_attn.q_proj", heads * hd, h)
        linear(f"{p}.self_attn.k_proj", kv * hd, h)
        linear(f"{p}.self_attn.v_proj", kv * hd, h)
        linear(f"{p}.self_attn.o_proj", h, heads * hd)
        for proj, rows, cols in (("gate_proj", inter, h), ("up_proj", inter, h), ("down_proj", h, inter)):
            linear(f"{p}.mlp.{proj}", rows, cols)
        out += [(f"{p}.input_layernorm.weight", "BF16", [h]), (f"{p}.post_attention_layernorm.weight", "BF16", [h])]
        if config.get("model_type") == "qwen3":
            out += [(f"{p}.self_attn.q_norm.weight", "BF16", [hd]), (f"{p}.self_attn.k_norm.weight", "BF16", [hd])]
    return out


def sharded(tensors: list[tuple[str, str, list[int]]], shards: int) -> dict[str, HubFile]:
    """Header-only safetensors shards and the index that maps each tensor to its shard, as HF writes them."""
    files: dict[str, HubFile] = {}
    weight_map: dict[str, str] = {}
    per = -(-len(tensors) // shards)
    total = 0
    for n in range(shards):
        name = f"model-{n + 1:05d}-of-{shards:05d}.safetensors"
        part = tensors[n * per:(n + 1) * per]
        head, size = safetensors_header(part)
        files[name] = HubFile(data=head, size=size)
        total += size - len(head)
        weight_map.update({t[0]: name for t in part})
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    files["model.safetensors.index.json"] = HubFile(data=json.dumps(index).encode())
    return files


def tensor_bytes(tensors: Iterable[tuple[str, str, list[int]]]) -> int:
    """What the tensors occupy, computed independently of any header (dtype size × elements)."""
    total = 0
    for _, dtype, shape in tensors:
        size = DTYPE_BYTES[dtype]
        for dim in shape:
            size *= dim
        total += size
    return total
