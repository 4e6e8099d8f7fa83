"""``--manifest FILE|-`` for lint, check and plan: a Kubernetes manifest as the launch and GPU source."""

from __future__ import annotations

from collections.abc import Callable

from doctor.cli.output import echo

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeVar

    F = TypeVar("F", bound=Callable[..., Any])


def manifest_option(f: F) -> F:
    import click  # only where the option is declared: reading a manifest (below) needs no click

    return click.option(
        "--manifest", type=click.Path(dir_okay=False, allow_dash=True), metavar="FILE|-",
        help="A Kubernetes manifest ('-' for stdin): Pod, Deployment, StatefulSet, LeaderWorkerSet, a kubectl "
             "List or helm template output. The engine container's command, args and env (secretKeyRef values "
             "are named, never read), its nvidia.com/gpu limit and the nvidia.com/gpu.product node label give "
             "the command and --gpu (a --gpu given wins).",
    )(f)


def manifest_inputs(path: str, command_given: bool, gpu: str | None) -> tuple[str, str | None]:
    """The launch command and GPU from the manifest; what it could not tell goes to stderr, one line each."""
    command, gpu, _ = manifest_inputs_text(path, command_given, gpu)
    return command, gpu


def manifest_inputs_text(path: str, command_given: bool, gpu: str | None) -> tuple[str, str | None, str]:
    """:func:`manifest_inputs`, and the manifest's text (what `lint --fix` patches)."""
    from doctor.errors import InputError
    from doctor.sources.manifest import note_lines, read_manifest_text

    if command_given:
        raise InputError("give the launch command or --manifest, not both")
    launch, text = read_manifest_text(path)
    for line in note_lines(launch):
        echo(f"llmdoctor: {line}", err=True)
    return launch.command, gpu or launch.gpu, text
