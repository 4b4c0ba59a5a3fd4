"""engram-client against a real Engram server (see conftest.py for the environment)."""

import io
import os
import time

import grpc
import pytest

from engram.context.v1 import context_pb2, context_service_pb2
from engram.governance.v1 import memory_pb2
from engram.ingestion.v1 import document_pb2, ingestion_service_pb2, session_pb2
from engram_client import Engram, EngramError, Pages


def eventually(probe, what, timeout=15.0):
    """`probe()`'s first truthy answer, polled until `timeout`: the index lags acknowledged writes."""
    deadline = time.monotonic() + timeout
    while True:
        answer = probe()
        if answer:
            return answer
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} within {timeout} s")
        time.sleep(0.2)


def fact(run_id, index, text):
    return {
        "type": "MEMORY_TYPE_FACT",
        "namespace": f"sdk_{run_id}",
        "key": f"item_{index}",
        "value": {"index": index},
        "text": text,
    }


class TestSessions:
    def test_appends_messages_and_lists_them_across_pages_in_order(self, engram, run_id):
        session = engram.sessions.create(display_name=f"sdk {run_id}", language_code="en")
        assert session.name.startswith("sessions/")
        assert session.status == session_pb2.SESSION_STATUS_ACTIVE

        appended = engram.sessions.append(
            session.name,
            [
                ("user", "I am planning the team offsite in Lisbon next spring."),
                {"role": "assistant", "content": "How many people are coming?"},
                session_pb2.Message(role=session_pb2.MESSAGE_ROLE_USER, content="Twelve people."),
                ("ASSISTANT", "Noted: twelve people."),
                ("user", "We need a quiet workshop room."),
            ],
        )
        assert [m.sequence for m in appended.messages] == [1, 2, 3, 4, 5]
        assert appended.session.message_count == 5

        listed = engram.sessions.messages(session.name, page_size=2)
        assert isinstance(listed, Pages)
        pages = list(listed.pages())
        assert [len(p.messages) for p in pages] == [2, 2, 1]
        assert pages[-1].next_page_token == ""
        messages = list(listed)
        assert [m.sequence for m in messages] == [1, 2, 3, 4, 5]
        assert messages[0].content.startswith("I am planning")
        assert messages[1].role == session_pb2.MESSAGE_ROLE_ASSISTANT
        assert engram.sessions.get(session.name).last_sequence == 5

    def test_a_caller_given_request_id_makes_an_append_idempotent(self, engram, run_id):
        session = engram.sessions.create()
        first = engram.sessions.append(session.name, [("user", "once")], request_id=f"append-{run_id}")
        again = engram.sessions.append(session.name, [("user", "once")], request_id=f"append-{run_id}")
        assert [m.name for m in again.messages] == [m.name for m in first.messages]
        assert engram.sessions.get(session.name).message_count == 1

    def test_lists_the_callers_sessions(self, engram, run_id):
        created = engram.sessions.create(external_id=f"ext-{run_id}")
        found = [s.name for s in engram.sessions.list(external_id=f"ext-{run_id}")]
        assert found == [created.name]


class TestMemories:
    def test_creates_reads_and_lists_memories_across_pages(self, engram, run_id):
        names = []
        for index in range(5):
            created = engram.memories.create(fact(run_id, index, f"Fact {index} of run {run_id}."))
            assert created.decision.outcome == memory_pb2.DECISION_OUTCOME_ACCEPTED
            names.append(created.memory.name)
        assert engram.memories.get(names[2]).text == f"Fact 2 of run {run_id}."

        listed = engram.memories.list(page_size=2, namespaces=[f"sdk_{run_id}"])
        pages = list(listed.pages())
        assert len(pages) == 3
        assert sorted(m.name for m in listed) == sorted(names)
        first = listed.first_page()
        assert len(first.memories) == 2 and first.next_page_token

    def test_search_finds_a_new_memory(self, engram, run_id):
        marker = f"zanzibar{run_id}"
        created = engram.memories.create(fact(run_id, 0, f"The user's favourite island code is {marker}."))

        def hit():
            found = engram.search(f"favourite island code {marker}", top_k=5)
            return [r for r in found.results if r.name == created.memory.name]

        results = eventually(hit, "search finds the memory")
        assert results[0].WhichOneof("item") == "memory"
        assert marker in results[0].memory.text

    def test_another_users_memory_is_not_found(self, engram, other, run_id):
        created = engram.memories.create(fact(run_id, 0, "Only mine."))
        with pytest.raises(EngramError) as raised:
            other.memories.get(created.memory.name)
        assert raised.value.code == grpc.StatusCode.NOT_FOUND
        assert raised.value.reason == "RESOURCE_NOT_FOUND"
        assert raised.value.domain == "engram.governance"


