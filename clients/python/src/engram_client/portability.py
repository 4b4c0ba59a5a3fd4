"""`engram.portability`: a user's whole memory out as the Engram export format, and back in."""

from __future__ import annotations

from typing import Iterable, Iterator, Optional, Sequence, Union

from engram.governance.v1 import governance_service_pb2 as pb
from engram.governance.v1 import governance_service_pb2_grpc

from ._calls import Calls

#: Lines per ImportUser message: small enough for any server's message limit with ordinary records.
LINES_PER_MESSAGE = 200


class Portability:
    """Export and import (docs/export-format.md).

        with open("me.jsonl", "w", encoding="utf-8") as out:
            for line in engram.portability.export():
                out.write(line + "\\n")
        with open("me.jsonl", encoding="utf-8") as lines:
            print(engram.portability.import_lines(lines).created)

    The server checks an import whole (format, every record, the trailer's checksum) and writes
    it in one transaction; importing what is already there changes nothing.
    """

    def __init__(self, calls: Calls, stub: governance_service_pb2_grpc.GovernanceServiceStub) -> None:
        self._calls = calls
        self._stub = stub

    def export(self, *, timeout: Optional[float] = None) -> Iterator[str]:
        """Every line of the caller's export, in order, without line breaks."""
        responses = self._calls.stream(
            self._stub.ExportUser, pb.ExportUserRequest, timeout, None, replayable=True
        )
        for response in responses:
            yield from response.lines

    def import_lines(
        self,
        lines: Union[str, Iterable[str]],
        *,
        subject: str = "",
        validate_only: bool = False,
        timeout: Optional[float] = None,
    ) -> pb.ImportUserResponse:
        """Imports an export: the whole file as one string, or its lines (an open file works).

        `subject` imports for another user of the tenant (needs the admin role); `validate_only`
        checks everything and reports what would be written without writing.
        """
        text_lines: Sequence[str] = (
            lines.split("\n") if isinstance(lines, str) else [line.rstrip("\r\n") for line in lines]
        )

        def requests() -> Iterator[pb.ImportUserRequest]:
            yield pb.ImportUserRequest(
                subject=subject, validate_only=validate_only, lines=text_lines[:LINES_PER_MESSAGE]
            )
            for start in range(LINES_PER_MESSAGE, len(text_lines), LINES_PER_MESSAGE):
                yield pb.ImportUserRequest(lines=text_lines[start : start + LINES_PER_MESSAGE])

        return self._calls.client_stream(self._stub.ImportUser, requests, timeout)
