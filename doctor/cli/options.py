"""Option groups several commands share (workload description, symptoms, user playbooks).

A group of flags that make one object the pipeline takes is declared with :func:`option_group`: the command
then receives that object (a ``Workload``, the offline inputs' flags) as one argument, not one per flag.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import click

from doctor.cli.flags import PlaybookFlags, workload

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeVar

    F = TypeVar("F", bound=Callable[..., Any])
    Decorator = Callable[[F], F]


def option_group(name: str, build: Callable[..., Any], options: list[Callable[[Any], Any]]) -> Decorator:
    """Add ``options`` to a click command, in this order, and hand the command ``name=build(**their values)``
    in place of one argument per flag. Flag names, defaults, help and order are the options' own, so --help
    reads as if they were declared one by one. An option wrapped in :func:`beside` keeps its place in --help
    but reaches the command as its own argument (``report``'s output flags sit among its query flags)."""
    def decorate(f: F) -> F:
        names: list[str] = []  # the group's parameter names, known once its options are hung on the command

        @functools.wraps(f)
        def command(*args: Any, **kwargs: Any) -> Any:
            kwargs[name] = build(**{key: kwargs.pop(key) for key in names})
            return f(*args, **kwargs)

        params = command.__dict__["__click_params__"] = list(getattr(f, "__click_params__", []))
        # what tools/gen_help.py stores for a fast path that builds the same objects without click
        command.__dict__["__option_groups__"] = [*getattr(f, "__option_groups__", ()), (name, build, names)]
        decorated: Any = command
        for option in reversed(options):
            before = len(params)
            decorated = option(decorated)
            if not isinstance(option, _Beside):
                names.extend(param.name for param in decorated.__click_params__[before:])
        return decorated

    return decorate


class _Beside:
    """An option of :func:`beside`: hung on the command like any other, not part of the group's object."""

    __slots__ = ("option",)

    def __init__(self, option: Callable[[Any], Any]) -> None:
        self.option = option

    def __call__(self, f: Any) -> Any:
        return self.option(f)


def beside(option: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``option`` in an :func:`option_group`'s list for its place in --help only: the command gets its value."""
    return _Beside(option)


def _tokens(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    if value is None:
        return None
    from doctor.model.units import parse_tokens

    return parse_tokens(value, flag=f"--{param.name}")


def bounded(kind: str) -> Callable[[click.Context, click.Parameter, Any], Any]:
    """A callback refusing an implausible number (doctor/bounds.py) with the one line every input path gives."""

    def callback(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if value is not None:
            from doctor.bounds import check

            check(kind, value, max(param.opts, key=len))  # the flag as typed: --timeout, not its name timeout_s
        return value

    return callback


#: --context, --users, --text-only, --reproducible, --temperature: what the traffic looks like (a ``Workload``)
workload_options = option_group("workload", workload, [
    click.option("--context", callback=_tokens, metavar="N",
                 help="Tokens per request (prompt + output): 32768, 32k, 1M."),
    click.option("--users", type=int, callback=bounded("users"), metavar="N",
                 help="Concurrent requests to serve."),
    click.option("--text-only", is_flag=True, help="No images or video will be sent (multimodal models)."),
    click.option("--reproducible", is_flag=True,
                 help="Outputs must repeat bit for bit (evaluation pipelines, regression tests)."),
    click.option("--temperature", type=float, callback=bounded("temperature"), metavar="T",
                 help="Sampling temperature the clients send (for nondeterministic-outputs)."),
])


def symptom_option(f: F) -> F:
    return click.option(
        "--symptom", "symptoms", multiple=True, metavar="ID",
        help="Only the playbook(s) for this symptom (repeatable; `llmdoctor playbook list` shows them). "
             "Without it every playbook whose entry conditions hold runs.",
    )(f)


def playbooks_option(f: F) -> F:
    return click.option(
        "--playbooks", "playbook_dirs", multiple=True, type=click.Path(file_okay=False),
        help="Also load the playbooks in DIR (repeatable): your own <symptom>.yaml trees and causes/<id>.yaml.",
    )(f)


#: --symptom, --playbooks: a ``PlaybookFlags``
playbook_options = option_group("playbooks", PlaybookFlags, [symptom_option, playbooks_option])


def offline_option(f: F) -> F:
    """--offline: find the model only on this machine (a path, the Hugging Face cache), never on the Hub."""
    return click.option(
        "--offline", is_flag=True,
        help="Never ask the Hugging Face Hub for a model that is not a local path or in the local HF cache "
             "(HF_HUB_OFFLINE=1 does the same). Without it a repo id is resolved from HF_ENDPOINT "
             "(config, tokenizer and safetensors headers only, never weights).",
    )(f)
