"""The nightly fleet report from Prometheus history, and alert rules generated from the playbooks.

promql.yaml/promql.py: facts as PromQL over the engines' metric names; client.py: the Prometheus HTTP API;
collect.py: one query per fact for the whole fleet; targets.py: live looks (as check --targets); analysis.py: diagnosis
and the ``llmdoctor.report/1`` document; view.py: what the renderers (doctor/render/report_*.py, svg.py) show;
rules.py: playbook trees → Prometheus recording and alerting rules. docs/report.md describes it all.
"""
