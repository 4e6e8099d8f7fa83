"""``llmdoctor serve``: an Alertmanager webhook receiver that runs ``check`` for each firing alert.

doctor/sources/alerts.py reads Alertmanager's webhook payload (version 4); dispatch.py decides what to check
(one check per alert fingerprint within a window, a bounded queue and pool) and delivers each diagnosis as
Markdown (doctor/render/alert.py; a file per fingerprint, and a Slack-compatible ``{"text": ...}`` POST);
http.py answers Alertmanager at once and serves the health endpoint; mcp.py is the Model Context Protocol
server of ``llmdoctor mcp``. Nothing here imports more than ``check`` does.
"""
