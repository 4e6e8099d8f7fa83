"""CLI options grouped into the objects the pipeline takes (issue 20, point 5): each command's callback receives
one object per option group (doctor/cli/options.py ``option_group``), not one argument per flag, while --help
stays what the options declare (tests/test_startup.py compares it with the stored text)."""

from __future__ import annotations

import inspect

import click
import pytest
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

    # the issue counted 32 parameters on check(); seven groups hold them all, none is passed alone
    assert _params(check) == ["live", "active", "scope", "given", "workload", "playbooks", "output"]
    assert _params(snapshot) == ["live", "active", "given", "workload", "output"]
    # lint shares check's playbook and output groups; its own mode switches (--files, --fix, -o) and the two
    # inputs that change what is read (--target-version, --manifest) stay beside them
    assert _params(lint) == ["command", "as_files", "fix", "output_file", "given", "target_version", "manifest",
                             "workload", "playbooks", "output"]


def test_inspect_serve_rules_take_their_groups() -> None:
    from doctor.cli.inspect_cmd import inspect
    from doctor.cli.rules_cmd import rules
    from doctor.cli.serve_cmd import serve

    assert _params(inspect) == ["config", "fmt", "sizing", "offline"]
    assert _params(serve) == ["flags", "listen", "token_env"]
    assert _params(rules) == ["output", "playbook_dirs", "alerts", "fmt", "resource", "verbose", "recording"]


def _commands() -> dict[str, click.Command]:
    from doctor.cli.group import cli

    ctx = click.Context(cli)
    out = {}
    for name in cli.list_commands(ctx):
        command = cli.get_command(ctx, name)
        if isinstance(command, click.Group):
            out.update({f"{name} {sub}": command.get_command(ctx, sub) for sub in command.list_commands(ctx)})
        else:
            out[name] = command
    return out


def test_no_command_takes_its_flags_one_by_one() -> None:
    """Every command with more than a handful of flags takes option groups: at most 14 arguments each (check, the
    largest, had 32; each group is one), and none where its flags outnumber its arguments by less than a group."""
    commands = _commands()
    assert len(commands) >= 14
    wide = {name: len(_params(c)) for name, c in commands.items() if len(_params(c)) > 14}
    assert wide == {}
    flat = sorted(name for name, c in commands.items() if len(c.params) > 8 and len(_params(c)) == len(c.params))
    assert flat == [], f"commands taking every flag as its own argument: {flat}"


def test_serve_flags_build_the_options_the_dispatcher_gets(tmp_path) -> None:
    from doctor.cli.serve_cmd import ServeFlags

    flags = ServeFlags(targets_file=None, check_unlisted=False, out_dir=str(tmp_path / "out"), notify_url=None,
                       notify_url_env=None, timeout_s=3.0, concurrency=2, max_queue=10, dedup_window="1m",
                       playbook_dirs=())
    options = flags.options(flags.notify())
    assert (options.out_dir, options.dedup_s, options.timeout_s, options.concurrency) == (tmp_path / "out", 60.0,
                                                                                           3.0, 2)
    assert (tmp_path / "out").is_dir()


def test_offline_flags_build_the_inputs_the_pipeline_gets(tmp_path) -> None:
    """check's ``given`` group makes the pipeline's OfflineInputs: the command and GPU a manifest gives (a --gpu
    given wins), the log's path; --manifest - beside --log - is one input error (two readers of standard input)."""
    from doctor.cli.flags import OfflineFlags
    from doctor.errors import InputError
    from doctor.sources.offline import Workload

    manifest = tmp_path / "pod.yaml"
    manifest.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: llm}\nspec:\n  containers:\n  - name: vllm\n"
                        "    image: vllm/vllm-openai:v0.11.0\n    args: [--model, Qwen/Qwen3-8B, -tp, '2']\n"
                        "    resources: {limits: {nvidia.com/gpu: 2}}\n")
    given = OfflineFlags(None, None, None, "H100:2", None, None, None, None, None, True, "server.log",
                         manifest=str(manifest), target_version="0.12.0")
    inputs = given.inputs(Workload(users=4))
    assert "Qwen/Qwen3-8B" in str(inputs.command) and inputs.gpu == "H100:2" and inputs.log == "server.log"
    assert (inputs.offline, inputs.workload.users, given.target_version) == (True, 4, "0.12.0")
    with pytest.raises(InputError, match="both read standard input"):
        OfflineFlags("vllm serve m", None, None, None, None, None, None, None, None, False, "-",
                     manifest="-").inputs(Workload())


def test_check_hands_its_groups_to_the_pipeline(tmp_path, monkeypatch) -> None:
    """What `check`'s flags say reaches the pipeline's CheckOptions, through the groups, flag by flag."""
    import doctor.commands.check as pipeline
    from doctor.cli.check_cmd import check

    class Taken(Exception):
        pass

    def run_check(opts: object) -> None:
        raise Taken(opts)

    monkeypatch.setattr(pipeline, "run_check", run_check)
    result = CliRunner().invoke(check, [
        "--snapshot", "s.json", "--log", "x.log", "--target-version", "0.12.0", "--symptom", "hung", "--playbooks",
        str(tmp_path), "--command", "vllm serve Qwen/Qwen3-8B", "--gpu", "H100:2", "--users", "4", "--timeout", "3",
        "--format", "json", "--fail-on", "never", "-v"])
    assert isinstance(result.exception, Taken), result.output
    opts = result.exception.args[0]
    assert (opts.snapshot, opts.symptoms, opts.playbook_dirs, opts.target_version, opts.timeout_s) == (
        "s.json", ("hung",), (str(tmp_path),), "0.12.0", 3.0)
    assert (opts.offline.log, opts.offline.command, opts.offline.gpu, opts.offline.workload.users) == (
        "x.log", "vllm serve Qwen/Qwen3-8B", "H100:2", 4)


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
