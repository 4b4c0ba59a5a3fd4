"""EngramError: the one exception every method of the SDK raises, read from the gRPC status details."""

from __future__ import annotations

from typing import Mapping, Optional, Type, TypeVar

import grpc
from google.protobuf.message import DecodeError, Message
from google.rpc import error_details_pb2, status_pb2

_STATUS_DETAILS_KEY = "grpc-status-details-bin"

_M = TypeVar("_M", bound=Message)


class EngramError(Exception):
    """A failed Engram call.

    Attributes:
        code: the gRPC status code (`grpc.StatusCode`).
        reason: the `google.rpc.ErrorInfo` reason, an `engram.common.v1.ErrorReason` name without
            its `ERROR_REASON_` prefix (`FIELD_INVALID`, `RESOURCE_NOT_FOUND`, ...), or None when the
            server sent no ErrorInfo (a transport failure, or an error raised by the SDK itself
            before any call, such as an unreadable file). Branch on this, not on the message.
        domain: the answering service (`engram.governance`, ...), or None.
        metadata: the ErrorInfo metadata (identifiers such as `field`, `limit`; never content).
        retry_delay: the `google.rpc.RetryInfo` delay in seconds, or None.
        details: the status message, for people (do not parse it).
        request_id: the `request_id` the SDK sent with the call, if the request has one, so a
            caller can retry it later with the same id.
    """

    def __init__(
        self,
        code: grpc.StatusCode,
        details: str,
        *,
        reason: Optional[str] = None,
        domain: Optional[str] = None,
        metadata: Optional[Mapping[str, str]] = None,
        retry_delay: Optional[float] = None,
        request_id: Optional[str] = None,
    ) -> None:
        self.code = code
        self.details = details
        self.reason = reason
        self.domain = domain
        self.metadata = dict(metadata or {})
        self.retry_delay = retry_delay
        self.request_id = request_id
        super().__init__(self._describe())

    def _describe(self) -> str:
        """`CODE reason: message {metadata}`, the line a log or traceback shows."""
        head = self.code.name if self.reason is None else f"{self.code.name} {self.reason}"
        tail = f" {self.metadata}" if self.metadata else ""
        return f"{head}: {self.details}{tail}"

    @classmethod
    def from_rpc_error(cls, error: grpc.RpcError, request_id: Optional[str] = None) -> "EngramError":
        """The EngramError of a failed grpcio call, with the ErrorInfo and RetryInfo of its trailers."""
        info = error_info(error)
        code = error.code() if callable(getattr(error, "code", None)) else grpc.StatusCode.UNKNOWN
        details = error.details() if callable(getattr(error, "details", None)) else str(error)
        return cls(
            code if code is not None else grpc.StatusCode.UNKNOWN,
            details or "",
            reason=info.reason if info is not None else None,
            domain=info.domain if info is not None else None,
            metadata=dict(info.metadata) if info is not None else None,
            retry_delay=retry_info_delay(error),
            request_id=request_id,
        )


def status_detail(error: grpc.RpcError, message_class: Type[_M]) -> Optional[_M]:
    """The first detail of type `message_class` in the `grpc-status-details-bin` trailer, or None."""
    trailers = error.trailing_metadata() if callable(getattr(error, "trailing_metadata", None)) else None
    for key, value in trailers or ():
        if key != _STATUS_DETAILS_KEY:
            continue
        try:
            status = status_pb2.Status.FromString(value)
        except DecodeError:
            return None  # a corrupt trailer: report the status code alone
        for detail in status.details:
            message = message_class()
            if detail.Unpack(message):
                return message
    return None


def error_info(error: grpc.RpcError) -> Optional[error_details_pb2.ErrorInfo]:
    """The google.rpc.ErrorInfo of a failed call, or None."""
    return status_detail(error, error_details_pb2.ErrorInfo)


def retry_info_delay(error: grpc.RpcError) -> Optional[float]:
    """The google.rpc.RetryInfo delay of a failed call in seconds, or None."""
    info = status_detail(error, error_details_pb2.RetryInfo)
    return None if info is None else info.retry_delay.seconds + info.retry_delay.nanos / 1e9
