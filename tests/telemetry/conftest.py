import socket

import pytest


@pytest.fixture
def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on: it was bound, then let go."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
