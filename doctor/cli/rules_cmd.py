"""``llmdoctor rules``: Prometheus alerting rules generated from the playbooks (doctor/report/rules.py)."""

from __future__ import annotations

import click

from doctor.cli.options import option_group
from doctor.cli.output import SEVERITIES, echo, emit
from doctor.errors import EXIT_OK, InputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from doctor.report.rules import RuleOptions

EPILOG = """\b
Examples:
  llmdoctor rules -o /etc/prometheus/rules/llmdoctor.yml --selector '{job="llm"}'
  llmdoctor rules --playbooks ./my-playbooks --verbose
  llmdoctor rules --format prometheusrule --namespace monitoring --label release=kube-prometheus-stack
  promtool check rules llmdoctor.yml
  llmdoctor rules --report --since 24h --every 10m -o llmdoctor-report.yml   # the report's facts, recorded

Exit codes: 0 written, 2 bad input (playbooks, durations, selector, labels, runbook base).
"""


class AlertFlags:
    """--selector … --runbook-base: which series the alerts read and when they fire (:meth:`options` makes the
    pipeline's ``RuleOptions`` of them; --report's recording rules read the selector and trend too)."""

    __slots__ = ("selector", "for_", "range_", "trend", "min_severity", "runbook_base")

    def __init__(self, selector: str, for_: str, range_: str, trend: str, min_severity: str,
                 runbook_base: str | None) -> None:
        self.selector, self.for_, self.range_, self.trend = selector, for_, range_, trend
        self.min_severity, self.runbook_base = min_severity, runbook_base

    def check_runbook_base(self) -> None:
        if self.runbook_base is not None and not self.runbook_base.startswith(("http://", "https://")):
            raise InputError(f"--runbook-base {self.runbook_base!r}: expected an http(s) URL")

    def options(self) -> RuleOptions:
        from doctor.report.promql import Params, Selector, parse_duration
        from doctor.report.rules import DEFAULT_RUNBOOK_BASE, RuleOptions

        params = Params(selector=Selector.parse(self.selector), range=parse_duration(self.range_, "--range"),
                        trend=parse_duration(self.trend, "--trend"))
        return RuleOptions(params=params, for_s=parse_duration(self.for_, "--for"), min_severity=self.min_severity,
                           runbook_base=self.runbook_base or DEFAULT_RUNBOOK_BASE)


class ResourceFlags:
    """--name, --namespace, --label: the PrometheusRule resource's metadata (--format prometheusrule)."""

    __slots__ = ("name", "namespace", "rule_labels")

    def __init__(self, rule_name: str, namespace: str | None, rule_labels: tuple[str, ...]) -> None:
        self.name, self.namespace, self.rule_labels = rule_name, namespace, rule_labels

    def labels(self) -> dict[str, str]:
        """--label KEY=VALUE each, as metadata labels; one InputError for one that is not."""
        labels = {}
        for item in self.rule_labels:
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                raise InputError(f"--label {item!r}: expected KEY=VALUE")
            labels[key.strip()] = value.strip()
        return labels


class RecordingFlags:
    """--report, --since, --step, --every: recording rules for `llmdoctor report` instead of alerts."""

    __slots__ = ("for_report", "since", "step", "every")

    def __init__(self, for_report: bool, since: str, step: str, every: str) -> None:
        self.for_report, self.since, self.step, self.every = for_report, since, step, every


#: --selector … --runbook-base: an ``AlertFlags``
alert_options = option_group("alerts", AlertFlags, [
    click.option("--selector", default="", metavar="'{job=\"llm\"}'",
                 help="Label matchers for the engines' series (and their `up`)."),
    click.option("--for", "for_", default="10m", show_default=True, help="How long a condition must hold."),
    click.option("--range", "range_", default="5m", show_default=True, help="Window of rates and averages."),
    click.option("--trend", default="15m", show_default=True, help="Window of the KV slope behind time-to-full."),
    click.option("--min-severity", type=click.Choice(SEVERITIES), default="warning", show_default=True,
                 help="Leave out alerts for causes below this severity."),
    click.option("--runbook-base", metavar="URL", default=None,
                 help="Base of each alert's runbook_url (#cause-id is appended; default: the generated causes "
                      "documentation, docs/causes.md)."),
])

#: --name, --namespace, --label: a ``ResourceFlags``
resource_options = option_group("resource", ResourceFlags, [
    click.option("--name", "rule_name", default="llmdoctor", show_default=True,
                 help="metadata.name of the PrometheusRule."),
    click.option("--namespace", default=None, help="metadata.namespace of the PrometheusRule."),
    click.option("--label", "rule_labels", multiple=True, metavar="KEY=VALUE",
                 help="A metadata label of the PrometheusRule (repeatable), e.g. the release your Prometheus "
                      "Operator's ruleSelector matches."),
])

#: --report, --since, --step, --every: a ``RecordingFlags``
recording_options = option_group("recording", RecordingFlags, [
    click.option("--report", "for_report", is_flag=True,
                 help="Instead of alerts: recording rules for `llmdoctor report`'s fleet-wide queries over --since "
                      "(with --selector, --step, --trend as the report is run), so the store works them out ahead "
                      "of time and a report of a large fleet reads one sample per instance (docs/report.md)."),
    click.option("--since", default="24h", show_default=True, help="With --report: the window of the report it serves."),
    click.option("--step", default="60s", show_default=True, help="With --report: the report's --step."),
    click.option("--every", default="10m", show_default=True,
                 help="With --report: how often the store evaluates them (the rule group's interval); a report "
                      "reads the last evaluation, so its window ends at most this long before its end."),
])


