"""engram-client: the Python SDK of Engram.

    from engram_client import Engram, EngramError

    with Engram("127.0.0.1:50051", token=token) as engram:
        session = engram.sessions.create(display_name="support chat")
        engram.sessions.append(session.name, [("user", "I moved to Lisbon last spring.")])
        hits = engram.search("where does the user live")

The generated messages and stubs are in the `engram` package beside this one
(`from engram.governance.v1 import memory_pb2`); see clients/python/README.md.
"""

from ._calls import Pages
from ._errors import EngramError
from .client import DEFAULT_TIMEOUT, Engram
from .context import ChatStream
from .retry import DEFAULT_RETRY, RetryPolicy, retry_delay

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_RETRY",
    "DEFAULT_TIMEOUT",
    "ChatStream",
    "Engram",
    "EngramError",
    "Pages",
    "RetryPolicy",
    "__version__",
    "retry_delay",
]
