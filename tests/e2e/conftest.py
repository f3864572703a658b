"""These tests run with the default settings: autostart on (each test's service is its own, stopped at teardown)."""

import pytest


@pytest.fixture(autouse=True)
def _default_settings(autostart):
    pass
