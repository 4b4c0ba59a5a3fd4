import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Code, ConnectError } from '@connectrpc/connect';
import { describe, expect, it } from '@jest/globals';
import type { Locator } from 'playwright-core';
import { ItemKind } from '@engram/contracts/common';
import { ForgetReceiptState, MemoryStatus, MemoryType } from '@engram/contracts/governance';
import { DocumentState } from '@engram/contracts/ingestion';
import { ReindexJobState } from '@engram/contracts/retrieval';
import { clientsAs, localToken, openStudio, openView, screenshot, signInAs, useStudio } from './harness.js';

const studio = useStudio();

/** The gRPC code a call failed with. */
async function codeOf(call: Promise<unknown>): Promise<Code | 'ok'> {
  try {
    await call;
    return 'ok';
  } catch (error) {
    return ConnectError.from(error).code;
  }
}

/** `read` of every element `list` matches, in order. */
async function rowsOf<T>(list: Locator, read: (item: Locator) => Promise<T>): Promise<T[]> {
  const rows: T[] = [];
  for (let i = 0; i < (await list.count()); i += 1) rows.push(await read(list.nth(i)));
  return rows;
}

/** Chromium logs every non-2xx response as a console error; those of refusals a test provokes are expected. */
function unexpected(problems: readonly string[], statuses: readonly number[] = []): string[] {
  return problems.filter(
    (p) =>
      !statuses.some((s) =>
        p.includes(`Failed to load resource: the server responded with a status of ${String(s)}`),
      ),
  );
}

/** A Markdown file with two top-level sections, each long enough (≈ 600 characters) for a chunk of its own. */
function writeMarkdown(): string {
  const dir = mkdtempSync(join(tmpdir(), 'studio-docs-'));
  const path = join(dir, 'field-guide.md');
  const para = (word: string) =>
    Array.from(
      { length: 10 },
      (_, i) => `${word} sentence number ${String(i + 1)} is about the ${word} topic.`,
    ).join(' ');
  writeFileSync(
    path,
    [
      '# Lighthouse keeping',
      '',
      para('lamp'),
      '',
      '## Fog signals',
      '',
      `Markup stays text: <b>bold?</b> <script>alert(1)</script> & more. ${para('foghorn')}`,
      '',
    ].join('\n'),
  );
  return path;
}

