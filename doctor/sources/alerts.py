"""Alertmanager's webhook payload (version 4), read defensively: a receiver must never crash on a bad POST.

The format (https://prometheus.io/docs/alerting/latest/configuration/#webhook_config):
``{"version": "4", "status", "receiver", "groupLabels", "commonLabels", "externalURL", "truncatedAlerts",
"alerts": [{"status", "labels", "annotations", "startsAt", "endsAt", "generatorURL", "fingerprint"}]}``.
Any problem is an :class:`InputError` naming the field, answered with HTTP 400.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field

from doctor.errors import InputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Alertmanager's fingerprint is a 64-bit hash printed as 16 hex digits; it names the output file.
_FINGERPRINT = re.compile(r"[0-9a-f]{1,64}")
#: more alerts than this in one POST is not Alertmanager (its default max_alerts is 0 = all, groups are small)
MAX_ALERTS = 10_000


@dataclass(frozen=True)
class Alert:
    """One alert of a notification: what ``serve`` needs to decide and to describe it."""

    fingerprint: str
    status: str
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    starts_at: str = ""
    generator_url: str = ""

    @property
    def name(self) -> str:
        return self.labels.get("alertname", "(unnamed alert)")

    @property
    def instance(self) -> str | None:
        value = self.labels.get("instance", "").strip()
        return value or None


@dataclass(frozen=True)
class Notification:
    receiver: str
    status: str
    alerts: tuple[Alert, ...]
    truncated: int = 0


def parse_notification(body: bytes) -> Notification:
    """The webhook body as a :class:`Notification`; InputError (one line, naming the field) when it is not one."""
    try:
        doc = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(f"body: not JSON ({exc})") from None
    except RecursionError:
        raise InputError("body: JSON nested too deeply to be an Alertmanager payload") from None
    if not isinstance(doc, dict):
        raise InputError("body: expected a JSON object (Alertmanager webhook payload)")
    version = doc.get("version")
    if version != "4":
        raise InputError(f"version: {version!r}; this receiver reads Alertmanager's webhook payload version \"4\"")
    alerts = doc.get("alerts")
    if not isinstance(alerts, list):
        raise InputError("alerts: missing or not a list")
    if len(alerts) > MAX_ALERTS:
        raise InputError(f"alerts: {len(alerts)} alerts in one notification is more than {MAX_ALERTS}")
    parsed = tuple(_alert(item, f"alerts[{i}]") for i, item in enumerate(alerts))
    truncated = doc.get("truncatedAlerts", 0)
    return Notification(receiver=str(doc.get("receiver", "")), status=str(doc.get("status", "")), alerts=parsed,
                        truncated=truncated if isinstance(truncated, int) else 0)


def _alert(item: Any, where: str) -> Alert:
    if not isinstance(item, dict):
        raise InputError(f"{where}: expected an object")
    labels = _strings(item.get("labels"), f"{where}.labels")
    annotations = _strings(item.get("annotations", {}), f"{where}.annotations")
    status = item.get("status")
    if status not in ("firing", "resolved"):
        raise InputError(f"{where}.status: {status!r} (expected firing or resolved)")
    fingerprint = item.get("fingerprint")
    if not isinstance(fingerprint, str) or not _FINGERPRINT.fullmatch(fingerprint):
        # Alertmanager always sends one; another sender gets a stable one from the labels
        fingerprint = hashlib.sha256(json.dumps(labels, sort_keys=True).encode()).hexdigest()[:16]
    return Alert(fingerprint=fingerprint, status=status, labels=labels, annotations=annotations,
                 starts_at=str(item.get("startsAt", "")), generator_url=str(item.get("generatorURL", "")))


def _strings(value: Any, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise InputError(f"{where}: expected an object of strings")
    return dict(value)
