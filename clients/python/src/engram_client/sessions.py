"""`engram.sessions`: conversations and their messages (engram.ingestion.v1.IngestionService)."""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Optional, Sequence, Tuple, Union

import grpc

from engram.ingestion.v1 import ingestion_service_pb2 as pb
from engram.ingestion.v1 import ingestion_service_pb2_grpc
from engram.ingestion.v1 import session_pb2

from ._calls import Calls, Pages, listing
from ._errors import EngramError
from ._messages import build, coerce

#: A message to append: a Message, a dict of its fields, or a `(role, content)` pair. Roles may be
#: given short and in any case (`"user"`, `"assistant"`, `"system"`, `"tool"`) or as enum names.
MessageLike = Union[session_pb2.Message, Mapping[str, Any], Tuple[str, str]]


def _role(role: Any) -> Any:
    """`"user"` → `"MESSAGE_ROLE_USER"`; enum names and numbers unchanged."""
    if isinstance(role, str) and not role.upper().startswith("MESSAGE_ROLE_"):
        return f"MESSAGE_ROLE_{role.upper()}"
    return role


def to_message(value: MessageLike) -> session_pb2.Message:
    """One appendable Message from any MessageLike."""
    if isinstance(value, session_pb2.Message):
        return value
    if isinstance(value, tuple):
        if len(value) != 2:
            raise EngramError(grpc.StatusCode.INVALID_ARGUMENT, "a message tuple is (role, content)")
        return build(session_pb2.Message, {"role": _role(value[0]), "content": value[1]})
    if isinstance(value, Mapping):
        fields = dict(value)
        if "role" in fields:
            fields["role"] = _role(fields["role"])
        return build(session_pb2.Message, fields)
    raise EngramError(
        grpc.StatusCode.INVALID_ARGUMENT,
        f"a message is a Message, a dict or a (role, content) pair, not {type(value).__name__}",
    )


class Sessions:
    """Create, read, list, update, close and delete sessions; append and list their messages.

    See proto/engram/ingestion/v1/ingestion_service.proto for every field and error.
    """

    def __init__(self, calls: Calls, stub: ingestion_service_pb2_grpc.IngestionServiceStub) -> None:
        self._calls = calls
        self._stub = stub

    def create(
        self,
        *,
        request_id: Optional[str] = None,
        timeout: Optional[float] = None,
        **session: Any,
    ) -> session_pb2.Session:
        """A new ACTIVE session owned by the caller; `session` holds Session fields
        (`display_name`, `external_id`, `language_code`, `time_zone`, `metadata`)."""
        request = pb.CreateSessionRequest(
            session=build(session_pb2.Session, session), request_id=request_id or ""
        )
        return self._calls.unary(self._stub.CreateSession, request, timeout).session

    def get(self, name: str, *, timeout: Optional[float] = None) -> session_pb2.Session:
        """The session `sessions/{id}`."""
        return self._calls.unary(self._stub.GetSession, pb.GetSessionRequest(name=name), timeout).session

    def list(
        self, *, page_size: int = 0, timeout: Optional[float] = None, **filters: Any
    ) -> Pages[session_pb2.Session]:
        """The caller's sessions, most recently active first (`filters`: ListSessionsRequest fields)."""
        return listing(
            self._calls,
            self._stub.ListSessions,
            lambda token: build(
                pb.ListSessionsRequest, {**filters, "page_size": page_size, "page_token": token}
            ),
            "sessions",
            timeout,
        )

    def update(
        self,
        session: Union[session_pb2.Session, Mapping[str, Any]],
        update_mask: Sequence[str],
        *,
        etag: Optional[str] = None,
        timeout: Optional[float] = None,
    ) -> pb.UpdateSessionResponse:
        """Changes the fields of `session.name` named in `update_mask` (`status` CLOSED closes it)."""
        request = pb.UpdateSessionRequest(session=coerce(session_pb2.Session, session), etag=etag or "")
        request.update_mask.paths.extend(update_mask)
        return self._calls.unary(self._stub.UpdateSession, request, timeout)

    def close(self, name: str, *, timeout: Optional[float] = None) -> pb.UpdateSessionResponse:
        """Closes the session: its open tail becomes a MemCell and further appends fail."""
        return self.update({"name": name, "status": "SESSION_STATUS_CLOSED"}, ["status"], timeout=timeout)

    def delete(
        self, name: str, *, etag: Optional[str] = None, timeout: Optional[float] = None
    ) -> pb.DeleteSessionResponse:
        """Deletes the session, its messages and MemCells for good (memories stay)."""
        return self._calls.unary(
            self._stub.DeleteSession, pb.DeleteSessionRequest(name=name, etag=etag or ""), timeout
        )

    def append(
        self,
        name: str,
        messages: Iterable[MessageLike],
        *,
        request_id: Optional[str] = None,
        expected_last_sequence: Optional[int] = None,
        timeout: Optional[float] = None,
    ) -> pb.AppendMessagesResponse:
        """Appends 1–100 messages atomically, in order; returns them with their sequences.

        A `request_id` is generated when none is given and reused on retries, so a retry after a
        lost answer never appends twice.
        """
        request = pb.AppendMessagesRequest(
            parent=name, messages=[to_message(m) for m in messages], request_id=request_id or ""
        )
        if expected_last_sequence is not None:
            request.expected_last_sequence = expected_last_sequence
        return self._calls.unary(self._stub.AppendMessages, request, timeout)

    def messages(
        self, name: str, *, page_size: int = 0, timeout: Optional[float] = None, **filters: Any
    ) -> Pages[session_pb2.Message]:
        """The session's messages by sequence (`filters`: ListMessagesRequest fields such as
        `from_sequence`, `roles`, `newest_first`)."""
        return listing(
            self._calls,
            self._stub.ListMessages,
            lambda token: build(
                pb.ListMessagesRequest,
                {**filters, "parent": name, "page_size": page_size, "page_token": token},
            ),
            "messages",
            timeout,
        )

    def flush(
        self,
        name: str,
        *,
        wait_for_extraction: bool = False,
        reason: str = "",
        request_id: Optional[str] = None,
        timeout: Optional[float] = None,
    ) -> pb.FlushSessionResponse:
        """Closes the open tail into a MemCell now and hands it to memory extraction."""
        request = pb.FlushSessionRequest(
            name=name, wait_for_extraction=wait_for_extraction, reason=reason, request_id=request_id or ""
        )
        return self._calls.unary(self._stub.FlushSession, request, timeout)
