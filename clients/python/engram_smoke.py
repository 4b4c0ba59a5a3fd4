#!/usr/bin/python3
"""Engram polyglot smoke test: a plain Python gRPC client, generated from proto/, against a running stack.

It creates a session, appends messages, ingests a document, searches for it and builds a context,
asserting on every answer; it exits 0 and prints a final `engram_smoke: OK {json}` line when all
checks pass, and exits 1 with `engram_smoke: FAIL ...` (and the ErrorInfo reason of a failed
call) otherwise.

    bash scripts/ensure-python.sh              # Debian: protoc, grpc plugin, grpcio, protobuf
    bash clients/python/generate.sh /tmp/engram-py
    ENGRAM_ADDR=127.0.0.1:50051 ENGRAM_TOKEN=$(npm run -s token) \
      PYTHONPATH=/tmp/engram-py /usr/bin/python3 clients/python/engram_smoke.py

Environment:
    ENGRAM_ADDR     host:port of the server (plaintext HTTP/2), default 127.0.0.1:50051; an
                    http:// prefix is accepted and dropped.
    ENGRAM_TOKEN    bearer JWT (required), e.g. from `npm run -s token -- --user alice`.
    ENGRAM_DEADLINE per-call deadline in seconds, default 30.

Every call goes through `call()`, which retries a call the server refused for now: RESOURCE_EXHAUSTED
with a google.rpc.RetryInfo (OVERLOADED: the process is at its limit; RATE_LIMITED: the caller is),
and UNAVAILABLE the server answered itself (an ErrorInfo: SHUTTING_DOWN, DEPENDENCY_UNAVAILABLE),
after the RetryInfo delay (else 0.1 s doubled per attempt) plus up to 20 % jitter, at most 4
attempts in all, never waiting past the call's deadline (docs/decisions/0033-process-admission.md).
"""

import itertools
import json
import os
import random
import sys
import time
import uuid

try:
    import grpc
    from google.rpc import error_details_pb2, status_pb2
    from engram.context.v1 import context_pb2, context_service_pb2, context_service_pb2_grpc
    from engram.ingestion.v1 import (
        document_pb2,
        ingestion_service_pb2,
        ingestion_service_pb2_grpc,
        session_pb2,
    )
    from engram.retrieval.v1 import retrieval_service_pb2, retrieval_service_pb2_grpc
except ImportError as error:  # pragma: no cover - reported, not tested
    sys.stderr.write(
        f"engram_smoke: FAIL cannot import the generated client or grpcio ({error}).\n"
        "Run 'bash scripts/ensure-python.sh', then 'bash clients/python/generate.sh DIR' and set "
        "PYTHONPATH=DIR; use /usr/bin/python3.\n"
    )
    sys.exit(1)


class CheckFailed(Exception):
    """An answer did not say what it should."""


def check(condition, message):
    if not condition:
        raise CheckFailed(message)


def status_detail(error, message_class):
    """The first detail of type `message_class` in the `grpc-status-details-bin` trailer of a failed call."""
    for key, value in error.trailing_metadata() or ():
        if key != "grpc-status-details-bin":
            continue
        for detail in status_pb2.Status.FromString(value).details:
            message = message_class()
            if detail.Unpack(message):
                return message
    return None


def error_info(error):
    """The google.rpc.ErrorInfo of a failed call, or None."""
    return status_detail(error, error_details_pb2.ErrorInfo)


def retry_info_delay(error):
    """The google.rpc.RetryInfo delay of a failed call in seconds, or None."""
    info = status_detail(error, error_details_pb2.RetryInfo)
    return None if info is None else info.retry_delay.seconds + info.retry_delay.nanos / 1e9


class RetryPolicy:
    """How `call()` retries; the same policy as the engram CLI (apps/cli/src/retry.ts)."""

    def __init__(self, max_attempts=4, base_delay=0.1, max_delay=10.0, jitter=0.2):
        self.max_attempts = max_attempts
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.jitter = jitter


DEFAULT_RETRY = RetryPolicy()


