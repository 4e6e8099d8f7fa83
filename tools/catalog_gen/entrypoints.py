"""Each launcher's own parser: what ``python -m <module>`` accepts, read from the module's ``__main__`` block.

One release ships several ways to start a server, and they did not always take the same flags: vLLM's demo
server ``vllm.entrypoints.api_server`` builds its parser from ``--host``/``--port``/SSL options plus the engine
arguments only, so it never had the OpenAI server's ``--chat-template`` or ``--lora-modules``; before
``vllm serve`` existed (vLLM < 0.5.2) the OpenAI server's ``__main__`` block was the parser. A command from a
2023 thread must be read by the parser of the launcher it used.

The reader runs the module's ``if __name__ == "__main__":`` statements in the interpreter, up to and including
the first one that parses the command line (``parse_args``, SGLang's ``prepare_server_args``; what follows
starts the server), with every parser constructor
(``argparse.ArgumentParser``, the engine's ``FlexibleArgumentParser``) handing out a recording
``ParserSink``; the sink with the most ``add_argument`` calls is that launcher's parser. Nothing is imported
or run.
"""

from __future__ import annotations

import ast
from typing import Any

from tools.catalog_gen.argspec import ParserSink
from tools.catalog_gen.interp import Interp, ModuleObj, Native
from tools.catalog_gen.wheel import WheelSource

#: a ``__main__`` statement that parses the command line: the launcher's parser is complete after it
PARSE_CALLS = ("parse_args(", "parse_known_args(", "prepare_server_args(")


def install_constructors(interp: Interp) -> list[ParserSink]:
    """Make ``argparse.ArgumentParser(...)`` and ``FlexibleArgumentParser(...)`` return recording sinks; the
    returned list collects every sink made (the caller clears it between launchers)."""
    made: list[ParserSink] = []

    def construct(*args: Any, **kwargs: Any) -> ParserSink:
        sink = ParserSink(interp, init_kwargs=kwargs)
        made.append(sink)
        return sink

    argparse_names = interp._externals.get("argparse")
    if isinstance(argparse_names, dict):
        argparse_names["ArgumentParser"] = Native(construct, "argparse.ArgumentParser")
    interp.handlers["*.FlexibleArgumentParser"] = lambda it, args, kw: construct(*args, **kw)
    return made


def main_block(tree: ast.Module) -> ast.If | None:
    """The module's ``if __name__ == "__main__":`` statement."""
    for st in tree.body:
        if isinstance(st, ast.If) and "__name__" in ast.unparse(st.test) and "__main__" in ast.unparse(st.test):
            return st
    return None


def read(src: WheelSource, interp: Interp, made: list[ParserSink], module: str) -> tuple[ParserSink, str] | None:
    """The parser ``python -m module`` builds, and where (``file:line`` of its ``parse_args``); None when the
    module is absent or its ``__main__`` block builds no parser the interpreter can follow."""
    if not src.has_module(module):
        return None
    mod = interp.module(module)
    tree = src.tree(module)
    block = main_block(tree) if tree is not None and isinstance(mod, ModuleObj) else None
    if block is None:
        return None
    made.clear()
    line = block.lineno
    for st in block.body:
        interp.exec_stmt(st, mod.scope)
        if any(call in ast.unparse(st) for call in PARSE_CALLS):
            line = st.lineno
            break
    sinks = [s for s in made if s.calls]
    if not sinks:
        return None
    return max(sinks, key=lambda s: len(s.calls)), f"{src.path(module)}:{line}"
