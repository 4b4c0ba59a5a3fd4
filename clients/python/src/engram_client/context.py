"""`engram.context` and `engram.chat`: context assembly and chat (engram.context.v1.ContextService)."""

from __future__ import annotations

from typing import Any, Generator, Iterator, Mapping, Optional, Union

from engram.context.v1 import context_pb2
from engram.context.v1 import context_service_pb2 as pb
from engram.context.v1 import context_service_pb2_grpc

from ._calls import Calls, ensure_request_id
from ._messages import build

#: A token budget: the total number of tokens, or a TokenBudget (or dict) with layer shares.
BudgetLike = Union[int, context_pb2.TokenBudget, Mapping[str, Any]]


def _budget(budget: BudgetLike) -> Any:
    """`{"total_tokens": n}` for an int; a TokenBudget or dict unchanged."""
    return {"total_tokens": budget} if isinstance(budget, int) else budget


class Context:
    """Build the context of a turn; read, compact the session state.

    See proto/engram/context/v1/context_service.proto for every field and error.
    """

    def __init__(self, calls: Calls, stub: context_service_pb2_grpc.ContextServiceStub) -> None:
        self._calls = calls
        self._stub = stub

    def build(
        self,
        session: str,
        user_message: str,
        *,
        budget: BudgetLike,
        timeout: Optional[float] = None,
        **fields: Any,
    ) -> pb.BuildContextResponse:
        """The messages for the next model call of `session`, within `budget` tokens, with the usage
        of every layer (`layers`) and the trace of what was included or dropped.

        `fields` are further BuildContextRequest fields: `model` (picks the tokenizer),
        `system_prompt`, `tools`, `knowledge`, `include_trace`, `strict`, ...
        """
        request = build(
            pb.BuildContextRequest,
            {**fields, "session": session, "user_message": user_message, "budget": _budget(budget)},
        )
        return self._calls.unary(self._stub.BuildContext, request, timeout)

    def state(self, session: str, *, timeout: Optional[float] = None) -> context_pb2.SessionState:
        """The session's state: rolling summary, key points, open loops, compaction mark."""
        request = pb.GetSessionStateRequest(name=f"{session}/state")
        return self._calls.unary(self._stub.GetSessionState, request, timeout).session_state

    def compact(
        self,
        session: str,
        *,
        force: bool = False,
        request_id: Optional[str] = None,
        timeout: Optional[float] = None,
    ) -> pb.CompactSessionResponse:
        """Folds the older part of the session's tail into its summary (`force`: even below the threshold)."""
        request = pb.CompactSessionRequest(session=session, force=force, request_id=request_id or "")
        return self._calls.unary(self._stub.CompactSession, request, timeout)


class ChatStream:
    """The answer of `engram.chat`: iterate it for the text deltas (ChatDeltaEvent, `.text`).

    `context` is the ChatContextEvent (how the context was assembled, which model answers) once it
    has arrived; `done` the ChatDoneEvent (whole text, finish reason, appended messages) once the
    stream has ended; `text` the text received so far. The call starts at the first iteration;
    breaking out of the loop cancels it (nothing is appended then).
    """

    def __init__(self, events: Generator[pb.ChatResponse, None, None], request_id: Optional[str]) -> None:
        self._events = events
        self.request_id = request_id
        self.context: Optional[pb.ChatContextEvent] = None
        self.done: Optional[pb.ChatDoneEvent] = None
        self.text = ""

    def __iter__(self) -> Iterator[pb.ChatDeltaEvent]:
        try:
            for event in self._events:
                kind = event.WhichOneof("event")
                if kind == "context":
                    self.context = event.context
                elif kind == "delta":
                    self.text += event.delta.text
                    yield event.delta
                elif kind == "done":
                    self.done = event.done
        finally:
            self._events.close()


def chat(
    calls: Calls,
    stub: context_service_pb2_grpc.ContextServiceStub,
    session: str,
    user_message: str,
    *,
    budget: BudgetLike,
    request_id: Optional[str] = None,
    timeout: Optional[float] = None,
    **fields: Any,
) -> ChatStream:
    """Starts `Chat`: see `Engram.chat`."""
    request = build(
        pb.ChatRequest,
        {
            **fields,
            "session": session,
            "user_message": user_message,
            "budget": _budget(budget),
            "request_id": request_id,
        },
    )
    request_id = ensure_request_id(request)
    return ChatStream(
        calls.stream(stub.Chat, lambda: request, timeout, request_id, replayable=True), request_id
    )
