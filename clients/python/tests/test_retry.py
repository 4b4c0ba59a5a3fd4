"""The retry rule alone, and the SDK's retries against a real gRPC server on a loopback socket
that refuses the first calls the way an Engram process at its admission limit does
(RESOURCE_EXHAUSTED `OVERLOADED` / `RATE_LIMITED` with a google.rpc.RetryInfo)."""

import io
import socket
import threading
from concurrent import futures

import grpc
import pytest
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2

from engram.ingestion.v1 import ingestion_service_pb2, ingestion_service_pb2_grpc, session_pb2
from engram.retrieval.v1 import retrieval_service_pb2, retrieval_service_pb2_grpc
from engram_client import DEFAULT_RETRY, Engram, EngramError, RetryPolicy, retry_delay

RESOURCE_EXHAUSTED = 8
UNAVAILABLE = 14


def status_details(code, reason, retry_seconds=None):
    """The grpc-status-details-bin value of a refusal: ErrorInfo and optionally RetryInfo."""
    status = status_pb2.Status(code=code, message="refused")
    info = any_pb2.Any()
    info.Pack(error_details_pb2.ErrorInfo(reason=reason, domain="engram.retrieval", metadata={"limit": "1"}))
    status.details.append(info)
    if retry_seconds is not None:
        retry = error_details_pb2.RetryInfo()
        retry.retry_delay.seconds = int(retry_seconds)
        retry.retry_delay.nanos = int(round((retry_seconds - int(retry_seconds)) * 1e9))
        packed = any_pb2.Any()
        packed.Pack(retry)
        status.details.append(packed)
    return status.SerializeToString()


class FakeError(grpc.RpcError):
    """A failed call as grpcio reports it: a code and trailing metadata."""

    def __init__(self, code, details=None):
        super().__init__()
        self._code = code
        self._trailers = () if details is None else (("grpc-status-details-bin", details),)

    def code(self):
        return self._code

    def trailing_metadata(self):
        return self._trailers

    def details(self):
        return "refused"


def no_jitter():
    return 0.0


class TestRetryDelay:
    def test_waits_the_retry_info_delay_of_a_refusal(self):
        error = FakeError(
            grpc.StatusCode.RESOURCE_EXHAUSTED, status_details(RESOURCE_EXHAUSTED, "OVERLOADED", 0.12)
        )
        assert retry_delay(error, 1, None, rand=no_jitter) == pytest.approx(0.12)

    def test_jitter_only_adds_to_the_server_delay(self):
        error = FakeError(
            grpc.StatusCode.RESOURCE_EXHAUSTED, status_details(RESOURCE_EXHAUSTED, "RATE_LIMITED", 1.0)
        )
        assert retry_delay(error, 1, None, rand=lambda: 0.5) == pytest.approx(1.1)
        assert retry_delay(error, 1, None, rand=lambda: 0.999) <= 1.2

    def test_never_retries_resource_exhausted_without_retry_info(self):
        error = FakeError(
            grpc.StatusCode.RESOURCE_EXHAUSTED, status_details(RESOURCE_EXHAUSTED, "MESSAGE_TOO_LARGE")
        )
        assert retry_delay(error, 1, None) is None

    def test_backs_off_on_answered_unavailable_not_on_a_transport_failure(self):
        answered = FakeError(grpc.StatusCode.UNAVAILABLE, status_details(UNAVAILABLE, "SHUTTING_DOWN"))
        delays = [retry_delay(answered, a, None, rand=no_jitter) for a in (1, 2, 3)]
        assert delays == pytest.approx([0.1, 0.2, 0.4])
        assert retry_delay(FakeError(grpc.StatusCode.UNAVAILABLE), 1, None) is None

    def test_never_retries_other_codes(self):
        for code in (
            grpc.StatusCode.INVALID_ARGUMENT,
            grpc.StatusCode.UNAUTHENTICATED,
            grpc.StatusCode.INTERNAL,
        ):
            error = FakeError(code, status_details(RESOURCE_EXHAUSTED, "X", 0.1))
            assert retry_delay(error, 1, None) is None

    def test_stops_after_max_attempts_too_long_delays_and_the_deadline(self):
        error = FakeError(
            grpc.StatusCode.RESOURCE_EXHAUSTED, status_details(RESOURCE_EXHAUSTED, "OVERLOADED", 0.2)
        )
        assert DEFAULT_RETRY.max_attempts == 4
        assert retry_delay(error, DEFAULT_RETRY.max_attempts, None) is None
        assert retry_delay(error, 1, 0.15, rand=no_jitter) is None
        slow = FakeError(
            grpc.StatusCode.RESOURCE_EXHAUSTED, status_details(RESOURCE_EXHAUSTED, "RATE_LIMITED", 60)
        )
        assert retry_delay(slow, 1, None) is None

    def test_the_error_carries_reason_metadata_and_retry_delay(self):
        error = EngramError.from_rpc_error(
            FakeError(
                grpc.StatusCode.RESOURCE_EXHAUSTED, status_details(RESOURCE_EXHAUSTED, "OVERLOADED", 0.25)
            )
        )
        assert (error.code, error.reason, error.domain) == (
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            "OVERLOADED",
            "engram.retrieval",
        )
        assert error.metadata == {"limit": "1"}
        assert error.retry_delay == pytest.approx(0.25)
        assert error.details == "refused"