@click.command("rules", epilog=EPILOG)
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Write the rules file here (default: stdout).")
@click.option("--playbooks", "playbook_dirs", multiple=True, type=click.Path(file_okay=False),
              help="Also export the playbooks in DIR (repeatable): your own trees export the same way.")
@alert_options
@click.option("--format", "fmt", type=click.Choice(["rules", "prometheusrule"]), default="rules", show_default=True,
              help="A Prometheus rules file, or a Prometheus Operator PrometheusRule (monitoring.coreos.com/v1).")
@resource_options
@click.option("-v", "--verbose", is_flag=True, help="List the nodes left out, and why, on stderr.")
@recording_options
def rules(output: str | None, playbook_dirs: tuple[str, ...], alerts: AlertFlags, fmt: str,
          resource: ResourceFlags, verbose: bool, recording: RecordingFlags) -> int:
    """Export the playbook nodes whose conditions PromQL can check as Prometheus alerting rules.

    Each fact a node reads is recorded once (llmdoctor:metrics_kv_usage, …) from both engines' metric names;
    the node's conditions become the alert (ge → >=, all → and, any → or). Labels carry the cause id, the
    symptom and the severity; annotations a summary, runbook_url (the cause in docs/causes.md) and the runbook
    command (llmdoctor check --endpoint {{ $labels.instance }} --symptom …). Nodes that need facts Prometheus
    cannot see (launch flags, the model config) are left out, and so is a playbook whose entry threshold alone
    names no cause (low-cache-hit): an alert pages only where check would name its cause. --verbose lists them.
    """
    from doctor import __version__
    from doctor.playbook.loader import load_playbooks
    from doctor.report.promql import load_catalog
    from doctor.report.rules import generate, rules_yaml

    labels = resource.labels()
    alerts.check_runbook_base()
    if recording.for_report:
        r, selector = recording, alerts.selector
        generated_text, count = _report_rules(selector, r.since, r.step, alerts.trend, r.every)
        document = {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
                    "metadata": {"name": resource.name, **({"namespace": resource.namespace} if resource.namespace
                                                           else {}),
                                 "labels": {"app.kubernetes.io/name": "llmdoctor", **labels}},
                    "spec": generated_text} if fmt == "prometheusrule" else generated_text
        flags = f"--since {r.since} --step {r.step} --trend {alerts.trend} --every {r.every}" + (
            f" --selector '{selector}'" if selector else "")
        header = (f"Generated by llmdoctor {__version__} (`llmdoctor rules --report {flags}`): do not edit, "
                  f"regenerate.\n{count} recording rules, one per fleet-wide query of `llmdoctor report` over that "
                  "window and selector (docs/report.md, \"Recording rules\").")
        return _write(rules_yaml(None, header, document), output, f"{count} recording rules")
    generated = generate(load_playbooks(playbook_dirs), load_catalog(), alerts.options())
    header = (f"Generated by llmdoctor {__version__} (`llmdoctor rules`) from its playbooks"
              + (f" and {', '.join(playbook_dirs)}" if playbook_dirs else "") + ": do not edit, regenerate.\n"
              f"{len(generated.alerts)} alerts over {len(generated.records)} recorded facts; "
              f"{len(generated.skipped)} playbook nodes need facts Prometheus cannot see (llmdoctor rules -v).")
    document = generated.prometheus_rule(resource.name, resource.namespace, labels) if fmt == "prometheusrule" \
        else None
    text = rules_yaml(generated, header, document)
    if verbose:
        for item in generated.skipped:
            echo(f"skipped {item.line()}", err=True)
    return _write(text, output, f"{len(generated.alerts)} alerts")


def _write(text: str, output: str | None, what: str) -> int:
    if output:
        from doctor.outio import write_atomic

        write_atomic(output, text)
        echo(f"llmdoctor: {what} written to {output}", err=True)
    else:
        emit(text)
    return EXIT_OK


def _report_rules(selector: str, since: str, step: str, trend: str, every: str) -> tuple[dict, int]:
    """The rules document recording the report's fleet-wide queries, checked as the report checks its flags."""
    from doctor.report.collect import Window, fleet_queries
    from doctor.report.promql import Params, Selector, format_duration, load_catalog, parse_duration
    from doctor.report.recorded import rules_document

    window_s, step_s = parse_duration(since, "--since"), parse_duration(step, "--step")
    trend_s = min(parse_duration(trend, "--trend"), window_s)
    every_s = parse_duration(every, "--every")
    if step_s > window_s or trend_s < 2 * step_s:
        raise InputError(f"--step {step}: the report's KV slope needs two steps inside --trend {trend} and --since "
                         f"{since}")
    window = Window(since=window_s, step=step_s, trend=trend_s, end=0.0)
    queries = fleet_queries(load_catalog(), window, Params(selector=Selector.parse(selector)))
    return rules_document(queries, format_duration(every_s)), len(queries)
