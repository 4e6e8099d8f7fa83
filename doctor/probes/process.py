"""The process probe: find the server process behind the endpoint and read how it was really launched.

The command line and environment of the running process are the ground truth a pasted launch command
only claims to be (a wrapper script, a Helm chart or an env var may have changed it). The process is
found by the TCP port it listens on (or ``--pid``), on this host only: a remote endpoint, a server in
another container's PID namespace, or a process we may not read are reported as facts
(``process.found = false`` and why), never as crashes.

On Linux /proc is read directly (doctor/probes/procfs.py: psutil's import and full connection scan cost more
than the HTTP probes); elsewhere psutil answers the same questions. Everything kept is redacted: argv through :func:`doctor.redact.redact_argv`, and only the environment
variables that matter to serving, with secrets (``HF_TOKEN``, ``*_API_KEY``, any ``*_TOKEN``) masked; the other
``HF_*`` settings (``HF_HUB_OFFLINE``, ``HF_HOME``) are configuration the diagnosis needs, and stay readable.
"""

from __future__ import annotations

from doctor.facts import Facts
from doctor.probes import procfs
from doctor.probes.base import ProbeOptions, Target, load_data, not_this_host
from doctor.redact import MASK, redact_argv, redact_env

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

NAME = "process"
#: Environment variables read from the process: the engines' own, the GPUs it sees, KV offload, comms.
ENV_PREFIXES = ("VLLM_", "SGLANG_", "LMCACHE_", "NCCL_", "HF_")
ENV_NAMES = ("CUDA_VISIBLE_DEVICES", "PYTORCH_CUDA_ALLOC_CONF")
#: Processes that listen on a port only to forward it into a container or pod.
PORT_FORWARDERS = frozenset({"docker-proxy", "rootlessport", "slirp4netns", "pasta", "kubectl"})
_MASKED_SUFFIXES = ("_TOKEN",)


def fetch(target: Target, opts: ProbeOptions) -> dict[str, Any]:
    if opts.pid is not None:
        return _read(opts.pid, f"--pid {opts.pid}")
    elsewhere = not_this_host(target.host)
    if elsewhere is not None:
        return {"found": False, "reason": f"{elsewhere}: run llmdoctor on the server's host, or pass --pid there"}
    pids = _listening(target.port, ipv6_first=":" in target.host)
    if pids is None:
        return {"found": False, "reason": "listening sockets cannot be read without more privileges "
                "(run as root or as the server's user, or pass --pid)"}
    if not pids:
        starting = _starting(target.port)
        if starting is not None:
            return starting
        return {"found": False, "reason": f"no process on this host listens on port {target.port} (the server "
                "may run in another network namespace: run llmdoctor inside it, or pass --pid)"}
    known = sorted(pid for pid in pids if pid)
    if not known:
        return {"found": False, "reason": f"a process listens on port {target.port} but its owner cannot be "
                "read (run as root or as the server's user, or pass --pid)"}
    # Workers sharing a port (SO_REUSEPORT) all listen; the lowest pid is the one that started them.
    return _read(known[0], f"listens on port {target.port}", others=known[1:])


def _starting(port: int) -> dict[str, Any] | None:
    """A process launched with ``--port PORT`` that does not listen yet: the server is still loading."""
    if not procfs.available():
        return None
    for pid in procfs.pids_launched_with_port(port):
        try:
            argv, name, _ = _process(pid)
        except (LookupError, PermissionError):
            continue
        shown = " ".join([w.rsplit("/", 1)[-1] for w in redact_argv(argv)[:2]] + redact_argv(argv)[2:])
        return {"found": False, "starting": {"pid": pid, "argv": redact_argv(argv), "name": name},
                "reason": f"the server is starting: process {pid} ({shown[:100]}) was launched with --port {port} "
                          "but does not listen yet (engines open the port once the model is loaded); re-run when "
                          "it answers"}
    return None


def _listening(port: int, *, ipv6_first: bool) -> set[int | None] | None:
    """Pids listening on ``port`` (None in the set: a listener whose owner we may not see); None: no access."""
    if procfs.available():
        pids, listened = procfs.listening_pids(port, ipv6_first=ipv6_first)
        return set(pids) if pids or not listened else {None}
    import psutil

    try:
        return {c.pid for c in psutil.net_connections(kind="tcp")
                if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port}
    except psutil.AccessDenied:
        return None


