"""Fixtures of the live-session tests: the session daemon (the running one, or one
started here) and a relay daemon of our own on free loopback ports, stopped at the
end. Helpers are in pyusttest.live."""

from __future__ import annotations

import pytest

from pyusttest.live import Relayd


@pytest.fixture(scope="session")
def relayd(tmp_path_factory):
    """An lttng-relayd on three free ports of 127.0.0.1, writing under a temporary
    directory; stopped (by its pid) at the end."""
    relay = Relayd(tmp_path_factory.mktemp("relayd"))
    relay.start()
    yield relay
    relay.stop()
