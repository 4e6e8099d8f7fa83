"""The private stores of tests/support/tsdb.py for pytest: the same classes, and skip markers that say why.

Tests skip, with the reason, where promtool/prometheus/victoria-metrics are not installed (.ci/run installs
Debian's packages); bench/ scripts import tests/support/tsdb.py directly, without pytest.
"""

from __future__ import annotations

import pytest

from support.tsdb import (  # noqa: F401 - the tests' one import for the stores
    PROMETHEUS,
    PROMTOOL,
    ROOT,
    SCENARIOS_PY,
    VICTORIA,
    PrivatePrometheus,
    PrivateVictoria,
    backfill,
    backfill_rules,
    free_port,
    scenarios,
)

requires_promtool = pytest.mark.skipif(
    PROMTOOL is None, reason="promtool not installed (Debian: apt-get install prometheus; .ci/run does it)")
requires_prometheus = pytest.mark.skipif(
    PROMETHEUS is None or PROMTOOL is None,
    reason="prometheus/promtool not installed (Debian: apt-get install prometheus; .ci/run does it)")
requires_victoria = pytest.mark.skipif(
    VICTORIA is None, reason="victoria-metrics not installed (Debian: apt-get install victoria-metrics; .ci/run does it)")