class TestContext:
    def test_builds_a_context_with_its_layers(self, engram, run_id):
        session = engram.sessions.create()
        engram.sessions.append(
            session.name,
            [
                ("user", "I am planning the team offsite in Lisbon."),
                ("assistant", "Lisbon it is: how many people?"),
            ],
        )
        question = "Which city is the offsite in?"
        built = engram.context.build(session.name, question, budget=2000, model="gpt-4o")
        assert isinstance(built, context_service_pb2.BuildContextResponse)
        assert built.messages[-1].role == context_pb2.CHAT_ROLE_USER
        assert built.messages[-1].content == question
        assert 0 < built.total_tokens <= built.budget_tokens == 2000
        layers = {context_pb2.ContextLayer.Name(layer.layer): layer for layer in built.layers}
        assert len(layers) == 9
        assert layers["CONTEXT_LAYER_RECENT_TURNS"].used_tokens > 0
        assert "Lisbon" in "\n".join(m.content for m in built.messages)


class TestDocuments:
    def test_streams_a_file_with_progress_then_search_finds_its_chunk(self, engram, run_id, tmp_path):
        marker = f"heliotrope{run_id}"
        path = tmp_path / f"venue-guide-{run_id}.md"
        path.write_text(
            "# Offsite venue guide\n\n"
            f"The Lisbon offsite venue code is {marker}. The venue has a quiet workshop room for "
            "twelve people, a rooftop terrace and vegetarian catering.\n\n"
            + "".join(f"## Room {n}\n\nRoom {n} seats {n + 4} people by the window.\n\n" for n in range(40)),
            encoding="utf-8",
        )
        progress = []
        ingested = engram.documents.ingest(
            path, on_progress=progress.append, wait_for_index=True, part_size=512
        )
        document = ingested.document
        assert document.name.startswith("documents/")
        assert document.mime_type == "text/markdown"
        assert document.display_name == path.name
        assert document.state == document_pb2.DOCUMENT_STATE_READY
        assert ingested.index_complete
        assert progress, "on_progress was never called"
        assert progress[0].phase == ingestion_service_pb2.INGEST_PHASE_RECEIVING
        assert progress[-1].expected_size_bytes == path.stat().st_size
        assert max(p.bytes_received for p in progress) <= path.stat().st_size
        assert [p.phase for p in progress] == sorted(p.phase for p in progress)

        found = engram.search(f"venue code {marker}", top_k=10)
        hits = [
            r for r in found.results if r.WhichOneof("item") == "chunk" and r.document.name == document.name
        ]
        assert hits, [(r.name, r.score) for r in found.results]
        assert marker in hits[0].chunk.text
        only_chunks = engram.search(
            marker, filter={"documents": [document.name], "kinds": ["ITEM_KIND_CHUNK"]}
        )
        assert only_chunks.results and all(r.document.name == document.name for r in only_chunks.results)
        assert marker in only_chunks.results[0].chunk.text
        chunks = list(engram.documents.chunks(document.name, page_size=1))
        assert len(chunks) == document.chunk_count >= 2
        assert engram.documents.get(document.name).chunk_count == document.chunk_count

    def test_ingests_bytes_and_file_objects(self, engram, run_id):
        from_bytes = engram.documents.ingest(
            f"Plain notes {run_id}.".encode(), display_name=f"notes-{run_id}"
        )
        assert from_bytes.document.mime_type == "text/plain"
        from_file = engram.documents.ingest(
            io.BytesIO(f"<p>Page {run_id}</p>".encode()), mime_type="text/html"
        )
        assert from_file.document.mime_type == "text/html"
        names = {d.name for d in engram.documents.list(page_size=1)}
        assert {from_bytes.document.name, from_file.document.name} <= names

    def test_an_unsupported_media_type_is_a_typed_error(self, engram):
        with pytest.raises(EngramError) as raised:
            engram.documents.ingest(b"{}", mime_type="application/json")
        assert raised.value.code == grpc.StatusCode.INVALID_ARGUMENT
        assert raised.value.reason == "MEDIA_TYPE_UNSUPPORTED"
        assert raised.value.request_id  # generated, so the caller could retry it as is