def _read(pid: int, how: str, others: list[int] | None = None) -> dict[str, Any]:
    try:
        argv, name, env = _process(pid)
    except LookupError:
        return {"found": False, "reason": f"no process {pid} ({how})"}
    except PermissionError:
        return {"found": False, "pid": pid, "reason": f"process {pid} ({how}) cannot be read: run as root or as "
                "its user"}
    if name in PORT_FORWARDERS:
        return {"found": False, "pid": pid, "reason": f"port forwarded by {name} (pid {pid}) into a container: "
                "run llmdoctor inside the container, or pass --pid of the server there"}
    raw: dict[str, Any] = {"found": True, "pid": pid, "how": how, "argv": redact_argv(argv), "name": name}
    if procfs.available():  # the engine's own processes: ~1 ms for a server's handful (hung: doctor/playbooks)
        raw["tree"] = procfs.tree(pid)
    if others:
        raw["other_pids"] = others
    if env is None:
        raw["env_error"] = f"the environment of process {pid} cannot be read: run as root or as its user"
    else:
        raw["env"] = select_env(env)
    return raw


def _process(pid: int) -> tuple[list[str], str, dict[str, str] | None]:
    """(argv, name, environment or None); LookupError: no such process; PermissionError: not ours to read."""
    if procfs.available():
        try:
            return procfs.read(pid)
        except FileNotFoundError:
            raise LookupError(pid) from None
    import psutil

    try:
        proc = psutil.Process(pid)
        argv, name = proc.cmdline(), proc.name()
    except psutil.NoSuchProcess:
        raise LookupError(pid) from None
    except psutil.AccessDenied:
        raise PermissionError(pid) from None
    try:
        return argv, name, proc.environ()
    except psutil.AccessDenied:
        return argv, name, None


def select_env(env: dict[str, str]) -> dict[str, str]:
    """The variables that matter to serving, redacted (secret names masked, URL passwords and token shapes in
    values masked); *_TOKEN values always masked whatever the redaction rules say of the name."""
    kept = {k: v for k, v in env.items() if k.startswith(ENV_PREFIXES) or k in ENV_NAMES}
    redacted = redact_env(kept)
    return {k: (MASK if k.endswith(_MASKED_SUFFIXES) else v)
            for k, v in sorted(redacted.items())}


def interpret(raw: dict[str, Any]) -> Facts:
    facts = Facts()
    if not raw.get("found"):
        facts.set("process.found", False, "process probe", observed=True)
        if isinstance(raw.get("starting"), dict):
            facts.set("process.starting", True, f"process {raw['starting'].get('pid')} launched with the "
                      "endpoint's --port, not listening yet", observed=True)
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
    if "tree" in raw:
        tree_facts(facts, raw["tree"], source)
    return facts


#: state letter -> the fact that lists the server's processes in it (procfs.STOPPED and kin)
_BAD_STATES = {procfs.STOPPED: "process.stopped", procfs.TRACED: "process.stopped",
               procfs.UNINTERRUPTIBLE: "process.uninterruptible", procfs.ZOMBIE: "process.zombies"}


def tree_facts(facts: Facts, tree: list[dict[str, Any]], source: str) -> None:
    """The server's process tree as facts: every process with its role (process_roles.yaml), the ones stopped
    (T: SIGSTOP, a debugger), in uninterruptible sleep (D: a driver or file-system call that does not return)
    or dead and unreaped (Z), and how many rank workers are alive."""
    procs = [{"pid": p["pid"], "title": p["title"], "state": p["state"], "role": process_role(str(p["title"]))}
             for p in tree]
    where = f"{source} tree (/proc/PID/stat state, cmdline title)"
    facts.set("process.tree", procs, where, observed=True)
    for key in dict.fromkeys(_BAD_STATES.values()):
        facts.set(key, [p for p in procs if _BAD_STATES.get(str(p["state"])) == key], where, observed=True)
    facts.set("process.workers", sum(p["role"] == "worker" and p["state"] != procfs.ZOMBIE for p in procs),
              f"{where}: processes titled as one rank's worker", observed=True)


def process_role(title: str) -> str:
    """What an engine process does, from its title (``other`` for a process no engine names)."""
    import re

    rules = load_data("process_roles.yaml")["roles"]
    return next((r["role"] for r in rules if re.match(r["title"], title)), "other")
