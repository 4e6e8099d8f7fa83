"""``llmdoctor serve``: receive Alertmanager's webhook and answer each firing alert with a check (doctor/serve)."""

from __future__ import annotations

import click

from doctor.cli.options import beside, bounded, option_group, playbooks_option
from doctor.errors import EXIT_OK, InputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from doctor.serve.dispatch import ServeOptions

EPILOG = """\b
Examples:
  llmdoctor serve --listen 127.0.0.1:9095 --out-dir /var/lib/llmdoctor/alerts
  llmdoctor serve --listen 0.0.0.0:9095 --targets fleet.yaml --notify-url-env SLACK_WEBHOOK_URL
  curl -s localhost:9095/healthz

\b
Alertmanager (alertmanager.yml):
  receivers:
    - name: llmdoctor
      webhook_configs:
        - url: http://llmdoctor:9095/alertmanager
          send_resolved: false

\b
Exit codes: 0 stopped (SIGTERM or Ctrl-C); 2 bad input (listen address, targets file, playbooks, env var).
"""


class ServeFlags:
    """--targets … --dedup-window, --playbooks: how `serve` checks and where it delivers (:meth:`options` makes the
    pipeline's ``ServeOptions`` of them, checked; --listen and --token-env reach the command beside them)."""

    __slots__ = ("targets_file", "check_unlisted", "out_dir", "notify_url", "notify_url_env", "timeout_s",
                 "concurrency", "max_queue", "dedup_window", "playbook_dirs")

    def __init__(self, targets_file: str | None, check_unlisted: bool, out_dir: str | None, notify_url: str | None,
                 notify_url_env: str | None, timeout_s: float, concurrency: int, max_queue: int,
                 dedup_window: str, playbook_dirs: tuple[str, ...]) -> None:
        self.targets_file, self.check_unlisted, self.out_dir = targets_file, check_unlisted, out_dir
        self.notify_url, self.notify_url_env, self.timeout_s = notify_url, notify_url_env, timeout_s
        self.concurrency, self.max_queue, self.dedup_window = concurrency, max_queue, dedup_window
        self.playbook_dirs = playbook_dirs

    def notify(self) -> str | None:
        """The notify URL, from --notify-url or the variable --notify-url-env names; one InputError when unusable."""
        from doctor.probes.base import api_key_from_env

        notify_url = self.notify_url
        if notify_url and self.notify_url_env:
            raise InputError("give --notify-url or --notify-url-env, not both")
        if self.notify_url_env:
            notify_url = api_key_from_env(self.notify_url_env, "--notify-url-env")
        if notify_url and not notify_url.startswith(("http://", "https://")):
            raise InputError("--notify-url: expected an http(s) URL")
        if not (self.out_dir or notify_url):
            raise InputError("nowhere to deliver: give --out-dir DIR and/or --notify-url URL")
        return notify_url

    def options(self, notify_url: str | None) -> ServeOptions:
        """The pipeline's options: the targets file read, --out-dir made (and writable), --dedup-window parsed."""
        import os
        from pathlib import Path

        from doctor.report.promql import parse_duration
        from doctor.serve.dispatch import ServeOptions

        targets = []
        if self.targets_file:
            from doctor.commands.fleet import load_targets

            targets = load_targets(self.targets_file)
        out = Path(self.out_dir) if self.out_dir else None
        if out is not None:
            try:
                out.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise InputError(f"--out-dir {self.out_dir}: {exc.strerror}") from None
            if not os.access(out, os.W_OK):
                raise InputError(f"--out-dir {self.out_dir}: not writable")
        return ServeOptions(targets=targets, out_dir=out, notify_url=notify_url, timeout_s=self.timeout_s,
                            concurrency=self.concurrency, max_queue=self.max_queue,
                            dedup_s=parse_duration(self.dedup_window, "--dedup-window"),
                            check_unlisted=self.check_unlisted, playbook_dirs=self.playbook_dirs)


