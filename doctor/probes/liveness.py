"""The liveness probe: ask the engine to generate, not just to answer HTTP — run for the hung tree only.

An engine's /health says the HTTP front end is up; it is not proof the scheduler moves. Measured on the real
engines (docs/hung.md): vLLM 0.32's /health answers 200 in milliseconds with its engine core stopped, while
SGLang 0.5.23's /health and /health_generate both queue a one-token generation and answer 503 only after 20 s
(HEALTH_CHECK_TIMEOUT). So this probe GETs SGLang's /health_generate under a short deadline of its own: a
timeout or a 5xx is the engine not generating. vLLM has no such route (404): nothing is concluded there,
the one-token request of ``--active`` is its test.

Not in the default run (doctor.probes.runner.DEFAULT): on a healthy SGLang it costs one generation (~1 s on a
CPU), which `check` spends only when the symptom is hung or its evidence is asked for.
"""

from __future__ import annotations

from doctor.facts import Facts
from doctor.probes.base import ProbeOptions, Target, auth_headers
from doctor.probes.http import HttpError, get

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

NAME = "liveness"
PATH = "/health_generate"
#: Seconds /health_generate may take: a healthy engine answers in one generation step (1.0 s measured on the
#: CPU build), a stuck one not before its own 20 s timeout.
DEADLINE_S = 4.0


def fetch(target: Target, opts: ProbeOptions) -> dict[str, Any]:
    timeout = max(opts.timeout_s, DEADLINE_S)
    try:
        response = get(target.url(PATH), timeout_s=timeout, headers=auth_headers(target, opts), max_bytes=4096)
    except HttpError as exc:
        # not ``error``: a raw with one is a broken fetch (probes.base.interpret_raw); a timeout is the answer
        return {"path": PATH, "failure": str(exc), "kind": exc.kind, "timeout_s": timeout}
    return {"path": PATH, "status": response.status, "elapsed_ms": round(response.elapsed_ms, 1),
            "timeout_s": timeout}


def interpret(raw: dict[str, Any]) -> Facts:
    facts = Facts()
    status, kind = raw.get("status"), raw.get("kind")
    source = f"GET {raw.get('path', PATH)}"
    if kind == "timeout":
        facts.set("server.health_generate", "timeout", f"{source}: no answer in {raw.get('timeout_s')}s",
                  observed=True)
    elif isinstance(status, int) and status >= 500:
        facts.set("server.health_generate", f"http {status}", f"{source}: HTTP {status}", observed=True)
    elif status == 200:
        facts.set("server.health_generate", "ok", f"{source}: HTTP 200 in {raw.get('elapsed_ms')} ms",
                  observed=True)
    else:  # 404 (vLLM: no such route), refused, auth: nothing said about generation
        facts.error(NAME, str(raw.get("failure") or f"{source}: HTTP {status} (no SGLang generation check here)"))
    return facts
