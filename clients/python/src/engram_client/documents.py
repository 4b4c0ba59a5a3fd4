"""`engram.documents`: reference documents and their chunks (engram.ingestion.v1.IngestionService)."""

from __future__ import annotations

import os
from typing import IO, Any, Callable, Iterator, Optional, Union

import grpc

from engram.ingestion.v1 import document_pb2
from engram.ingestion.v1 import ingestion_service_pb2 as pb
from engram.ingestion.v1 import ingestion_service_pb2_grpc

from ._calls import Calls, Pages, ensure_request_id, listing
from ._errors import EngramError
from ._messages import build

#: What `ingest` reads: a file path, the content's bytes, or a binary file object open for reading.
Source = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, IO[bytes]]

#: The bytes of one DocumentPart. The server takes up to 1 MiB per part and 4,096 parts.
DEFAULT_PART_SIZE = 256 * 1024

_MIME_BY_SUFFIX = {
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".html": "text/html",
    ".htm": "text/html",
    ".txt": "text/plain",
    ".text": "text/plain",
}


def _guess_mime_type(file_name: Optional[str]) -> str:
    """The media type for a file name's suffix; text/plain when there is no name or the suffix is unknown."""
    if file_name is None:
        return "text/plain"
    return _MIME_BY_SUFFIX.get(os.path.splitext(file_name)[1].lower(), "text/plain")


class _Content:
    """The content of an ingestion, readable once per attempt where it can be read again."""

    def __init__(self, source: Source, part_size: int) -> None:
        self.part_size = part_size
        self.path: Optional[str] = None
        self.data: Optional[bytes] = None
        self.stream: Optional[IO[bytes]] = None
        if isinstance(source, (str, os.PathLike)):
            self.path = os.fspath(source)
            try:
                self.size: Optional[int] = os.stat(self.path).st_size
            except OSError as error:
                raise EngramError(
                    grpc.StatusCode.INVALID_ARGUMENT, f"cannot read {self.path}: {error.strerror}"
                ) from error
        elif isinstance(source, (bytes, bytearray, memoryview)):
            self.data = bytes(source)
            self.size = len(self.data)
        elif callable(getattr(source, "read", None)):
            self.stream = source
            self.size = None
        else:
            raise EngramError(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"ingest reads a path, bytes or a binary file object, not {type(source).__name__}",
            )

    @property
    def file_name(self) -> Optional[str]:
        name = self.path if self.path is not None else getattr(self.stream, "name", None)
        return name if isinstance(name, str) else None

    @property
    def replayable(self) -> bool:
        """A refused attempt can be sent again: bytes and paths yes, a caller's file object no."""
        return self.stream is None

    def parts(self) -> Iterator[bytes]:
        """The content in parts of at most `part_size` bytes (a path is opened anew per attempt)."""
        if self.data is not None:
            for start in range(0, len(self.data), self.part_size):
                yield self.data[start : start + self.part_size]
            return
        if self.path is not None:
            with open(self.path, "rb") as file:
                yield from iter(lambda: file.read(self.part_size), b"")
            return
        assert self.stream is not None
        yield from iter(lambda: self.stream.read(self.part_size), b"")  # type: ignore[union-attr]


