"""What `llmdoctor check` does once its flags are read: the same code whether click read them
(doctor/cli/check_cmd.py) or the fast path did (doctor/cli/fastcheck.py)."""

from __future__ import annotations

import os
import sys

from doctor.cli.output import OutputFlags, echo, emit_document, emit_json, exit_code
from doctor.errors import EXIT_OK, EXIT_UNEXPLAINED, EXIT_UNREACHABLE, InputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from doctor.cli.flags import ActiveFlags, LiveFlags, OfflineFlags, PlaybookFlags, ScopeFlags
    from doctor.sources.offline import Workload


def run_check_command(live: LiveFlags, active: ActiveFlags, scope: ScopeFlags, given: OfflineFlags,
                      workload: Workload, playbooks: PlaybookFlags, output: OutputFlags, *,
                      timeout_explicit: bool) -> int:
    """Check the endpoint, snapshot, fleet or offline inputs the flags name, print the answer, return the exit
    code (``timeout_explicit``: --timeout was typed, not defaulted)."""
    from doctor.commands.check import CheckOptions, run_check

    endpoint = live.endpoint
    if scope.targets_file:
        if endpoint or scope.snapshot_file:
            raise InputError("--targets checks a fleet: give it, --endpoint or --snapshot, not several")
        if active.active:
            raise InputError("--active sends requests to one --endpoint; it is not run across a fleet")
        if given.log_file or given.client_output:
            raise InputError("--log and --client-output belong to one target; in --targets give each entry its own "
                             "log: key")
        if given.manifest:
            raise InputError("--manifest describes one deployment; in a --targets file give each its manifest: key")
        return _fleet(scope.targets_file, live.timeout_s, playbooks, output)
    inputs = given.inputs(workload)
    symptoms = playbooks.symptoms
    # A reported symptom is an input by itself: with nothing else it gets that symptom's differential (each
    # possible cause with the one input that decides it, exit 5), never a usage error. Only no symptom and no
    # input at all is "nothing to check".
    if not (endpoint or scope.snapshot_file or symptoms or any((
            inputs.command, inputs.config, inputs.gpu, inputs.metrics, inputs.server_info, inputs.nvidia_smi,
            inputs.log, inputs.client_output))):
        raise InputError("nothing to check: pass --endpoint, --snapshot, offline inputs such as --command "
                         "and --config, or the --symptom you see (see llmdoctor check --help)")
    # Beside anything else, a command naming no launch llmdoctor reads is said, not fatal: the rest is still read.
    inputs.command_optional = bool(endpoint or scope.snapshot_file or symptoms or any((
        inputs.config, inputs.gpu, inputs.metrics, inputs.server_info, inputs.nvidia_smi, inputs.log,
        inputs.client_output)))
    active_timeout_s = active.timeout_s(endpoint, live.timeout_s, timeout_explicit)
    run = run_check(CheckOptions(endpoint=endpoint, api_key_env=live.api_key_env, timeout_s=live.timeout_s,
                                 sample_s=live.sample_s, pid=live.pid, snapshot=scope.snapshot_file, offline=inputs,
                                 symptoms=symptoms, playbook_dirs=playbooks.playbook_dirs, active=active.active,
                                 model=active.model, active_timeout_s=active_timeout_s,
                                 target_version=given.target_version))
    _render(run, output)
    if run.unreachable and not scope.snapshot_file:
        echo(f"llmdoctor: {run.target.display()}: could not be examined: {run.unreachable}", err=True)
        rc = EXIT_UNREACHABLE
    else:
        rc = with_unexplained(exit_code(run.diagnosis.findings, output.fail_on), run.diagnosis, output.fail_on)
    _let_lookups_land()
    return rc


def _let_lookups_land() -> None:
    """A model lookup that outlived --timeout (a slow Hub) finishes once the answer is out — standard output is
    closed first, so a pipe's reader is done — and what it finds is in the caches for the next run."""
    resolve = sys.modules.get("doctor.model.resolve")  # not imported: no model was looked up
    if resolve is None or not resolve.lookups_running():
        return
    sys.stdout.flush()
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    resolve.finish_lookups()


def with_unexplained(code: int, diagnosis: Any, fail_on: str) -> int:
    """EXIT_UNEXPLAINED instead of "healthy" when a reported symptom has no cause (never silent)."""
    if code == EXIT_OK and fail_on != "never" and diagnosis.unexplained is not None:
        return EXIT_UNEXPLAINED
    return code


def _fleet(targets_file: str, timeout_s: float, playbooks: PlaybookFlags, output: OutputFlags) -> int:
    from doctor.commands.fleet import load_targets, run_fleet
    from doctor.render.fleet import fleet_markdown, fleet_text

    fleet = run_fleet(load_targets(targets_file), timeout_s=timeout_s, symptoms=playbooks.symptoms,
                      playbook_dirs=playbooks.playbook_dirs)
    emit_document(output.fmt, fleet, text=lambda: fleet_text(fleet), markdown=lambda: fleet_markdown(fleet))
    if not any(r.reachable for r in fleet.results):
        echo(f"llmdoctor: {targets_file}: no target could be examined", err=True)
        return EXIT_UNREACHABLE
    return exit_code(fleet.findings(), output.fail_on)


def _render(run: Any, output: OutputFlags) -> None:
    """The answer in --format; the text and Markdown renderers are imported only for those formats (a script
    asking for JSON does not pay for them)."""
    if output.fmt == "json":
        emit_json(run)
        return
    from doctor.render.check import check_markdown, check_text

    emit_document(output.fmt, run, text=lambda: check_text(run, verbose=output.verbose),
                  markdown=lambda: check_markdown(run))
