"""The real SGLang the tests start: sglang 0.5.23 on the CPU, from the cache (tools/realengine/sglang_install.sh).

Every server is started by tools/realengine/sglang_serve.sh WORKDIR PORT [flags]: the venv's
``python -m sglang.launch_server`` with what SGLang needs on a CPU without AMX (``--device cpu``,
``--attention-backend torch_native``, ``--disable-overlap-schedule``, ``--max-total-tokens 32768``,
``SGLANG_USE_CPU_ENGINE=1``, the sgl_kernel stub on PYTHONPATH), ``--enable-metrics``, and the tiny scripted Qwen2
that always answers with one Hermes-style tool call (tools/realengine/make_tiny_model.py, built on first use into
WORKDIR/model). The script execs the engine, so the harness's PID is the engine's, and it writes the exact
command as the log's first line (:func:`exec_command`), which is what the refusal tests hand to ``lint``.

The harness (start, share, stop, the skip-or-fail policy) is tests/realengine/conftest.py's, common to both engines.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from realengine.conftest import ROOT, Engine

VERSION = "0.5.23"
SERVE = ROOT / "tools" / "realengine" / "sglang_serve.sh"
_EXEC_MARK = "sglang_serve.sh: exec "


def _command(home: Path, port: int, flags: list[str]) -> list[str]:
    return [str(SERVE), str(home / "work"), str(port), *flags]


SGLANG = Engine(name="sglang", version=VERSION, install="tools/realengine/sglang_install.sh", command=_command)


def exec_command(log: str) -> list[str]:
    """The argv sglang_serve.sh exec'd (its first log line, shell-quoted), to lint exactly what the engine ran."""
    for line in log.splitlines():
        if line.startswith(_EXEC_MARK):
            return shlex.split(line[len(_EXEC_MARK):])
    raise AssertionError(f"no '{_EXEC_MARK.strip()}' line in the server log:\n{log[-2000:]}")
