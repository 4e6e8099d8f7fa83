"""`llmdoctor serve`'s message for one alert: the alert first, then ``check``'s Markdown."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from doctor.commands.fleet import TargetResult, TargetSpec
    from doctor.sources.alerts import Alert


def render_markdown(alert: Alert, spec: TargetSpec, result: TargetResult) -> str:
    """The diagnosis as a chat message and a file: the alert first, then ``check``'s Markdown."""
    from doctor.render.check import check_markdown

    labels = ", ".join(f"`{k}={v}`" for k, v in sorted(alert.labels.items()) if k != "alertname")
    out = [f"# {alert.name} on {spec.shown}: llmdoctor check", "",
           f"- alert: {alert.status} since {alert.starts_at or 'unknown'} (fingerprint `{alert.fingerprint}`)",
           f"- labels: {labels or 'none'}"]
    if alert.generator_url:  # the rule's expression in Prometheus: one click from the chat message to the graph
        out.append(f"- source: {alert.generator_url}")
    for key in ("summary", "description", "runbook_url"):
        if alert.annotations.get(key):
            out.append(f"- {key}: {alert.annotations[key]}")
    out.append("")
    if result.run is None:
        out += [f"**Not checked:** {result.error}", ""]
    else:
        out += [check_markdown(result.run), ""]
    out.append(f"_Reproduce: `llmdoctor check --endpoint {spec.shown}"
               + (f" --symptom {alert.labels['symptom']}`_" if alert.labels.get("symptom") else "`_"))
    return "\n".join(out) + "\n"