describe('Studio documents, system and forget me', () => {
  it('uploads a Markdown file with honest phases, shows its chunks and heading paths, and deletes it', async () => {
    const user = 'studio-docs-u';
    const { ingestion } = clientsAs(studio().server, await localToken(studio().server, user));
    const { page, problems } = await openStudio(studio().browser, studio().server);
    await signInAs(page, user);
    await openView(page, 'documents');
    await page.getByText('No documents yet').waitFor();

    // Record every phase the upload form shows, as it shows it.
    // (A string: this file is compiled without the DOM library.)
    await page.evaluate(`(() => {
      const seen = [];
      window.studioPhases = seen;
      const form = document.querySelector('form.upload');
      new MutationObserver(() => {
        const phase = form.getAttribute('data-phase');
        if (seen[seen.length - 1] !== phase) seen.push(phase);
      }).observe(form, { attributes: true, attributeFilter: ['data-phase'] });
    })()`);
    await page.locator('input[type="file"][name="document"]').setInputFiles(writeMarkdown());
    expect(await page.locator('select[name="mimeType"]').inputValue()).toBe('text/markdown');
    await page.getByRole('button', { name: 'Upload', exact: true }).click();
    await page.locator('form.upload[data-phase="done"]').waitFor({ timeout: 30_000 });
    const phases = await page.evaluate<string[]>('window.studioPhases');
    expect(phases.at(-1)).toBe('done');
    expect(phases).toContain('sending');
    // The order never goes back.
    const order = ['idle', 'reading', 'sending', 'indexing', 'done'];
    const ranks = phases.map((p) => order.indexOf(p));
    expect(ranks.every((r, i) => r >= 0 && (i === 0 || r >= (ranks[i - 1] ?? 0)))).toBe(true);
    for (const step of ['reading', 'sending', 'indexing', 'done'])
      expect(await page.locator(`.upload-steps li[data-step="${step}"]`).getAttribute('data-status')).toBe(
        'done',
      );
    await page.locator('.upload-steps li[data-step="done"]').filter({ hasText: 'READY' }).waitFor();

    const listed = await ingestion.listDocuments({});
    expect(listed.documents).toHaveLength(1);
    const doc = listed.documents[0]!;
    expect(doc).toMatchObject({
      state: DocumentState.READY,
      mimeType: 'text/markdown',
      displayName: 'field-guide.md',
    });
    expect(doc.chunkCount).toBeGreaterThanOrEqual(2);
    const row = page.locator(`tr[data-document="${doc.name}"]`);
    await row.filter({ hasText: 'READY' }).waitFor();
    expect(await row.locator('td[data-chunks]').getAttribute('data-chunks')).toBe(String(doc.chunkCount));
    await page
      .locator('.upload-steps li[data-step="sending"]')
      .filter({ hasText: `${String(doc.chunkCount)} chunks written` })
      .waitFor();
    await screenshot(page, 'documents-upload');

    // The detail: metadata and every chunk with its heading path, as ListChunks returns them.
    await page.getByRole('link', { name: 'Open the document' }).click();
    await page.locator('li.chunk').first().waitFor();
    const { chunks } = await ingestion.listChunks({ parent: doc.name });
    expect(chunks.map((c) => c.headingPath)).toEqual(
      expect.arrayContaining([['Lighthouse keeping'], ['Lighthouse keeping', 'Fog signals']]),
    );
    const shown = await rowsOf(page.locator('li.chunk'), async (li) => ({
      name: await li.getAttribute('data-chunk'),
      path: await li.locator('[data-heading-path]').getAttribute('data-heading-path'),
      text: await li.locator('pre.chunk-text').textContent(),
    }));
    expect(shown).toEqual(
      chunks.map((c) => ({ name: c.name, path: c.headingPath.join('\u001f'), text: c.text })),
    );
    await page.locator('.heading-path').filter({ hasText: 'Lighthouse keeping › Fog signals' }).waitFor();
    // Document text is data: the markup is shown, never made into elements.
    expect(await page.locator('pre.chunk-text b, pre.chunk-text script').count()).toBe(0);
    expect(
      await page.locator('pre.chunk-text').filter({ hasText: '<script>alert(1)</script>' }).count(),
    ).toBe(1);
    expect(await page.getByTestId('chunk-count').textContent()).toBe(String(doc.chunkCount));
    await screenshot(page, 'documents-chunks');

    // Delete asks first, then the document is gone on the server.
    await page.getByRole('button', { name: 'Delete…' }).click();
    await page.getByText('cannot be undone').waitFor();
    await page.getByRole('button', { name: 'Delete for good' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: `Deleted “field-guide.md” and its ${String(doc.chunkCount)} chunks` })
      .waitFor();
    expect(await codeOf(ingestion.getDocument({ name: doc.name }))).toBe(Code.NotFound);
    await page.getByText('No documents yet').waitFor();
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it('refuses a file over 4 MiB before sending, pointing at the streaming CLI', async () => {
    const { page, problems } = await openStudio(studio().browser, studio().server);
    await signInAs(page, 'studio-docs-big');
    await openView(page, 'documents');
    await page.locator('input[type="file"][name="document"]').setInputFiles({
      name: 'big.md',
      mimeType: 'text/markdown',
      buffer: Buffer.alloc(4 * 1024 * 1024 + 1, 'a'),
    });
    const notice = page.locator('[data-reason="DOCUMENT_TOO_LARGE"]');
    await notice.filter({ hasText: 'npx engram ingest big.md' }).waitFor();
    expect(await page.getByRole('button', { name: 'Upload', exact: true }).isDisabled()).toBe(true);
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it('shows health per service, and without the admin role the server’s refusals', async () => {
    const { page, problems } = await openStudio(studio().browser, studio().server);
    await signInAs(page, 'studio-system-u');
    await openView(page, 'system');
    for (const service of [
      'engram.governance.v1.GovernanceService',
      'engram.ingestion.v1.IngestionService',
      'engram.retrieval.v1.RetrievalService',
      'engram.context.v1.ContextService',
    ])
      await page.locator(`tr[data-service="${service}"] td[data-status="SERVING"]`).waitFor();
    await page.locator('section:has(#system-index) [data-reason="ROLE_REQUIRED"]').waitFor();
    await page.getByRole('button', { name: 'Start reindex' }).click();
    await page.locator('section:has(#system-reindex) [data-reason="ROLE_REQUIRED"]').waitFor();
    expect(await page.locator('section:has(#system-metrics)').textContent()).toContain('9464');
    expect(await page.locator('section:has(#system-metrics) a').count()).toBe(0);
    await screenshot(page, 'system-not-admin');
    // The view speaks Chinese too, the server's reason still shown.
    await page.locator('header.topbar select').selectOption('zh');
    await page.getByRole('heading', { name: '各服务健康状态' }).waitFor();
    await page.getByText('此操作需要你的令牌没有的角色').first().waitFor();
    await screenshot(page, 'system-zh');
    expect(unexpected(problems, [403])).toEqual([]);
    await page.context().close();
  });

  it('shows the index status as GetIndexStatus reports it, and follows a reindex job to its end', async () => {
    const admin = 'studio-system-admin';
    const { retrieval, governance } = clientsAs(
      studio().server,
      await localToken(studio().server, admin, true),
    );
    await governance.createMemory({
      memory: { type: MemoryType.EVENT, text: 'The admin calibrated the lamp on Monday.' },
    });
    const { page, problems } = await openStudio(studio().browser, studio().server);
    await signInAs(page, admin, true);
    await openView(page, 'system');
    await page.locator('.index-status').waitFor();
    // The server caches the figures up to 10 s: compare once the page shows the same computation.
    let match = false;
    for (let attempt = 0; attempt < 20 && !match; attempt += 1) {
      const status = (await retrieval.getIndexStatus({})).indexStatus!;
      const onPage = await page.locator('.index-status').getAttribute('data-computed');
      if (onPage !== status.computeTime?.seconds.toString()) {
        await page.reload();
        await page.locator('.index-status').waitFor();
        continue;
      }
      const rows = await rowsOf(page.locator('.index-kinds tbody tr'), async (tr) => ({
        kind: await tr.getAttribute('data-kind'),
        source: await tr.locator('[data-field="source-rows"]').textContent(),
        indexed: await tr.locator('[data-field="indexed-points"]').textContent(),
        dense: await tr.locator('[data-field="dense-pending"]').textContent(),
      }));
      expect(rows).toEqual(
        status.kinds.map((k) => ({
          kind: ItemKind[k.kind],
          source: String(k.sourceRows),
          indexed: k.indexedPoints === undefined ? '—' : String(k.indexedPoints),
          dense: k.densePendingPoints === undefined ? '—' : String(k.densePendingPoints),
        })),
      );
      expect(await page.locator('[data-field="outbox-pending"]').textContent()).toBe(
        String(status.outboxPending),
      );
      expect(await page.locator('[data-field="outbox-retrying"]').textContent()).toBe(
        String(status.outboxRetrying),
      );
      expect(status.kinds.find((k) => k.kind === ItemKind.MEMORY)?.sourceRows).toBeGreaterThanOrEqual(1n);
      match = true;
    }
    expect(match).toBe(true);

    await page.getByRole('button', { name: 'Start reindex' }).click();
    const job = page.locator('.reindex-job');
    await job.waitFor();
    await page
      .locator('.reindex-job[data-state="SUCCEEDED"], .reindex-job[data-state="FAILED"]')
      .waitFor({ timeout: 60_000 });
    const name = (await job.getAttribute('data-job'))!;
    const onServer = (await retrieval.getReindexJob({ name })).reindexJob!;
    expect(await job.getAttribute('data-state')).toBe(ReindexJobState[onServer.state]);
    expect(await job.textContent()).toContain(
      `${String(onServer.rowsScanned)} of ${String(onServer.rowsTotal)} rows scanned`,
    );
    await screenshot(page, 'system');
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it('forgets the user only after the phrase is typed, and follows the receipt until everything is erased', async () => {
    const user = 'studio-forget-u';
    const { governance, ingestion } = clientsAs(studio().server, await localToken(studio().server, user));
    const created = await governance.createMemory({
      memory: { type: MemoryType.EVENT, text: 'I repainted the lighthouse door blue.' },
    });
    const memory = created.memory!.name;
    await ingestion.ingestDocument({
      document: { mimeType: 'text/plain', displayName: 'diary.txt' },
      content: new TextEncoder().encode('A diary page about the lighthouse.'),
    });
    const { page, problems } = await openStudio(studio().browser, studio().server);
    await signInAs(page, user);
    await openView(page, 'forget');
    await page.getByText('No forget requests yet.').waitFor();
    const button = page.getByRole('button', { name: 'Forget me', exact: true });
    const confirm = page.getByLabel(`Type “forget ${user}” to confirm`);
    expect(await button.isDisabled()).toBe(true);
    await confirm.fill('forget someone-else');
    expect(await button.isDisabled()).toBe(true);
    await confirm.fill(`forget ${user.toUpperCase()}`);
    expect(await button.isDisabled()).toBe(true);
    await confirm.fill(`forget ${user}`);
    expect(await button.isEnabled()).toBe(true);
    await page.locator('input[name="reason"]').fill('Studio end-to-end test');
    await button.click();

    const receipt = page.locator('.receipt');
    await receipt.waitFor();
    expect(page.url()).toMatch(/#\/forget\/[0-9A-Z]{26}$/);
    await page.locator('.receipt[data-state="COMPLETED"]').waitFor({ timeout: 60_000 });
    const name = (await receipt.getAttribute('data-receipt'))!;
    const onServer = (await governance.getForgetReceipt({ name })).forgetReceipt!;
    expect(onServer.state).toBe(ForgetReceiptState.COMPLETED);
    expect(onServer).toMatchObject({ subject: user, requestedBy: user, reason: 'Studio end-to-end test' });
    expect(onServer.counts?.memories).toBe(1n);
    expect(onServer.counts?.documents).toBe(1n);
    for (const [field, count] of [
      ['memories', onServer.counts!.memories],
      ['documents', onServer.counts!.documents],
      ['chunks', onServer.counts!.chunks],
      ['vectorPoints', onServer.counts!.vectorPoints],
    ] as const)
      expect(await page.locator(`tr[data-count="${field}"] td`).last().textContent()).toBe(
        count.toLocaleString('en'),
      );
    await page.getByText('Everything is erased everywhere').waitFor();
    await page
      .locator(`table.receipts tr[data-receipt="${name}"]`)
      .filter({ hasText: 'COMPLETED' })
      .waitFor();
    await screenshot(page, 'forget-receipt');

    // On the server: the memory and the document are gone.
    expect(await codeOf(governance.getMemory({ name: memory }))).toBe(Code.NotFound);
    const left = await governance.listMemories({
      statuses: Object.values(MemoryStatus).filter(
        (v): v is MemoryStatus => typeof v === 'number' && v !== MemoryStatus.UNSPECIFIED,
      ),
    });
    expect(left.memories).toEqual([]);
    expect((await ingestion.listDocuments({})).documents).toEqual([]);
    expect(problems).toEqual([]);
    await page.context().close();
  });
});
