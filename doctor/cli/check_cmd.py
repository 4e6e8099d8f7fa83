"""`llmdoctor check` and `llmdoctor snapshot`: the on-call runbook step and its replayable record."""

from __future__ import annotations

import click

from doctor.cli.common import output_options
from doctor.cli.flags import ActiveFlags, LiveFlags, OfflineFlags, ScopeFlags
from doctor.cli.manifest_opt import manifest_option
from doctor.cli.options import PlaybookFlags, offline_option, option_group, playbook_options, workload_options
from doctor.cli.output import OutputFlags, echo, emit
from doctor.errors import EXIT_UNREACHABLE, InputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from doctor.sources.offline import Workload

CHECK_EPILOG = """\b
Examples:
  llmdoctor check localhost:30000                 (the same as --endpoint localhost:30000; a bare 30000 is this host)
  llmdoctor check --endpoint http://10.0.0.5:8000/v1 (an OpenAI base URL: /v1 is where the routes start)
  llmdoctor check --endpoint https://gateway/team-a/llm   (a proxy's base path is kept: /team-a/llm/v1/models)
  llmdoctor check --endpoint http://10.0.0.5:8000 --api-key-env VLLM_API_KEY --symptom tools-ignored
  llmdoctor check --endpoint localhost:8000 --sample 10 --symptom memory-filling-fast
  llmdoctor check --endpoint localhost:8000 --active --symptom tools-ignored
  llmdoctor check --command "$(cat launch.sh)" --config ~/models/GLM-5.2 --gpu 8xB300 --symptom launch-failure
  llmdoctor check --metrics scrape.prom --server-info server_info.json --config Qwen/Qwen3-8B
  llmdoctor check --snapshot incident-4711.json --format markdown
  llmdoctor check --log /var/log/vllm/server.log
  journalctl -u vllm --since -1h | llmdoctor check --endpoint localhost:8000 --log -
  llmdoctor check --targets fleet.yaml --timeout 2
  kubectl get deploy llm -o yaml | llmdoctor check --endpoint 10.0.0.5:8000 --manifest -

\b
Exit codes: 0 nothing at or above --fail-on (default: warning); 1 findings; 2 usage or bad input;
3 the endpoint could not be examined at all (unreachable, or not an LLM server) — partial results are
still printed, the reason once on stderr; 4 internal error (a bug in llmdoctor: please report it);
5 a symptom was reported (--symptom, an alert, a log of a failed start) and no known cause matches it: the
log lines no rule placed are quoted, with the causes still possible and the input that decides each (where
the run would otherwise exit 0; --fail-on never still exits 0). --symptom alone, with no other input, is
answered so too: that symptom's causes, grouped by the input that decides them.
"""

SNAPSHOT_EPILOG = """\b
Examples:
  llmdoctor snapshot --endpoint localhost:30000 -o incident.json
  llmdoctor snapshot --endpoint localhost:8000 --active -o tools.json
  llmdoctor snapshot --endpoint localhost:8000 --sample 10 --config Qwen/Qwen3-8B --gpu H100:2 -o s.json
  llmdoctor snapshot --endpoint localhost:8000 --log server.log -o s.json   (records the redacted excerpt)
  llmdoctor check --snapshot incident.json

\b
Exit codes: 0 written; 2 bad input; 3 the endpoint could not be examined at all (nothing is written);
4 internal error (a bug in llmdoctor: please report it).
"""


live_options = option_group("live", LiveFlags, [
    click.argument("target", required=False, metavar="[ENDPOINT]"),
    click.option("--endpoint", metavar="URL|HOST:PORT",
                 help="The server to examine: http://host:port, host:port or a port on this host; a URL's path "
                      "is a proxy's base path, and a trailing /v1 (an OpenAI base URL) is where the OpenAI "
                      "routes start — /metrics and the engine's own routes are probed beside it. ENDPOINT "
                      "(positional) is the same."),
    click.option("--api-key-env", metavar="NAME",
                 help="Name of the environment variable that holds the server's API key (never the key "
                      "itself: a value on the command line is visible to every user of the host)."),
    click.option("--timeout", "timeout_s", type=click.FloatRange(min=0.05, max=120), default=2.0,
                 show_default=True, help="Seconds per request; the whole run is bounded by it too."),
    click.option("--sample", "sample_s", type=click.FloatRange(min=0, max=600), default=0.0, metavar="SECONDS",
                 help="Scrape /metrics twice, SECONDS apart, for rates (preemptions/s, tokens/s, KV fill "
                      "rate and time-to-full)."),
    click.option("--pid", type=click.IntRange(min=1), help="The server process, when it is not the one "
                                                           "listening on the endpoint's port on this host."),
])


