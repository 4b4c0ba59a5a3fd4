"""A tour of engram-client against a running Engram server.

    ENGRAM_ADDR=127.0.0.1:50051 ENGRAM_TOKEN=$(npm run -s token -- --user alice) python quickstart.py

It records a conversation, remembers a preference, uploads a document with progress, searches,
and builds the context of the next turn, printing what each step returned and a final
`quickstart: OK` line (or `quickstart: FAIL <code> <reason>: <message>` and exit status 1).
Run it with a Python that has engram-client installed (see ../README.md).
"""

import os
import sys
import uuid

from engram.governance.v1 import memory_pb2
from engram.ingestion.v1 import ingestion_service_pb2
from engram_client import Engram, EngramError


def main() -> None:
    run = uuid.uuid4().hex[:8]
    with Engram(os.environ.get("ENGRAM_ADDR", "127.0.0.1:50051"), token=os.environ["ENGRAM_TOKEN"]) as engram:
        session = engram.sessions.create(display_name=f"quickstart {run}", language_code="en")
        engram.sessions.append(
            session.name,
            [
                ("user", "I am planning the team offsite in Lisbon next spring."),
                ("assistant", "Lisbon in spring sounds great. How many people are coming?"),
                ("user", "Twelve people, and we need a quiet room for workshops."),
            ],
        )
        print(f"session {session.name}: {engram.sessions.get(session.name).message_count} messages")

        memory = engram.memories.create(
            {
                "type": "MEMORY_TYPE_FACT",
                "namespace": "user_preference",
                "key": "answer_style",
                "value": {"style": "concise"},
                "text": "The user prefers concise answers.",
            }
        )
        print(f"memory {memory.memory.name}: {memory_pb2.DecisionOutcome.Name(memory.decision.outcome)}")

        marker = f"heliotrope{run}"
        guide = (
            "# Offsite venue guide\n\n"
            f"The Lisbon offsite venue code is {marker}. The venue has a quiet workshop room.\n"
        ).encode()
        document = engram.documents.ingest(
            guide,
            mime_type="text/markdown",
            display_name=f"venue-guide-{run}.md",
            wait_for_index=True,
            on_progress=lambda p: print(
                f"  ingest: {ingestion_service_pb2.IngestPhase.Name(p.phase)}, {p.bytes_received} bytes"
            ),
        ).document
        print(f"document {document.name}: {document.chunk_count} chunks")

        for result in engram.search(f"Lisbon venue code {marker}", top_k=3).results:
            print(f"  hit {result.name} score {result.score:.3f}")

        context = engram.context.build(
            session.name, "Which venue code did we note?", budget=2000, model="gpt-4o"
        )
        print(
            f"context: {len(context.messages)} messages, {context.total_tokens}/{context.budget_tokens} tokens"
        )
        if marker not in "\n".join(m.content for m in context.messages):
            raise SystemExit("quickstart: FAIL the context lacks the ingested document")
    print("quickstart: OK")


if __name__ == "__main__":
    try:
        main()
    except EngramError as error:
        print(f"quickstart: FAIL {error}", file=sys.stderr)
        sys.exit(1)