class TestErrors:
    def test_an_invalid_field_is_field_invalid_with_its_name(self, engram):
        with pytest.raises(EngramError) as raised:
            list(engram.memories.list(page_size=-1))
        error = raised.value
        assert error.code == grpc.StatusCode.INVALID_ARGUMENT
        assert error.reason == "FIELD_INVALID"
        assert "page_size" in error.metadata.get("field", "")
        assert "FIELD_INVALID" in str(error)

    def test_a_call_without_a_token_is_token_missing(self, address):
        with Engram(address) as anonymous:
            with pytest.raises(EngramError) as raised:
                anonymous.sessions.create()
        assert raised.value.code == grpc.StatusCode.UNAUTHENTICATED
        assert raised.value.reason == "TOKEN_MISSING"

    def test_the_token_provider_is_asked_on_every_call(self, address):
        asked = []

        def provider():
            asked.append(1)
            return os.environ["ENGRAM_TOKEN"]

        with Engram(address, token_provider=provider) as engram:
            engram.sessions.create()
            engram.sessions.create()
        assert len(asked) == 2

    def test_an_unknown_field_is_refused_before_any_call(self, engram):
        with pytest.raises(EngramError) as raised:
            engram.sessions.create(colour="blue")
        assert raised.value.code == grpc.StatusCode.INVALID_ARGUMENT
        assert raised.value.reason is None
        assert "colour" in raised.value.details

    def test_a_missing_file_is_refused_before_any_call(self, engram, tmp_path):
        with pytest.raises(EngramError) as raised:
            engram.documents.ingest(tmp_path / "absent.md")
        assert raised.value.code == grpc.StatusCode.INVALID_ARGUMENT
        assert "absent.md" in raised.value.details


class TestChat:
    def test_streams_the_models_reply_as_deltas_and_appends_it(self, engram, chat_reply):
        session = engram.sessions.create()
        answer = engram.chat(session.name, "Where is the offsite?", budget=2000)
        deltas = [delta.text for delta in answer]
        assert len(deltas) >= 2, "the reply arrived in one piece: expected a stream of deltas"
        assert "".join(deltas) == answer.text == answer.done.text == chat_reply
        assert answer.context is not None and answer.context.model
        assert answer.done.finish_reason == context_service_pb2.FINISH_REASON_STOP
        assert answer.request_id
        stored = list(engram.sessions.messages(session.name))
        assert [m.content for m in stored] == ["Where is the offsite?", chat_reply]

    def test_a_model_the_server_does_not_allow_is_field_invalid(self, engram):
        session = engram.sessions.create()
        with pytest.raises(EngramError) as raised:
            list(engram.chat(session.name, "Hello?", budget=2000, model="not-an-allowed-model"))
        assert raised.value.code == grpc.StatusCode.INVALID_ARGUMENT
        assert raised.value.reason == "FIELD_INVALID"
        assert raised.value.domain == "engram.context"