active_options = option_group("active", ActiveFlags, [
    click.option("--active", is_flag=True,
                 help="Also send a few small fixed requests (a tool call, a short question, repeated greedy "
                      "requests, a tiny completion) and diagnose from what the server answers; see "
                      "docs/active.md. Each request is bounded by --timeout (30 s when --timeout is not given)."),
    click.option("--model", metavar="NAME", help="Served model the active probes ask (default: the first of "
                                                 "/v1/models)."),
])


scope_options = option_group("scope", ScopeFlags, [
    click.option("--snapshot", "snapshot_file", type=click.Path(dir_okay=False),
                 help="Replay a snapshot written by `llmdoctor snapshot` instead of probing."),
    click.option("--targets", "targets_file", type=click.Path(dir_okay=False),
                 help="Check many endpoints concurrently (YAML/JSON list: endpoint, name, api_key_env, gpu, config, "
                      "command, engine_version, log, manifest) and print a fleet table."),
])


#: --command … --offline and --log: what every command that reads offline inputs takes
_OFFLINE = [
    click.option("--command", "command_text", metavar="CMD",
                 help="The launch command (when the server cannot report it, or to check it offline)."),
    click.option("--command-file", type=click.Path(dir_okay=False, allow_dash=True),
                 help="Read the launch command from a file ('-' for stdin)."),
    click.option("--config", metavar="PATH|REPO", help="The model's config.json, directory, HF-cache repo id "
                                                       "or example:NAME."),
    click.option("--gpu", metavar="NAME[:COUNT]", help="The GPUs, when NVML cannot be read here (e.g. H200:8)."),
    click.option("--gpu-mem", metavar="SIZE", help="Memory of each GPU (48G, 80GB): overrides the catalog and "
                                                   "NVML (a 48 GB RTX 4090), and sizes an unknown GPU."),
    click.option("--engine-version", metavar="V", help="Engine version, when neither the server nor an image "
                                                       "tag says."),
    click.option("--metrics", "metrics_file", type=click.Path(dir_okay=False),
                 help="A saved /metrics scrape (offline)."),
    click.option("--server-info", "server_info_file", type=click.Path(dir_okay=False),
                 help="A saved /server_info JSON body (offline)."),
    click.option("--nvidia-smi", "nvidia_smi_file", type=click.Path(dir_okay=False),
                 help="Saved nvidia-smi output (offline): `-q` text or `-q -x` XML, `--query-gpu` CSV, the "
                      "default table, `topo -m`."),
    offline_option,
    click.option("--log", "log_file", metavar="FILE|-",
                 help="The engine's server log (vLLM or SGLang; '-' for stdin): start-up facts, the final "
                      "error, and the causes its lines name. Read head and tail only, however large; "
                      "secrets redacted."),
]

#: the offline inputs and --log: an ``OfflineFlags`` (`snapshot`, `calibrate add`)
offline_options = option_group("given", OfflineFlags, _OFFLINE)

#: `check`'s: the offline inputs, --log, --client-output, --manifest and --target-version
check_offline_options = option_group("given", OfflineFlags, [
    *_OFFLINE,
    click.option("--client-output", "client_output", type=click.Path(dir_okay=False), metavar="FILE",
                 help="What a client got back (an API error body, the client library's traceback): read with --log, "
                      "after it, for the engine's own messages it quotes (a request the server refused says why)."),
    manifest_option,
    click.option("--target-version", metavar="V",
                 help="Also say whether the launch command (given, or read from the server's process) still starts "
                      "and behaves the same on release V (the upgrade tree; see llmdoctor lint --help)."),
])


@click.command("check", epilog=CHECK_EPILOG)
@live_options
@active_options
@scope_options
@check_offline_options
@workload_options
@playbook_options
@output_options(("text", "json", "markdown"), "Everything behind the one-screen default: each probe's result, every finding in full (why, the evidence chain with sources), every undecided cause with its reason, every fact gathered.")
def check(live: LiveFlags, active: ActiveFlags, scope: ScopeFlags, given: OfflineFlags, workload: Workload,
          playbooks: PlaybookFlags, output: OutputFlags) -> int:
    """Find what is wrong with a vLLM or SGLang deployment, why, how sure, and the exact fix.

    Live: probes the server's /server_info, /version, /v1/models and /metrics, the process listening on its
    port (command line and environment, secrets redacted) and the GPUs (NVML), concurrently and under the
    timeout. Offline: any mix of --command, --config, --gpu, --metrics, --server-info, --nvidia-smi — they
    also fill what live probes could not reach. Then every playbook whose entry conditions hold runs (or only
    --symptom's), and each finding shows its evidence chain and fix.
    """
    from doctor.cli.check_run import run_check_command

    return run_check_command(live, active, scope, given, workload, playbooks, output,
                             timeout_explicit=_timeout_given())