class Documents:
    """Ingest (streamed, with progress), read, list and delete documents; read their chunks.

    See proto/engram/ingestion/v1/ingestion_service.proto for every field and error.
    """

    def __init__(self, calls: Calls, stub: ingestion_service_pb2_grpc.IngestionServiceStub) -> None:
        self._calls = calls
        self._stub = stub

    def ingest(
        self,
        source: Source,
        *,
        mime_type: Optional[str] = None,
        display_name: Optional[str] = None,
        on_progress: Optional[Callable[[pb.IngestProgress], None]] = None,
        wait_for_index: bool = False,
        request_id: Optional[str] = None,
        chunking: Any = None,
        part_size: int = DEFAULT_PART_SIZE,
        timeout: Optional[float] = None,
        **document: Any,
    ) -> pb.IngestDocumentResponse:
        """Uploads a document with StreamIngestDocument (up to 64 MiB) and returns the result.

        `source` is a path (its suffix picks the media type unless `mime_type` is given: `.md`
        Markdown, `.html` HTML, anything else plain text; its base name is the display name unless
        `display_name` is given), bytes, or a binary file object. `document` holds further Document
        fields (`scope`, `org_id`, `source_uri`, `metadata`). `on_progress` is called with each
        IngestProgress (phase, bytes received, chunks planned, written and indexed); an exception
        it raises cancels the upload and propagates. With `wait_for_index` the call returns once
        every chunk is searchable (or the server's wait ran out: see `index_complete`).

        A refusal before the upload started (RATE_LIMITED, OVERLOADED) is retried for paths and
        bytes, with the same generated `request_id`; a file object is read once and never retried.
        """
        if not 1 <= part_size <= 1024 * 1024:
            raise EngramError(grpc.StatusCode.INVALID_ARGUMENT, "part_size must be 1 byte to 1 MiB")
        content = _Content(source, part_size)
        name = content.file_name
        header = pb.IngestDocumentHeader(
            document=build(
                document_pb2.Document,
                {
                    **document,
                    "mime_type": mime_type or _guess_mime_type(name),
                    "display_name": display_name or (os.path.basename(name) if name else None),
                },
            ),
            request_id=request_id or "",
            wait_for_index=wait_for_index,
        )
        if chunking is not None:
            header.chunking.CopyFrom(build(document_pb2.ChunkingOptions, chunking))
        if content.size is not None and content.size > 0:
            header.expected_size_bytes = content.size
        request_id = ensure_request_id(header)

        def requests() -> Iterator[pb.StreamIngestDocumentRequest]:
            yield pb.StreamIngestDocumentRequest(header=header)
            for data in content.parts():
                yield pb.StreamIngestDocumentRequest(part=pb.DocumentPart(data=data))

        responses = self._calls.stream(
            self._stub.StreamIngestDocument, requests, timeout, request_id, replayable=content.replayable
        )
        try:
            for response in responses:
                if response.HasField("result"):
                    return response.result
                if on_progress is not None:
                    on_progress(response.progress)
        finally:
            responses.close()  # cancels the call when on_progress raised
        raise EngramError(
            grpc.StatusCode.INTERNAL, "StreamIngestDocument ended without a result", request_id=request_id
        )

    def get(self, name: str, *, timeout: Optional[float] = None) -> document_pb2.Document:
        """The document `documents/{id}`, in any state."""
        return self._calls.unary(self._stub.GetDocument, pb.GetDocumentRequest(name=name), timeout).document

    def list(
        self, *, page_size: int = 0, timeout: Optional[float] = None, **filters: Any
    ) -> Pages[document_pb2.Document]:
        """The documents visible to the caller, newest first (`filters`: ListDocumentsRequest fields)."""
        return listing(
            self._calls,
            self._stub.ListDocuments,
            lambda token: build(
                pb.ListDocumentsRequest, {**filters, "page_size": page_size, "page_token": token}
            ),
            "documents",
            timeout,
        )

    def delete(
        self, name: str, *, etag: Optional[str] = None, timeout: Optional[float] = None
    ) -> pb.DeleteDocumentResponse:
        """Deletes the document and its chunks for good."""
        return self._calls.unary(
            self._stub.DeleteDocument, pb.DeleteDocumentRequest(name=name, etag=etag or ""), timeout
        )

    def chunks(
        self, name: str, *, page_size: int = 0, timeout: Optional[float] = None, **filters: Any
    ) -> Pages[document_pb2.Chunk]:
        """The chunks of document `name` in ordinal order."""
        return listing(
            self._calls,
            self._stub.ListChunks,
            lambda token: build(
                pb.ListChunksRequest, {**filters, "parent": name, "page_size": page_size, "page_token": token}
            ),
            "chunks",
            timeout,
        )

    def get_chunk(self, name: str, *, timeout: Optional[float] = None) -> document_pb2.Chunk:
        """The chunk `documents/{id}/chunks/{n}`."""
        return self._calls.unary(self._stub.GetChunk, pb.GetChunkRequest(name=name), timeout).chunk