def retry_delay(error, attempt, remaining, policy=DEFAULT_RETRY, rand=random.random):
    """Seconds to wait before attempt `attempt + 1` after `error` ended attempt `attempt`, or None.

    RESOURCE_EXHAUSTED is retried only with a RetryInfo (without one, e.g. MESSAGE_TOO_LARGE or
    QUOTA_EXCEEDED, retrying cannot help); UNAVAILABLE only when the server answered it (an
    ErrorInfo), after its RetryInfo or exponential backoff: a transport failure is reported at
    once. The server's delay is a minimum (jitter only adds), and no retry outlasts `remaining`.
    """
    if attempt >= policy.max_attempts:
        return None
    hinted = retry_info_delay(error)
    delay = None
    if error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED:
        delay = hinted
    elif error.code() == grpc.StatusCode.UNAVAILABLE and error_info(error) is not None:
        delay = hinted if hinted is not None else policy.base_delay * 2 ** (attempt - 1)
    if delay is None or delay > policy.max_delay:
        return None
    delay += delay * policy.jitter * rand()
    if remaining is not None and delay >= remaining:
        return None
    return delay


def call(method, request, *, timeout, metadata=None, policy=DEFAULT_RETRY, sleep=time.sleep, clock=time.monotonic):
    """Calls a unary `method` with `timeout` seconds in all, retrying per `retry_delay`."""
    started = clock()
    for attempt in itertools.count(1):
        remaining = timeout - (clock() - started)
        try:
            return method(request, metadata=metadata, timeout=max(remaining, 0.001))
        except grpc.RpcError as error:
            delay = retry_delay(error, attempt, timeout - (clock() - started), policy)
            if delay is None:
                raise
            sleep(delay)


def describe(error):
    info = error_info(error)
    reason = f" reason={info.reason} domain={info.domain} metadata={dict(info.metadata)}" if info else ""
    return f"{error.code().name}: {error.details()}{reason}"


