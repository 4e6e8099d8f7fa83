"""The process probe: find the server process behind the endpoint and read how it was really launched.

The command line and environment of the running process are the ground truth a pasted launch command
only claims to be (a wrapper script, a Helm chart or an env var may have changed it). The process is
found by the TCP port it listens on (or ``--pid``), on this host only: a remote endpoint, a server in
another container's PID namespace, or a process we may not read are reported as facts
(``process.found = false`` and why), never as crashes.

Everything kept is redacted: argv through :func:`doctor.redact.redact_argv`, and only the environment
variables that matter to serving, with every ``HF_*`` and ``*_TOKEN`` value masked whatever its name says.
"""

from __future__ import annotations

from typing import Any

from doctor.facts import Facts
from doctor.probes.base import ProbeOptions, Target, not_this_host
from doctor.redact import MASK, redact_argv, redact_env

NAME = "process"
#: Environment variables read from the process: the engines' own, the GPUs it sees, KV offload, comms.
ENV_PREFIXES = ("VLLM_", "SGLANG_", "LMCACHE_", "NCCL_", "HF_")
ENV_NAMES = ("CUDA_VISIBLE_DEVICES", "PYTORCH_CUDA_ALLOC_CONF")
#: Processes that listen on a port only to forward it into a container or pod.
PORT_FORWARDERS = frozenset({"docker-proxy", "rootlessport", "slirp4netns", "pasta", "kubectl"})
_MASKED_PREFIXES = ("HF_",)
_MASKED_SUFFIXES = ("_TOKEN",)


def fetch(target: Target, opts: ProbeOptions) -> dict[str, Any]:
    import psutil

    if opts.pid is not None:
        return _read(psutil, opts.pid, f"--pid {opts.pid}")
    elsewhere = not_this_host(target.host)
    if elsewhere is not None:
        return {"found": False, "reason": f"{elsewhere}: run llmdoctor on the server's host, or pass --pid there"}
    try:
        pids = {c.pid for c in psutil.net_connections(kind="tcp")
                if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == target.port}
    except psutil.AccessDenied:
        return {"found": False, "reason": "listening sockets cannot be read without more privileges "
                "(run as root or as the server's user, or pass --pid)"}
    if not pids:
        return {"found": False, "reason": f"no process on this host listens on port {target.port} (the server "
                "may run in another network namespace: run llmdoctor inside it, or pass --pid)"}
    known = sorted(pid for pid in pids if pid)
    if not known:
        return {"found": False, "reason": f"a process listens on port {target.port} but its owner cannot be "
                "read (run as root or as the server's user, or pass --pid)"}
    # Workers sharing a port (SO_REUSEPORT) all listen; the lowest pid is the one that started them.
    return _read(psutil, known[0], f"listens on port {target.port}", others=known[1:])


def _read(psutil: Any, pid: int, how: str, others: list[int] | None = None) -> dict[str, Any]:
    try:
        proc = psutil.Process(pid)
        argv, name = proc.cmdline(), proc.name()
    except psutil.NoSuchProcess:
        return {"found": False, "reason": f"no process {pid} ({how})"}
    except psutil.AccessDenied:
        return {"found": False, "pid": pid, "reason": f"process {pid} ({how}) cannot be read: run as root or as "
                "its user"}
    if name in PORT_FORWARDERS:
        return {"found": False, "pid": pid, "reason": f"port forwarded by {name} (pid {pid}) into a container: "
                "run llmdoctor inside the container, or pass --pid of the server there"}
    raw: dict[str, Any] = {"found": True, "pid": pid, "how": how, "argv": redact_argv(argv), "name": name}
    if others:
        raw["other_pids"] = others
    try:
        raw["env"] = select_env(proc.environ())
    except psutil.AccessDenied:
        raw["env_error"] = f"the environment of process {pid} cannot be read: run as root or as its user"
    return raw


def select_env(env: dict[str, str]) -> dict[str, str]:
    """The variables that matter to serving, redacted; HF_* and *_TOKEN values always masked."""
    kept = {k: v for k, v in env.items() if k.startswith(ENV_PREFIXES) or k in ENV_NAMES}
    redacted = redact_env(kept)
    return {k: (MASK if k.startswith(_MASKED_PREFIXES) or k.endswith(_MASKED_SUFFIXES) else v)
            for k, v in sorted(redacted.items())}


def interpret(raw: dict[str, Any]) -> Facts:
    facts = Facts()
    if not raw.get("found"):
        facts.set("process.found", False, "process probe", observed=True)
        facts.error(NAME, str(raw.get("reason") or "server process not found"))
        return facts
    source = f"process {raw['pid']} ({raw.get('how', '')})"
    facts.set("process.found", True, source, observed=True)
    facts.set("process.pid", raw["pid"], source, observed=True)
    facts.set("process.argv", list(raw.get("argv") or []), f"{source} cmdline", observed=True)
    if "env" in raw:
        env = dict(raw["env"])
        facts.set("process.env", env, f"{source} environ", observed=True)
        for name, value in env.items():
            facts.set(f"launch.env.{name}", value, f"{source} environ")
    else:
        facts.error("process.env", str(raw.get("env_error") or "environment not read"))
    return facts
