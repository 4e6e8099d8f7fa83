"""The objects a command's flags make, one per group of flags (doctor/cli/options.py ``option_group``).

They hold no click: `check --endpoint` builds the same objects from its own reading of the command line
(doctor/cli/fastcheck.py) and runs the same code (doctor/cli/check_run.py) as the click command does. (The groups
are plain classes: a dataclass is built by exec'ing code at import, ~1–3 M instructions each on the path of
every command.)
"""

from __future__ import annotations

from doctor.errors import InputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any
    pass


class LiveFlags:
    """ENDPOINT, --endpoint, --api-key-env, --timeout, --sample, --pid: the server to probe and how."""

    __slots__ = ("target", "endpoint_option", "api_key_env", "timeout_s", "sample_s", "pid")

    def __init__(self, target: str | None, endpoint: str | None, api_key_env: str | None, timeout_s: float,
                 sample_s: float, pid: int | None) -> None:
        self.target, self.endpoint_option, self.api_key_env = target, endpoint, api_key_env
        self.timeout_s, self.sample_s, self.pid = timeout_s, sample_s, pid

    @property
    def endpoint(self) -> str | None:
        """`check localhost:30000` means `check --endpoint localhost:30000`; both at once is ambiguous."""
        if self.target and self.endpoint_option:
            raise InputError(f"give the endpoint once: {self.target!r} and --endpoint {self.endpoint_option!r} "
                             "were both given")
        return self.endpoint_option or self.target


class ActiveFlags:
    """--active and --model: whether to send the active probes, and which served model they ask."""

    __slots__ = ("active", "model")

    def __init__(self, active: bool, model: str | None) -> None:
        self.active, self.model = active, model

    def timeout_s(self, endpoint: str | None, timeout_s: float, explicit: bool) -> float | None:
        """Per-request deadline of the active probes: --timeout when given (``explicit``), else their own
        default."""
        if self.model and not self.active:
            raise InputError("--model names the model the active probes ask: it needs --active")
        if not self.active:
            return None
        if not endpoint:
            raise InputError("--active sends requests to a live server: it needs --endpoint (a --snapshot replays "
                             "the active probes it recorded)")
        from doctor.probes.active import DEFAULT_TIMEOUT_S

        return timeout_s if explicit else DEFAULT_TIMEOUT_S


class ScopeFlags:
    """--snapshot and --targets: what `check` examines instead of one live endpoint — a recorded run replayed, or
    every endpoint of a fleet."""

    __slots__ = ("snapshot_file", "targets_file")

    def __init__(self, snapshot_file: str | None, targets_file: str | None) -> None:
        self.snapshot_file, self.targets_file = snapshot_file, targets_file


class OfflineFlags:
    """--command, --command-file, --config, --gpu, --gpu-mem, --engine-version, --metrics, --server-info,
    --nvidia-smi, --offline, --log, and for `check` --client-output, --manifest and --target-version: what the user
    hands over
    without a server (:meth:`inputs` makes the pipeline's ``OfflineInputs`` of them; ``target_version`` is the
    release the pipeline also reads the command as)."""

    __slots__ = ("command_text", "command_file", "config", "gpu", "gpu_mem", "engine_version", "metrics_file",
                 "server_info_file", "nvidia_smi_file", "offline", "log_file", "client_output", "manifest",
                 "target_version")

    def __init__(self, command_text: str | None, command_file: str | None, config: str | None, gpu: str | None,
                 gpu_mem: str | None, engine_version: str | None, metrics_file: str | None,
                 server_info_file: str | None, nvidia_smi_file: str | None, offline: bool, log_file: str | None,
                 client_output: str | None = None, manifest: str | None = None,
                 target_version: str | None = None) -> None:
        self.command_text, self.command_file, self.config, self.gpu = command_text, command_file, config, gpu
        self.gpu_mem, self.engine_version, self.metrics_file = gpu_mem, engine_version, metrics_file
        self.server_info_file, self.nvidia_smi_file, self.offline = server_info_file, nvidia_smi_file, offline
        self.log_file, self.client_output = log_file, client_output
        self.manifest, self.target_version = manifest, target_version

    def inputs(self, workload: Any) -> Any:
        """The pipeline's ``OfflineInputs``: the command and --gpu from --manifest (a --gpu given wins), the
        command from --command or --command-file, the log's and the client output's paths (read later, once:
        ``with_log_read``)."""
        from doctor.cli.manifest_opt import manifest_inputs
        from doctor.sources.offline import OfflineInputs, read_command_file

        command_text, gpu = self.command_text, self.gpu
        if self.manifest:
            if self.manifest == "-" and "-" in (self.log_file, self.command_file):
                raise InputError("--manifest - and --log -/--command-file - cannot both read standard input")
            command_text, gpu = manifest_inputs(self.manifest, bool(command_text or self.command_file), gpu)
        if command_text and self.command_file:
            raise InputError("give the launch command with --command or --command-file, not both")
        if self.command_file:
            command_text = read_command_file(self.command_file, "--command-file")
        if self.log_file == "-" and self.command_file == "-":
            raise InputError("--log - and --command-file - both read standard input: give one of them a file")
        return OfflineInputs(command=command_text, engine_version=self.engine_version, config=self.config,
                             gpu=gpu, gpu_mem=self.gpu_mem, nvidia_smi=self.nvidia_smi_file,
                             metrics=self.metrics_file, server_info=self.server_info_file, workload=workload,
                             offline=self.offline, log=self.log_file, client_output=self.client_output)


class PlaybookFlags:
    """--symptom and --playbooks: which playbooks run — the symptoms asked about (none: every playbook whose entry
    conditions hold) and the user's own directories beside the built-ins, as the pipeline takes them."""

    __slots__ = ("symptoms", "playbook_dirs")

    def __init__(self, symptoms: tuple[str, ...], playbook_dirs: tuple[str, ...]) -> None:
        self.symptoms, self.playbook_dirs = symptoms, playbook_dirs


def workload(**values: Any) -> Any:
    from doctor.sources.offline import Workload  # lazy: --help never builds one

    return Workload(**values)