def main():
    addr = os.environ.get("ENGRAM_ADDR", "127.0.0.1:50051").strip()
    for prefix in ("http://", "grpc://"):
        if addr.startswith(prefix):
            addr = addr[len(prefix):]
    addr = addr.rstrip("/")
    token = os.environ.get("ENGRAM_TOKEN", "").strip()
    if not token:
        raise CheckFailed("ENGRAM_TOKEN is not set (mint one with `npm run -s token`)")
    deadline = float(os.environ.get("ENGRAM_DEADLINE", "30"))
    auth = (("authorization", f"Bearer {token}"),)
    run_id = uuid.uuid4().hex[:12]
    started = time.monotonic()

    def step(name):
        print(f"[{time.monotonic() - started:6.2f}s] {name}", flush=True)

    with grpc.insecure_channel(addr) as channel:
        grpc.channel_ready_future(channel).result(timeout=deadline)
        ingestion = ingestion_service_pb2_grpc.IngestionServiceStub(channel)
        retrieval = retrieval_service_pb2_grpc.RetrievalServiceStub(channel)
        context = context_service_pb2_grpc.ContextServiceStub(channel)

        # Errors carry google.rpc.ErrorInfo: a call without the token is refused with TOKEN_MISSING.
        step("CreateSession without a token is refused")
        try:
            call(ingestion.CreateSession, ingestion_service_pb2.CreateSessionRequest(), timeout=deadline)
            raise CheckFailed("CreateSession without a token succeeded")
        except grpc.RpcError as error:
            info = error_info(error)
            check(error.code() == grpc.StatusCode.UNAUTHENTICATED, f"expected UNAUTHENTICATED, got {describe(error)}")
            check(info is not None and info.reason == "TOKEN_MISSING", f"expected TOKEN_MISSING, got {describe(error)}")

        step("CreateSession")
        session = call(
            ingestion.CreateSession,
            ingestion_service_pb2.CreateSessionRequest(
                session=session_pb2.Session(display_name=f"python smoke {run_id}", language_code="en"),
                request_id=f"py-smoke-session-{run_id}",
            ),
            metadata=auth,
            timeout=deadline,
        ).session
        check(session.name.startswith("sessions/"), f"unexpected session name {session.name!r}")

        step("AppendMessages")
        turns = [
            (session_pb2.MESSAGE_ROLE_USER, "I am planning the team offsite in Lisbon next spring."),
            (session_pb2.MESSAGE_ROLE_ASSISTANT, "Lisbon in spring sounds great. How many people are coming?"),
            (session_pb2.MESSAGE_ROLE_USER, "Twelve people, and we need a quiet room for workshops."),
        ]
        appended = call(
            ingestion.AppendMessages,
            ingestion_service_pb2.AppendMessagesRequest(
                parent=session.name,
                messages=[session_pb2.Message(role=role, content=content) for role, content in turns],
                request_id=f"py-smoke-append-{run_id}",
            ),
            metadata=auth,
            timeout=deadline,
        )
        check(len(appended.messages) == len(turns), f"appended {len(appended.messages)} of {len(turns)} messages")
        sequences = [m.sequence for m in appended.messages]
        check(sequences == sorted(sequences) and len(set(sequences)) == len(turns), f"sequences {sequences}")
        check(appended.session.message_count >= len(turns), f"session counts {appended.session.message_count} messages")

        step("IngestDocument (wait_for_index)")
        marker = f"heliotrope{run_id}"
        markdown = (
            "# Offsite venue guide\n\n"
            f"The Lisbon offsite venue code is {marker}. The venue has a quiet workshop room for "
            "twelve people, a rooftop terrace and vegetarian catering.\n"
        )
        ingested = call(
            ingestion.IngestDocument,
            ingestion_service_pb2.IngestDocumentRequest(
                document=document_pb2.Document(
                    display_name=f"venue-guide-{run_id}.md",
                    mime_type="text/markdown",
                ),
                content=markdown.encode("utf-8"),
                request_id=f"py-smoke-ingest-{run_id}",
                wait_for_index=True,
            ),
            metadata=auth,
            timeout=deadline,
        )
        document = ingested.document
        check(document.name.startswith("documents/"), f"unexpected document name {document.name!r}")
        check(document.state == document_pb2.DOCUMENT_STATE_READY, f"document state {document.state}")
        check(document.chunk_count >= 1, f"document has {document.chunk_count} chunks")
        check(ingested.index_complete, "IngestDocument(wait_for_index) returned before the index was complete")

        step("Search")
        found = call(
            retrieval.Search,
            retrieval_service_pb2.SearchRequest(query=f"Lisbon offsite venue code {marker}", top_k=5),
            metadata=auth,
            timeout=deadline,
        )
        hits = [r for r in found.results if r.WhichOneof("item") == "chunk" and r.document.name == document.name]
        check(hits, f"search did not find a chunk of {document.name}: {[r.name for r in found.results]}")
        check(marker in hits[0].chunk.text, f"the hit's text lacks the marker: {hits[0].chunk.text!r}")

        step("BuildContext")
        question = "Which venue code did we note for the Lisbon offsite?"
        built = call(
            context.BuildContext,
            context_service_pb2.BuildContextRequest(
                session=session.name,
                user_message=question,
                model="gpt-4o",
                budget=context_pb2.TokenBudget(total_tokens=2000),
                include_trace=True,
            ),
            metadata=auth,
            timeout=deadline,
        )
        check(built.messages, "the context has no messages")
        last = built.messages[-1]
        check(last.role == context_pb2.CHAT_ROLE_USER, f"the last message's role is {last.role}")
        check(last.content == question, f"the last message is {last.content!r}, not the user message")
        check(len(built.message_tokens) == len(built.messages), "message_tokens does not match messages")
        check(0 < built.total_tokens <= built.budget_tokens, f"{built.total_tokens} tokens for a budget of {built.budget_tokens}")
        rendered = "\n".join(m.content for m in built.messages)
        check("Twelve people" in rendered, "the context lacks the session's recent turns")
        check(marker in rendered, "the context lacks the ingested document's chunk (retrieved knowledge)")
        layers = {context_pb2.ContextLayer.Name(l.layer): l.used_tokens for l in built.layers}

    summary = {
        "session": session.name,
        "messagesAppended": len(appended.messages),
        "document": document.name,
        "chunks": document.chunk_count,
        "searchHits": len(hits),
        "contextMessages": len(built.messages),
        "contextTokens": built.total_tokens,
        "budgetTokens": built.budget_tokens,
        "layers": layers,
    }
    print("engram_smoke: OK " + json.dumps(summary, sort_keys=True), flush=True)


if __name__ == "__main__":
    try:
        main()
    except CheckFailed as failure:
        print(f"engram_smoke: FAIL {failure}", file=sys.stderr, flush=True)
        sys.exit(1)
    except grpc.RpcError as error:
        print(f"engram_smoke: FAIL call failed: {describe(error)}", file=sys.stderr, flush=True)
        sys.exit(1)
    except grpc.FutureTimeoutError:
        print("engram_smoke: FAIL could not connect to ENGRAM_ADDR within ENGRAM_DEADLINE", file=sys.stderr, flush=True)
        sys.exit(1)
