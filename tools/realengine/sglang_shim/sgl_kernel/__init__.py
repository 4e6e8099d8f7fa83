"""A STUB standing in for sgl-kernel on CPU — not the real package (tools/realengine/sglang_serve.sh puts it on
PYTHONPATH for the real-engine tests).

Why: SGLang imports names from sgl-kernel at import time (`from sgl_kernel import ..._cpu`), and the CPU build of
sgl-kernel is not on PyPI (source-only, AMX/AVX-512-oriented). Any attribute resolves to a stub that raises
NotImplementedError when called, so the imports work and SGLang takes its torch-native paths:
torch.ops.sgl_kernel.* stays empty, so sglang's cpu_has_amx_support() is False and none of the stubs is called on
the path the tests run (a stub that ever is fails loudly). Everything else — server, scheduler, tokenizer manager,
metrics, parsers — is the real SGLang.
"""

import logging

__version__ = "0.0.0+shim"
_log = logging.getLogger("sgl_kernel_shim")


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)

    def _stub(*args, **kwargs):
        raise NotImplementedError(f"sgl_kernel shim: {name} called (no CPU sgl-kernel build available)")

    _stub.__name__ = name
    _log.warning("sgl_kernel shim: providing stub for %s", name)
    return _stub