class Refusing(
    retrieval_service_pb2_grpc.RetrievalServiceServicer, ingestion_service_pb2_grpc.IngestionServiceServicer
):
    """Refuses the first `refusals` calls with `reason` and a RetryInfo, then answers; records requests."""

    def __init__(self, refusals, retry_seconds, reason="OVERLOADED"):
        self.refusals = refusals
        self.retry_seconds = retry_seconds
        self.reason = reason
        self.requests = []
        self.authorization = []
        self.lock = threading.Lock()

    def _refuse_now(self, request, context):
        with self.lock:
            self.requests.append(request)
            self.authorization.append(dict(context.invocation_metadata()).get("authorization"))
            refuse = len(self.requests) <= self.refusals
        if refuse:
            context.set_trailing_metadata(
                (
                    (
                        "grpc-status-details-bin",
                        status_details(RESOURCE_EXHAUSTED, self.reason, self.retry_seconds),
                    ),
                )
            )
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "refused for now")

    def Search(self, request, context):
        self._refuse_now(request, context)
        return retrieval_service_pb2.SearchResponse()

    def CreateSession(self, request, context):
        self._refuse_now(request, context)
        return ingestion_service_pb2.CreateSessionResponse(session=session_pb2.Session(name="sessions/1"))

    def StreamIngestDocument(self, request_iterator, context):
        header = next(request_iterator).header
        self._refuse_now(header, context)
        received = sum(len(r.part.data) for r in request_iterator)
        yield ingestion_service_pb2.StreamIngestDocumentResponse(
            progress=ingestion_service_pb2.IngestProgress(
                phase=ingestion_service_pb2.INGEST_PHASE_RECEIVING, bytes_received=received
            )
        )
        yield ingestion_service_pb2.StreamIngestDocumentResponse(
            result=ingestion_service_pb2.IngestDocumentResponse(chunks_written=1)
        )


@pytest.fixture
def serve():
    """Starts a Refusing servicer on 127.0.0.1 and returns (servicer, address); stopped after the test."""
    servers = []

    def start(servicer):
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        retrieval_service_pb2_grpc.add_RetrievalServiceServicer_to_server(servicer, server)
        ingestion_service_pb2_grpc.add_IngestionServiceServicer_to_server(servicer, server)
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        servers.append(server)
        return servicer, f"127.0.0.1:{port}"

    yield start
    for server in servers:
        server.stop(None)


class Sleeps:
    """A recording `sleep` that does not wait."""

    def __init__(self):
        self.waits = []

    def __call__(self, seconds):
        self.waits.append(seconds)