class TestLifecycles:
    def test_updates_deletes_and_restores_a_memory_with_its_revisions(self, engram, run_id):
        created = engram.memories.create(fact(run_id, 0, "First wording."))
        updated = engram.memories.update(
            {"name": created.memory.name, "text": "Second wording."}, ["text"], etag=created.memory.etag
        )
        assert updated.memory.text == "Second wording."
        deleted = engram.memories.delete(created.memory.name, reason="sdk test")
        assert deleted.status == memory_pb2.MEMORY_STATUS_DELETED
        restored = engram.memories.restore(created.memory.name)
        assert restored.memory.status == memory_pb2.MEMORY_STATUS_ACTIVE
        actions = [r.action for r in engram.memories.revisions(created.memory.name, page_size=1)]
        assert actions == [
            memory_pb2.REVISION_ACTION_CREATE,
            memory_pb2.REVISION_ACTION_UPDATE,
            memory_pb2.REVISION_ACTION_DELETE,
            memory_pb2.REVISION_ACTION_RESTORE,
        ]

    def test_flushes_and_closes_a_session_then_appends_fail(self, engram):
        session = engram.sessions.create()
        engram.sessions.append(session.name, [("user", "A first turn."), ("assistant", "A reply.")])
        flushed = engram.sessions.flush(session.name)
        assert flushed.mem_cell.name.startswith(f"{session.name}/memCells/")
        engram.sessions.close(session.name)
        assert engram.sessions.get(session.name).status == session_pb2.SESSION_STATUS_CLOSED
        with pytest.raises(EngramError) as raised:
            engram.sessions.append(session.name, [("user", "Too late.")])
        assert (raised.value.code, raised.value.reason) == (
            grpc.StatusCode.FAILED_PRECONDITION,
            "SESSION_CLOSED",
        )
        assert engram.sessions.delete(session.name).messages_deleted == 2

    def test_reads_a_chunk_and_deletes_a_document(self, engram, run_id):
        document = engram.documents.ingest(f"Chunk text {run_id}.".encode()).document
        [listed] = list(engram.documents.chunks(document.name))
        chunk = engram.documents.get_chunk(listed.name)
        assert chunk.name.startswith(f"{document.name}/chunks/") and run_id in chunk.text
        assert engram.documents.delete(document.name).chunks_deleted == document.chunk_count
        with pytest.raises(EngramError) as raised:
            engram.documents.get(document.name)
        assert raised.value.reason == "RESOURCE_NOT_FOUND"

    def test_reads_the_session_state(self, engram):
        session = engram.sessions.create()
        state = engram.context.state(session.name)
        assert state.name == f"{session.name}/state"
        assert state.compacted_through_sequence == 0


class TestWithoutAChatModel:
    def test_chat_is_model_not_configured(self, address_without_model):
        with Engram(address_without_model, token=os.environ["ENGRAM_TOKEN"]) as engram:
            session = engram.sessions.create()
            with pytest.raises(EngramError) as raised:
                for _ in engram.chat(session.name, "Hello?", budget=2000):
                    pass
        assert (raised.value.code, raised.value.reason) == (
            grpc.StatusCode.FAILED_PRECONDITION,
            "MODEL_NOT_CONFIGURED",
        )
        assert raised.value.request_id

    def test_compaction_runs_offline(self, address_without_model):
        with Engram(address_without_model, token=os.environ["ENGRAM_TOKEN"]) as engram:
            session = engram.sessions.create()
            engram.sessions.append(
                session.name, [("user", f"Turn {n} about the Lisbon trip.") for n in range(12)]
            )
            compacted = engram.context.compact(session.name, force=True)
        assert compacted.outcome == context_service_pb2.COMPACTION_OUTCOME_COMPACTED
        assert compacted.messages_compacted > 0
        assert compacted.session_state.compacted_through_sequence > 0


class TestPortability:
    def test_exports_the_format_and_reimporting_it_changes_nothing(self, engram, run_id):
        engram.memories.create(fact(run_id, 0, f"Portable fact of run {run_id}."))
        lines = list(engram.portability.export())
        assert '"format":"engram.export"' in lines[0]
        assert '"kind":"trailer"' in lines[-1]
        assert any(f"Portable fact of run {run_id}." in line for line in lines)

        again = engram.portability.import_lines("\n".join(lines) + "\n")
        assert sum(again.created.values()) == 0
        assert sum(again.unchanged.values()) == again.records == len(lines) - 2

    def test_a_damaged_export_is_refused_with_its_reason(self, engram, other, run_id):
        lines = list(engram.portability.export())
        lines[0] = lines[0].replace('"version":1', '"version":2')
        with pytest.raises(EngramError) as refused:
            other.portability.import_lines(lines, validate_only=True)
        assert refused.value.code == grpc.StatusCode.INVALID_ARGUMENT
        assert refused.value.reason == "IMPORT_FORMAT_UNSUPPORTED"
        assert refused.value.metadata["supported_version"] == "1"