#: --listen … --playbooks: a ``ServeFlags``; --listen and --token-env (the socket and its guard, not the
#: pipeline's) sit among them in --help but reach the command as their own arguments
serve_options = option_group("flags", ServeFlags, [
    beside(click.option("--listen", default="127.0.0.1:9095", show_default=True, metavar="HOST:PORT",
                        help="Address to listen on (POST /alertmanager, GET /healthz).")),
    click.option("--targets", "targets_file", type=click.Path(dir_okay=False),
                 help="Hints per instance (the file check --targets reads: command, config, gpu, log, manifest, "
                      "api_key_env, engine_version), matched by name or by the endpoint's host:port = the alert's "
                      "instance label."),
    click.option("--check-unlisted", is_flag=True,
                 help="With --targets, also check instances the file does not list (default: only listed ones)."),
    click.option("--out-dir", type=click.Path(file_okay=False), help="Write each diagnosis as FINGERPRINT.md here."),
    click.option("--notify-url", metavar="URL",
                 help="POST each diagnosis as Slack-compatible JSON {\"text\": markdown} (prefer --notify-url-env: "
                      "a chat webhook URL is a secret, and argv is visible to every user of the host)."),
    click.option("--notify-url-env", metavar="NAME", help="Environment variable that holds the notify URL."),
    beside(click.option("--token-env", metavar="NAME",
                        help="Environment variable holding a bearer token Alertmanager must send "
                             "(webhook_configs.http_config.authorization.credentials).")),
    click.option("--timeout", "timeout_s", type=click.FloatRange(min=0.05, max=120), default=5.0, show_default=True,
                 callback=bounded("timeout"),  # FloatRange lets NaN through (every comparison with it is false)
                 help="Seconds per probe request of each check; the check is bounded by it too."),
    click.option("--concurrency", type=click.IntRange(min=1, max=256), default=8, show_default=True,
                 help="Checks running at once."),
    click.option("--max-queue", type=click.IntRange(min=1, max=100_000), default=1000, show_default=True,
                 help="Checks waiting at most; alerts beyond are refused (counted in /healthz as dropped)."),
    click.option("--dedup-window", default="10m", show_default=True,
                 help="One check per alert fingerprint within this window (Alertmanager re-sends firing groups)."),
    playbooks_option,
])


@click.command("serve", epilog=EPILOG)
@serve_options
def serve(flags: ServeFlags, listen: str, token_env: str | None) -> int:
    """Receive Alertmanager's webhook and diagnose each firing alert's instance with `check`.

    For every firing alert that has an `instance` label, runs `llmdoctor check --endpoint INSTANCE` (the
    symptom from the alert's `symptom` label, hints from --targets) and delivers the Markdown diagnosis to
    --out-dir and/or --notify-url. Alertmanager gets its 202 at once; checks run in a bounded pool, one per
    alert fingerprint within --dedup-window, each under --timeout. Secrets are redacted in every output.
    """
    from doctor.probes.base import api_key_from_env

    notify_url = flags.notify()
    token = api_key_from_env(token_env, "--token-env") if token_env else None
    host, port = _listen(listen)
    run_server(host, port, flags.options(notify_url), token)
    return EXIT_OK


def run_server(host: str, port: int, options: ServeOptions, token: str | None) -> None:
    """Serve until SIGTERM/SIGINT, then let running checks finish (bounded) and stop."""
    import signal
    import threading

    from doctor.serve.dispatch import Dispatcher, log_line
    from doctor.serve.http import ReceiverServer

    dispatcher = Dispatcher(options, log=log_line)
    try:
        server = ReceiverServer((host, port), dispatcher, token, log=log_line)
    except OSError as exc:
        dispatcher.close()
        raise InputError(f"--listen {host}:{port}: {exc.strerror or exc}") from None
    stop = threading.Event()

    def _stop(*_args: object) -> None:
        stop.set()
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    bound = server.server_address
    log_line(f"listening on http://{bound[0]}:{bound[1]} (POST /alertmanager, GET /healthz)")
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()
        finished = dispatcher.drain(timeout_s=2 * options.timeout_s + 5)
        dispatcher.close()
        log_line("stopped" + ("" if finished else " (checks still running were abandoned)"))


def _listen(text: str) -> tuple[str, int]:
    host, sep, port = text.strip().rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise InputError(f"--listen {text!r}: expected HOST:PORT (e.g. 127.0.0.1:9095)")
    return host, int(port)
