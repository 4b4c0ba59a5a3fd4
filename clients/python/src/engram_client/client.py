"""`Engram`: one channel to an Engram server and the namespaces over it."""

from __future__ import annotations

import random
import time
from types import SimpleNamespace
from typing import Any, Callable, Optional, Sequence, Tuple

import grpc

from engram.context.v1 import context_service_pb2_grpc
from engram.governance.v1 import governance_service_pb2_grpc
from engram.ingestion.v1 import ingestion_service_pb2_grpc
from engram.retrieval.v1 import retrieval_service_pb2 as retrieval_pb
from engram.retrieval.v1 import retrieval_service_pb2_grpc

from ._calls import Calls
from ._errors import EngramError
from ._messages import build
from .context import BudgetLike, ChatStream, Context, chat
from .documents import Documents
from .memories import Memories
from .portability import Portability
from .retry import DEFAULT_RETRY, NO_RETRY, RetryPolicy
from .sessions import Sessions

#: The default deadline of every call, seconds (a call with `timeout=` overrides it).
DEFAULT_TIMEOUT = 30.0


def _target(address: str) -> Tuple[str, bool]:
    """`host:port` and whether to use TLS: an `https://` prefix means TLS, `http://` or none plaintext."""
    address = address.strip()
    for prefix, secure in (("https://", True), ("http://", False), ("grpc://", False)):
        if address.startswith(prefix):
            return address[len(prefix) :].rstrip("/"), secure
    return address.rstrip("/"), False


class Engram:
    """A client of an Engram server (the all-in-one or a gateway in front of the four services).

        with Engram("127.0.0.1:50051", token=token) as engram:
            session = engram.sessions.create(display_name="support chat")
            engram.sessions.append(session.name, [("user", "I moved to Lisbon.")])
            for memory in engram.memories.list():
                print(memory.text)

    Args:
        address: `host:port` (plaintext HTTP/2, as `npm start` serves), `http://host:port`, or
            `https://host:port` for TLS with the system's roots (or pass `credentials`).
        token: the bearer JWT sent on every call.
        token_provider: instead of `token`, a function returning the token, called before every
            attempt, so that short-lived tokens can be refreshed.
        timeout: the default deadline of each call in seconds (None: no deadline). Methods take
            `timeout=` to override it; a list's timeout applies to each page.
        retry: how refused calls are retried (default: 4 attempts, decision 0033); None: never.
        credentials: TLS channel credentials (implies a secure channel).
        options: extra grpcio channel options, e.g. `[("grpc.max_receive_message_length", n)]`.

    Namespaces: `memories`, `sessions`, `documents`, `context`, `portability` (export, import); `search(...)` and `chat(...)`;
    `raw.governance`, `raw.ingestion`, `raw.retrieval`, `raw.context`: the generated stubs, for
    what the namespaces do not cover (pass `metadata=engram.metadata()` to them).
    Every method raises EngramError and nothing else for a failed call.
    """

    def __init__(
        self,
        address: str,
        token: Optional[str] = None,
        *,
        token_provider: Optional[Callable[[], str]] = None,
        timeout: Optional[float] = DEFAULT_TIMEOUT,
        retry: Optional[RetryPolicy] = DEFAULT_RETRY,
        credentials: Optional[grpc.ChannelCredentials] = None,
        options: Sequence[Tuple[str, Any]] = (),
        sleep: Callable[[float], None] = time.sleep,
        rand: Callable[[], float] = random.random,
    ) -> None:
        if token is not None and token_provider is not None:
            raise EngramError(grpc.StatusCode.INVALID_ARGUMENT, "pass token or token_provider, not both")
        target, secure = _target(address)
        if credentials is None and secure:
            credentials = grpc.ssl_channel_credentials()
        self._channel = (
            grpc.insecure_channel(target, options=list(options))
            if credentials is None
            else grpc.secure_channel(target, credentials, options=list(options))
        )
        self._calls = Calls(
            token=token,
            token_provider=token_provider,
            timeout=timeout,
            retry=retry if retry is not None else NO_RETRY,
            sleep=sleep,
            rand=rand,
        )
        ingestion = ingestion_service_pb2_grpc.IngestionServiceStub(self._channel)
        self.raw = SimpleNamespace(
            governance=governance_service_pb2_grpc.GovernanceServiceStub(self._channel),
            ingestion=ingestion,
            retrieval=retrieval_service_pb2_grpc.RetrievalServiceStub(self._channel),
            context=context_service_pb2_grpc.ContextServiceStub(self._channel),
        )
        self.memories = Memories(self._calls, self.raw.governance)
        self.sessions = Sessions(self._calls, ingestion)
        self.documents = Documents(self._calls, ingestion)
        self.context = Context(self._calls, self.raw.context)
        self.portability = Portability(self._calls, self.raw.governance)

    def metadata(self) -> Tuple[Tuple[str, str], ...]:
        """The `authorization` metadata of a call, for the raw stubs."""
        return self._calls.metadata()

    def search(
        self, query: str, *, top_k: int = 0, timeout: Optional[float] = None, **fields: Any
    ) -> retrieval_pb.SearchResponse:
        """Searches memories, document chunks and conversation rounds the caller may see.

        Returns the SearchResponse: `results` in rank order (each with `kind`, `name`, `score`
        and the `memory`, `chunk` or `round` it found; `document` for a chunk) and `stats`.
        `fields` are further SearchRequest fields: `filter`, `options`, `explain`, `allow_degraded`.
        """
        request = build(retrieval_pb.SearchRequest, {**fields, "query": query, "top_k": top_k})
        return self._calls.unary(self.raw.retrieval.Search, request, timeout)

    def chat(
        self,
        session: str,
        user_message: str,
        *,
        budget: BudgetLike,
        request_id: Optional[str] = None,
        timeout: Optional[float] = None,
        **fields: Any,
    ) -> ChatStream:
        """Asks the server's chat model in `session` and streams the answer.

            answer = engram.chat(session.name, "Where do I live?", budget=4000)
            for delta in answer:
                print(delta.text, end="")
            print(answer.done.finish_reason)

        The context is assembled as in `context.build`; by default the user message and the reply
        are appended to the session afterwards. A `request_id` is generated when none is given: a
        retry of a finished call replays it instead of asking the model again. `fields` are
        further ChatRequest fields (`model`, `system_prompt`, `generation`, `append_mode`, ...).
        """
        return chat(
            self._calls,
            self.raw.context,
            session,
            user_message,
            budget=budget,
            request_id=request_id,
            timeout=timeout,
            **fields,
        )

    def close(self) -> None:
        """Closes the channel; calls in flight are cancelled."""
        self._channel.close()

    def __enter__(self) -> "Engram":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
