"""`engram.memories`: governed long-term memories (engram.governance.v1.GovernanceService)."""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence, Union

from engram.governance.v1 import governance_service_pb2 as pb
from engram.governance.v1 import governance_service_pb2_grpc
from engram.governance.v1 import memory_pb2

from ._calls import Calls, Pages, listing
from ._messages import build, coerce

MemoryLike = Union[memory_pb2.Memory, Mapping[str, Any]]


class Memories:
    """Create, read, list, update, delete and restore memories; read their revisions.

    Memories are written through governance's hard rules: `create` and `update` return the
    response with the rules' `decision` beside the `memory`. See
    proto/engram/governance/v1/governance_service.proto for every field and error.
    """

    def __init__(self, calls: Calls, stub: governance_service_pb2_grpc.GovernanceServiceStub) -> None:
        self._calls = calls
        self._stub = stub

    def create(
        self,
        memory: MemoryLike,
        *,
        request_id: Optional[str] = None,
        validate_only: bool = False,
        timeout: Optional[float] = None,
    ) -> pb.CreateMemoryResponse:
        """Writes `memory` (a Memory or a dict such as `{"type": "MEMORY_TYPE_FACT", "namespace": ...,
        "key": ..., "value": {...}, "text": ...}`); returns the memory and the decision.

        A `request_id` is generated when none is given and reused on retries.
        """
        request = pb.CreateMemoryRequest(
            memory=coerce(memory_pb2.Memory, memory), request_id=request_id or "", validate_only=validate_only
        )
        return self._calls.unary(self._stub.CreateMemory, request, timeout)

    def get(self, name: str, *, timeout: Optional[float] = None) -> memory_pb2.Memory:
        """The memory `memories/{id}` (NOT_FOUND `RESOURCE_NOT_FOUND` when the caller cannot see it)."""
        return self._calls.unary(self._stub.GetMemory, pb.GetMemoryRequest(name=name), timeout).memory

    def list(
        self, *, page_size: int = 0, timeout: Optional[float] = None, **filters: Any
    ) -> Pages[memory_pb2.Memory]:
        """The memories visible to the caller, newest first, following `next_page_token`.

        `filters` are ListMemoriesRequest fields: `types`, `statuses`, `scopes`, `namespaces`,
        `keys`, `session`, `order`, ... (enum values by name or number). `timeout` is per page.
        """
        return listing(
            self._calls,
            self._stub.ListMemories,
            lambda token: build(
                pb.ListMemoriesRequest, {**filters, "page_size": page_size, "page_token": token}
            ),
            "memories",
            timeout,
        )

    def update(
        self,
        memory: MemoryLike,
        update_mask: Sequence[str],
        *,
        etag: Optional[str] = None,
        validate_only: bool = False,
        timeout: Optional[float] = None,
    ) -> pb.UpdateMemoryResponse:
        """Changes the fields named in `update_mask` (e.g. `["text", "evergreen"]`) of `memory.name`."""
        request = pb.UpdateMemoryRequest(
            memory=coerce(memory_pb2.Memory, memory), etag=etag or "", validate_only=validate_only
        )
        request.update_mask.paths.extend(update_mask)
        return self._calls.unary(self._stub.UpdateMemory, request, timeout)

    def delete(
        self,
        name: str,
        *,
        reason: str = "",
        purge: bool = False,
        etag: Optional[str] = None,
        timeout: Optional[float] = None,
    ) -> memory_pb2.Memory:
        """Soft-deletes the memory (`purge=True`: erases its content for good); returns it."""
        request = pb.DeleteMemoryRequest(name=name, reason=reason, purge=purge, etag=etag or "")
        return self._calls.unary(self._stub.DeleteMemory, request, timeout).memory

    def restore(
        self, name: str, *, reason: str = "", etag: Optional[str] = None, timeout: Optional[float] = None
    ) -> pb.RestoreMemoryResponse:
        """Brings back a DELETED or EXPIRED memory; returns it with the rules' decision."""
        request = pb.RestoreMemoryRequest(name=name, reason=reason, etag=etag or "")
        return self._calls.unary(self._stub.RestoreMemory, request, timeout)

    def revisions(
        self, name: str, *, page_size: int = 0, timeout: Optional[float] = None
    ) -> Pages[memory_pb2.MemoryRevision]:
        """The revisions of memory `name`, oldest first."""
        return listing(
            self._calls,
            self._stub.ListMemoryRevisions,
            lambda token: pb.ListMemoryRevisionsRequest(parent=name, page_size=page_size, page_token=token),
            "revisions",
            timeout,
        )
