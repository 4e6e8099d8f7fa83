"""A stand-in for an engine's launch process: a real listening server whose command line looks like a launch.

The process probe finds a server by the port it listens on and reads its argv and environment; this
script gives it a real process to find, started the way a user would start an engine, e.g.

    python -m tests.support.fake_launch --model-path Qwen/Qwen3-8B --tp-size 2 --api-key SECRET --port 0

Every flag is accepted and ignored except --host and --port (an IPv6 --host listens on IPv6; ``::``
dual-stack, as engines do when told ``--host ::``). Once listening it prints
``LISTENING <port>`` on stdout (port 0 picks a free one), then serves /health until killed — and, when the
environment names a routes file (``FAKE_LAUNCH_ROUTES``: JSON ``{path: [content type, file]}``), those files
too, so one real process can be both the server the HTTP probes read and the process the process probe finds.

Start it as ``python -m sglang.launch_server`` (``launch_argv`` and ``launch_env``): the process probe reads only a
command line that starts an engine, and tests/support/engine_shim makes that module name run this script.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

_ROUTES: dict[str, list[str]] = {}
_TESTS = Path(__file__).resolve().parents[1]


def launch_argv(*flags: str) -> list[str]:
    """The stand-in's command line: an SGLang launch, as the process probe will see it in /proc."""
    return [sys.executable, "-m", "sglang.launch_server", *flags]


def launch_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """``base`` with PYTHONPATH set so that ``-m sglang.launch_server`` runs this script."""
    return {**(base or {}), "PYTHONPATH": os.pathsep.join((str(_TESTS / "support" / "engine_shim"), str(_TESTS)))}


class _Health(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        route = _ROUTES.get(self.path) or _ROUTES.get(self.path.split("?")[0])
        body = Path(route[1]).read_bytes() if route else b""
        self.send_response(200 if route or self.path == "/health" else 404)
        if route:
            self.send_header("Content-Type", route[0])
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
        pass


class _HTTPServer6(ThreadingHTTPServer):
    address_family = socket.AF_INET6

    def server_bind(self) -> None:
        self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)  # dual stack, as Linux's default
        super().server_bind()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args, _engine_flags = parser.parse_known_args(argv)
    if os.environ.get("FAKE_LAUNCH_ROUTES"):
        _ROUTES.update(json.loads(Path(os.environ["FAKE_LAUNCH_ROUTES"]).read_text()))
    server_class = _HTTPServer6 if ":" in args.host else ThreadingHTTPServer
    server = server_class((args.host, args.port), _Health)
    print(f"LISTENING {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main(sys.argv[1:])
