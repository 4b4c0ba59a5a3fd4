#!/usr/bin/python3
"""Tests of the smoke client's retry policy: the policy alone, and `call()` against a real gRPC
server on a loopback socket that refuses the first calls with RESOURCE_EXHAUSTED `OVERLOADED` and
a google.rpc.RetryInfo, the way an Engram process at its admission limit does.

    bash clients/python/generate.sh /tmp/engram-py
    PYTHONPATH=/tmp/engram-py:clients/python /usr/bin/python3 -m unittest clients/python/test_engram_smoke.py

Run by services/all-in-one/test/python-client.int.spec.ts.
"""

import threading
import unittest
from concurrent import futures

import grpc
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2

import engram_smoke
from engram.retrieval.v1 import retrieval_service_pb2, retrieval_service_pb2_grpc

RESOURCE_EXHAUSTED = 8
UNAVAILABLE = 14


def status_details(code, reason, retry_seconds=None):
    """The grpc-status-details-bin value of a refusal: ErrorInfo and optionally RetryInfo."""
    status = status_pb2.Status(code=code, message="refused")
    info = any_pb2.Any()
    info.Pack(error_details_pb2.ErrorInfo(reason=reason, domain="engram.retrieval"))
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


class RetryDelayTest(unittest.TestCase):
    def test_waits_the_retry_info_delay_of_a_refusal(self):
        error = FakeError(grpc.StatusCode.RESOURCE_EXHAUSTED, status_details(RESOURCE_EXHAUSTED, "OVERLOADED", 0.12))
        self.assertAlmostEqual(engram_smoke.retry_delay(error, 1, None, rand=no_jitter), 0.12)

    def test_jitter_only_adds_to_the_server_delay(self):
        error = FakeError(grpc.StatusCode.RESOURCE_EXHAUSTED, status_details(RESOURCE_EXHAUSTED, "RATE_LIMITED", 1.0))
        self.assertAlmostEqual(engram_smoke.retry_delay(error, 1, None, rand=lambda: 0.5), 1.1)

    def test_never_retries_resource_exhausted_without_retry_info(self):
        error = FakeError(grpc.StatusCode.RESOURCE_EXHAUSTED, status_details(RESOURCE_EXHAUSTED, "MESSAGE_TOO_LARGE"))
        self.assertIsNone(engram_smoke.retry_delay(error, 1, None))

    def test_backs_off_on_answered_unavailable_not_on_a_transport_failure(self):
        answered = FakeError(grpc.StatusCode.UNAVAILABLE, status_details(UNAVAILABLE, "SHUTTING_DOWN"))
        delays = [engram_smoke.retry_delay(answered, a, None, rand=no_jitter) for a in (1, 2, 3)]
        for got, expected in zip(delays, [0.1, 0.2, 0.4]):
            self.assertAlmostEqual(got, expected)
        self.assertIsNone(engram_smoke.retry_delay(FakeError(grpc.StatusCode.UNAVAILABLE), 1, None))

    def test_never_retries_other_codes(self):
        for code in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.INTERNAL):
            error = FakeError(code, status_details(RESOURCE_EXHAUSTED, "X", 0.1))
            self.assertIsNone(engram_smoke.retry_delay(error, 1, None))

    def test_stops_after_max_attempts_too_long_delays_and_the_deadline(self):
        error = FakeError(grpc.StatusCode.RESOURCE_EXHAUSTED, status_details(RESOURCE_EXHAUSTED, "OVERLOADED", 0.2))
        self.assertIsNone(engram_smoke.retry_delay(error, engram_smoke.DEFAULT_RETRY.max_attempts, None))
        self.assertIsNone(engram_smoke.retry_delay(error, 1, 0.15, rand=no_jitter))
        slow = FakeError(grpc.StatusCode.RESOURCE_EXHAUSTED, status_details(RESOURCE_EXHAUSTED, "RATE_LIMITED", 60))
        self.assertIsNone(engram_smoke.retry_delay(slow, 1, None))


class Refusing(retrieval_service_pb2_grpc.RetrievalServiceServicer):
    """Refuses the first `refusals` Searches with OVERLOADED and a RetryInfo, then answers."""

    def __init__(self, refusals, retry_seconds):
        self.refusals = refusals
        self.retry_seconds = retry_seconds
        self.calls = 0
        self.lock = threading.Lock()

    def Search(self, request, context):
        with self.lock:
            self.calls += 1
            refuse = self.calls <= self.refusals
        if refuse:
            context.set_trailing_metadata(
                (("grpc-status-details-bin", status_details(RESOURCE_EXHAUSTED, "OVERLOADED", self.retry_seconds)),)
            )
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "the server is overloaded")
        return retrieval_service_pb2.SearchResponse()


class CallAgainstARealServerTest(unittest.TestCase):
    def serve(self, servicer):
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        retrieval_service_pb2_grpc.add_RetrievalServiceServicer_to_server(servicer, server)
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        self.addCleanup(server.stop, None)
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        self.addCleanup(channel.close)
        return retrieval_service_pb2_grpc.RetrievalServiceStub(channel)

    def test_retries_after_the_server_delay_and_returns_the_answer(self):
        servicer = Refusing(refusals=2, retry_seconds=0.05)
        stub = self.serve(servicer)
        slept = []

        def sleep(seconds):
            slept.append(seconds)

        answer = engram_smoke.call(
            stub.Search, retrieval_service_pb2.SearchRequest(query="q"), timeout=10, sleep=sleep
        )
        self.assertIsInstance(answer, retrieval_service_pb2.SearchResponse)
        self.assertEqual(servicer.calls, 3)
        self.assertEqual(len(slept), 2)
        # Each wait is at least the server's delay and at most 20 % more.
        for seconds in slept:
            self.assertGreaterEqual(seconds, 0.05)
            self.assertLessEqual(seconds, 0.05 * 1.2 + 1e-9)

    def test_gives_up_with_the_refusal_after_max_attempts(self):
        servicer = Refusing(refusals=100, retry_seconds=0.01)
        stub = self.serve(servicer)
        with self.assertRaises(grpc.RpcError) as raised:
            engram_smoke.call(
                stub.Search, retrieval_service_pb2.SearchRequest(query="q"), timeout=10, sleep=lambda s: None
            )
        self.assertEqual(raised.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
        self.assertEqual(engram_smoke.error_info(raised.exception).reason, "OVERLOADED")
        self.assertEqual(servicer.calls, engram_smoke.DEFAULT_RETRY.max_attempts)

    def test_does_not_retry_past_the_deadline(self):
        servicer = Refusing(refusals=100, retry_seconds=5)
        stub = self.serve(servicer)
        with self.assertRaises(grpc.RpcError):
            engram_smoke.call(
                stub.Search, retrieval_service_pb2.SearchRequest(query="q"), timeout=2, sleep=lambda s: None
            )
        self.assertEqual(servicer.calls, 1)


if __name__ == "__main__":
    unittest.main()
