"""CLI options grouped into the objects the pipeline takes (issue 20, point 5): each command's callback receives
one object per option group (doctor/cli/options.py ``option_group``), not one argument per flag, while --help
stays what the options declare (tests/test_startup.py compares it with the stored text)."""

from __future__ import annotations

import inspect

import click
from click.testing import CliRunner

from doctor.cli.options import beside, option_group


def _params(command: click.Command) -> list[str]:
    return list(inspect.signature(command.callback).parameters)


def test_plan_takes_one_plan_request() -> None:
    from doctor.cli.plan_cmd import plan

    assert _params(plan) == ["request", "fmt", "fail_on", "verbose"]


def test_report_takes_one_report_options() -> None:
    from doctor.cli.report_cmd import report

    assert _params(report) == ["options", "output", "fmt", "fail_on", "indent", "progress"]


def test_check_snapshot_lint_take_their_groups() -> None:
    from doctor.cli.check_cmd import check, snapshot
    from doctor.cli.lint_cmd import lint

    # the issue counted 32 parameters on check(); the groups (live, active, given, workload) hold the rest
    assert {"live", "active", "given", "workload"} <= set(_params(check)) and len(_params(check)) <= 14
    assert {"live", "active", "given", "workload"} <= set(_params(snapshot))
    assert "workload" in _params(lint)


def test_plan_flags_build_the_request_the_planner_gets() -> None:
    from doctor.cli.plan_cmd import _request

    request = _request(config="example:seed-gqa-27b", gpu="H200:8", gpu_mem=None, manifest=None, context=32768,
                       users=100, rps=None, request_seconds=None, latency="strict", engine="vllm",
                       engine_version="0.11.0", weights_dtype="fp8", model_path=None, text_only=True, offline=True)
    assert (request.engines, request.engine_version, request.latency, request.users) == (("vllm",), "0.11.0",
                                                                                         "strict", 100)


def test_a_group_hands_one_object_and_beside_options_their_own_argument() -> None:
    got: dict[str, object] = {}

    group = option_group("pair", lambda a, b: (a, b), [
        click.option("--a", default="1"),
        beside(click.option("--loose", default="x")),
        click.option("--b", default="2"),
    ])

    @click.command()
    @group
    @click.option("--after", default="z")
    def command(pair: tuple[str, str], loose: str, after: str) -> None:
        got.update(pair=pair, loose=loose, after=after)

    result = CliRunner().invoke(command, ["--b", "B", "--loose", "L"])
    assert result.exit_code == 0, result.output
    assert got == {"pair": ("1", "B"), "loose": "L", "after": "z"}
    usage = CliRunner().invoke(command, ["--help"]).output
    assert usage.index("--a") < usage.index("--loose") < usage.index("--b") < usage.index("--after")
