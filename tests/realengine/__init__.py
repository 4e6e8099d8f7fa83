"""Tests against real inference engines (see conftest.py). A package, so its conftest is
``realengine.conftest`` and never shadows the ``conftest`` module the other tests import."""
