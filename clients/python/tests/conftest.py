"""Fixtures of the engram-client tests.

The server tests run against a real Engram server named by the environment; the test of
services/all-in-one/test/python-client.int.spec.ts starts one and sets:

    ENGRAM_ADDR          host:port of the server (plaintext gRPC)
    ENGRAM_TOKEN         bearer token of the first user
    ENGRAM_TOKEN_OTHER   bearer token of a second user of the same tenant
    ENGRAM_CHAT_REPLY    the reply the server's (scripted) chat model streams
    ENGRAM_ADDR_NO_MODEL host:port of a second server (same secret) without a chat model

A server test without them fails with that message; it never skips.
"""

import os
import uuid

import pytest

from engram_client import Engram


def _required(name):
    value = os.environ.get(name, "").strip()
    if not value:
        pytest.fail(
            f"{name} is not set: the server tests need a running Engram server "
            "(run them through services/all-in-one/test/python-client.int.spec.ts, or set "
            "ENGRAM_ADDR, ENGRAM_TOKEN, ENGRAM_TOKEN_OTHER, ENGRAM_CHAT_REPLY and "
            "ENGRAM_ADDR_NO_MODEL yourself)",
            pytrace=False,
        )
    return value


@pytest.fixture(scope="session")
def address():
    return _required("ENGRAM_ADDR")


@pytest.fixture(scope="session")
def address_without_model():
    return _required("ENGRAM_ADDR_NO_MODEL")


@pytest.fixture(scope="session")
def chat_reply():
    return _required("ENGRAM_CHAT_REPLY")


@pytest.fixture
def engram(address):
    with Engram(address, token=_required("ENGRAM_TOKEN"), timeout=30) as client:
        yield client


@pytest.fixture
def other(address):
    with Engram(address, token=_required("ENGRAM_TOKEN_OTHER"), timeout=30) as client:
        yield client


@pytest.fixture
def run_id():
    """A marker unique to one test, so that tests sharing a server never see each other's data."""
    return uuid.uuid4().hex[:12]