class TestRetriesAgainstARealServer:
    def test_retries_after_the_server_delay_and_returns_the_answer(self, serve):
        servicer, address = serve(Refusing(refusals=2, retry_seconds=0.05))
        sleeps = Sleeps()
        with Engram(address, token="t", sleep=sleeps) as engram:
            answer = engram.search("q")
        assert isinstance(answer, retrieval_service_pb2.SearchResponse)
        assert len(servicer.requests) == 3
        assert len(sleeps.waits) == 2
        for seconds in sleeps.waits:  # at least the server's delay, at most 20 % more
            assert 0.05 <= seconds <= 0.05 * 1.2 + 1e-9

    def test_gives_up_with_the_refusal_after_max_attempts(self, serve):
        servicer, address = serve(Refusing(refusals=100, retry_seconds=0.01))
        with Engram(address, token="t", sleep=Sleeps()) as engram:
            with pytest.raises(EngramError) as raised:
                engram.search("q")
        assert raised.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert raised.value.reason == "OVERLOADED"
        assert raised.value.retry_delay == pytest.approx(0.01)
        assert len(servicer.requests) == DEFAULT_RETRY.max_attempts

    def test_does_not_retry_past_the_deadline(self, serve):
        servicer, address = serve(Refusing(refusals=100, retry_seconds=5))
        with Engram(address, token="t", sleep=Sleeps()) as engram:
            with pytest.raises(EngramError):
                engram.search("q", timeout=2)
        assert len(servicer.requests) == 1

    def test_a_custom_policy_and_no_retry(self, serve):
        servicer, address = serve(Refusing(refusals=100, retry_seconds=0.01))
        with Engram(address, token="t", sleep=Sleeps(), retry=RetryPolicy(max_attempts=2)) as engram:
            with pytest.raises(EngramError):
                engram.search("q")
        assert len(servicer.requests) == 2
        with Engram(address, token="t", retry=None) as engram:
            with pytest.raises(EngramError):
                engram.search("q")
        assert len(servicer.requests) == 3

    def test_sends_the_same_generated_request_id_on_every_attempt(self, serve):
        servicer, address = serve(Refusing(refusals=2, retry_seconds=0.01, reason="RATE_LIMITED"))
        with Engram(address, token="t", sleep=Sleeps()) as engram:
            assert engram.sessions.create().name == "sessions/1"
            ids = [r.request_id for r in servicer.requests]
            assert len(ids) == 3 and ids[0] and len(set(ids)) == 1
            engram.sessions.create(request_id="mine-1")
            assert servicer.requests[-1].request_id == "mine-1"

    def test_retries_a_refused_upload_of_bytes_with_the_same_request_id(self, serve):
        servicer, address = serve(Refusing(refusals=1, retry_seconds=0.01, reason="RATE_LIMITED"))
        progress = []
        with Engram(address, token="t", sleep=Sleeps()) as engram:
            result = engram.documents.ingest(b"x" * 1000, part_size=100, on_progress=progress.append)
        assert result.chunks_written == 1
        headers = servicer.requests
        assert len(headers) == 2 and headers[0].request_id and headers[0].request_id == headers[1].request_id
        assert headers[0].expected_size_bytes == 1000
        assert [p.bytes_received for p in progress] == [1000]

    def test_never_retries_an_upload_from_a_file_object(self, serve):
        servicer, address = serve(Refusing(refusals=1, retry_seconds=0.01, reason="RATE_LIMITED"))
        with Engram(address, token="t", sleep=Sleeps()) as engram:
            with pytest.raises(EngramError) as raised:
                engram.documents.ingest(io.BytesIO(b"content"))
        assert raised.value.reason == "RATE_LIMITED"
        assert len(servicer.requests) == 1

    def test_a_transport_failure_is_reported_at_once(self):
        with socket.socket() as probe:  # a port nobody listens on
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        sleeps = Sleeps()
        with Engram(f"127.0.0.1:{port}", token="t", sleep=sleeps, timeout=5) as engram:
            with pytest.raises(EngramError) as raised:
                engram.search("q")
        assert raised.value.code == grpc.StatusCode.UNAVAILABLE
        assert raised.value.reason is None
        assert sleeps.waits == []


class TestAuthorization:
    def test_sends_the_token_as_a_bearer_header_on_every_attempt(self, serve):
        servicer, address = serve(Refusing(refusals=1, retry_seconds=0.01))
        tokens = iter(["first", "second"])
        with Engram(address, token_provider=lambda: next(tokens), sleep=Sleeps()) as engram:
            engram.search("q")
        assert servicer.authorization == ["Bearer first", "Bearer second"]

    def test_a_failing_token_provider_is_unauthenticated_and_sends_nothing(self, serve):
        servicer, address = serve(Refusing(refusals=0, retry_seconds=0.01))

        def provider():
            raise RuntimeError("identity provider down")

        with Engram(address, token_provider=provider) as engram:
            with pytest.raises(EngramError) as raised:
                engram.search("q")
        assert raised.value.code == grpc.StatusCode.UNAUTHENTICATED
        assert raised.value.reason is None
        assert "identity provider down" in raised.value.details
        assert servicer.requests == []

    def test_token_and_token_provider_exclude_each_other(self):
        with pytest.raises(EngramError) as raised:
            Engram("127.0.0.1:1", token="t", token_provider=lambda: "t")
        assert raised.value.code == grpc.StatusCode.INVALID_ARGUMENT
