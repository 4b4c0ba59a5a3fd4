import { create } from '@bufbuild/protobuf';
import { describe, expect, it } from '@jest/globals';
import { Scope } from '@engram/contracts/common';
import { DocumentSchema } from '@engram/contracts/ingestion';
import type { Principal } from '@engram/runtime';
import type { Store } from '@engram/store';
import type { IngestionSettings } from './deps.js';
import { DocumentIngestion } from './document-ingestion.js';
import { DEFAULT_BOUNDARY_RULES } from './domain/boundaries.js';

const settings: IngestionSettings = {
  maxDocumentBytes: 4 << 20,
  chunkSize: 800,
  overlap: 150,
  redactSecrets: () => true,
  boundaries: DEFAULT_BOUNDARY_RULES,
  maxExtractionAttempts: 5,
  admission: {
    documents: { maxConcurrent: 0, ratePerMinute: 0 },
    appends: { maxConcurrent: 0, ratePerMinute: 0 },
  },
};

const principal: Principal = { subject: 'alice', tenantId: 't1', orgIds: [], roles: [], token: '' };

/** About `bytes` of Markdown: headed sections of varied paragraphs. */
function markdown(bytes: number): Uint8Array {
  const blocks: string[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const block =
      i % 12 === 0
        ? `## Section ${i}`
        : `Paragraph ${i} talks about item ${(i * 7919) % 1000} and why it matters to team ${i % 17}. ` +
          'It has a second sentence, so the chunker has sentences to split on. 这一段也有中文句子。';
    blocks.push(block);
    size += block.length + 2;
  }
  return new TextEncoder().encode(blocks.join('\n\n'));
}

/** An ingestion (preparation never touches the store) and the plan of a SELF Markdown document. */
function markdownPlan() {
  const ingestion = new DocumentIngestion({} as Store, settings);
  const document = create(DocumentSchema, { mimeType: 'text/markdown', scope: Scope.SELF });
  return { ingestion, plan: ingestion.plan(principal, { document, requestId: '', waitForIndex: false }) };
}

describe('DocumentIngestion.prepare', () => {
  it('lets the event loop turn between the steps of a large document (normalize, redact, chunk, count)', async () => {
    const { ingestion, plan } = markdownPlan();
    let turns = 0;
    let done = false;
    const tick = () => {
      turns += 1;
      if (!done) setImmediate(tick);
    };
    setImmediate(tick);
    const prepared = await ingestion.prepare(principal.tenantId, plan, markdown(2 << 20));
    done = true;
    expect(prepared.pieces.length).toBeGreaterThan(1000);
    // At least one turn before and after each of normalization, redaction and chunking (a
    // synchronous preparation gives none: the other calls of the process wait for all of it).
    expect(turns).toBeGreaterThanOrEqual(4);
  });

  it('reports the planned chunk count before counting tokens, then the same chunks as in one piece', async () => {
    const { ingestion, plan } = markdownPlan();
    const content = markdown(256 << 10);
    const steps = ingestion.prepareInSteps(principal.tenantId, plan, content);
    const first = await steps.next();
    expect(first.done).toBe(false);
    let step = first;
    while (step.done !== true) step = await steps.next();
    const whole = await ingestion.prepare(principal.tenantId, plan, content);
    expect(first.value).toEqual({ chunksPlanned: whole.pieces.length, chunksCounted: 0 });
    expect(step.value).toEqual(whole);
  });
});