def _timeout_given() -> bool:
    """Whether --timeout was typed (the active probes take their own longer default when it was not)."""
    from click.core import ParameterSource

    return click.get_current_context().get_parameter_source("timeout_s") is not ParameterSource.DEFAULT


@click.command("snapshot", epilog=SNAPSHOT_EPILOG)
@live_options
@active_options
@offline_options
@workload_options
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="Where to write the snapshot (JSON; written atomically).")
def snapshot(live: LiveFlags, active: ActiveFlags, given: OfflineFlags, workload: Workload, output: str) -> int:
    """Record every probe's raw answer (redacted) and the offline inputs as one JSON file.

    `llmdoctor check --snapshot FILE` replays it anywhere and reaches the same findings: attach it to a bug
    report or a postmortem. Secrets (API keys, tokens, passwords in URLs) are redacted before writing.
    """
    from doctor.commands.check import (
        active_results,
        served_model_inputs,
        snapshot_inputs,
        unreachable_reason,
        with_log_read,
    )
    from doctor.probes.base import ProbeOptions, Target, api_key_from_env
    from doctor.probes.runner import run_probes
    from doctor.sources.snapshot import build_snapshot, write_snapshot

    endpoint = live.endpoint
    if not endpoint:
        raise InputError("snapshot needs --endpoint (offline inputs alone need no snapshot: pass them to check)")
    if given.metrics_file or given.server_info_file or given.nvidia_smi_file:
        raise InputError("snapshot records live probes; --metrics/--server-info/--nvidia-smi belong to check")
    recorded = with_log_read(given.inputs(workload))
    inputs = snapshot_inputs(recorded)
    active_timeout_s = active.timeout_s(endpoint, live.timeout_s, _timeout_given())
    target = Target.parse(endpoint)
    api_key = api_key_from_env(live.api_key_env) if live.api_key_env else None
    probe_opts = ProbeOptions(timeout_s=live.timeout_s, api_key=api_key, sample_s=live.sample_s, pid=live.pid)
    results = run_probes(target, probe_opts)
    error = unreachable_reason(results)
    if error:
        echo(f"llmdoctor: {target.display()}: could not be examined: {error}; nothing written", err=True)
        return EXIT_UNREACHABLE
    if active.active:
        results += active_results(target, probe_opts, results, recorded, model=active.model,
                                  timeout_s=active_timeout_s)
    inputs.update(served_model_inputs(results, recorded))
    snap = build_snapshot(target, results, {"inputs": inputs})
    capacity = _capacity_pair(snap)
    if capacity is not None:  # the pair `calibrate add` keeps, as this run measured and computed it
        snap["extra"]["capacity"] = capacity
    write_snapshot(output, snap)
    ok = ", ".join(f"{r.name} {'ok' if r.ok else 'failed'}" for r in results)
    emit(f"wrote {output} ({ok}); replay with: llmdoctor check --snapshot {output}" +
         (f"\n{_capacity_line(capacity, output)}" if capacity else ""))
    return 0


def _capacity_pair(snap: dict[str, Any]) -> dict[str, Any] | None:
    """The measured and computed KV capacity of a snapshot about to be written (replayed as `check` reads it, from
    a private copy: the output may be /dev/null or a pipe), and whether it calibrates the memory model
    (doctor/model/calibration.py); None when nothing was measured."""
    import tempfile
    from pathlib import Path

    from doctor.commands.check import CheckOptions, run_check
    from doctor.model.calibration import measured_fact, run_from_facts
    from doctor.sources.snapshot import write_snapshot

    with tempfile.TemporaryDirectory(prefix="llmdoctor-snapshot-") as scratch:
        copy = str(Path(scratch) / "snapshot.json")
        try:
            write_snapshot(copy, snap)
        except InputError:  # no room for the copy: the real write below says why, naming the user's file
            return None
        facts = run_check(CheckOptions(snapshot=copy)).facts
    measured = measured_fact(facts)
    if measured is None:
        return None
    verdict = run_from_facts(facts, "this snapshot")
    return {"measured_tokens": measured.value, "measured_source": measured.source,
            "expected_tokens": facts.get("capacity.expected_tokens"),
            "calibrates": True if not isinstance(verdict, str) else verdict}


def _capacity_line(capacity: dict[str, Any], output: str) -> str:
    computed = capacity["expected_tokens"]
    pair = f"capacity: measured {capacity['measured_tokens']:,} KV tokens" + (
        f", computed {computed:,}" if isinstance(computed, int) else "")
    if capacity["calibrates"] is True:
        return f"{pair}; keep the pair with: llmdoctor calibrate add {output}"
    return f"{pair}; not a calibration: {capacity['calibrates']}"
