import type { MessageInitShape } from '@bufbuild/protobuf';
import { ConnectError } from '@connectrpc/connect';
import { beforeAll, describe, expect, it } from '@jest/globals';
import type { Page } from 'playwright-core';
import { ItemKind } from '@engram/contracts/common';
import { ContextLayer, TraceItemKind, TraceReason } from '@engram/contracts/context';
import { MemoryType } from '@engram/contracts/governance';
import { ErrorInfoSchema } from '@engram/contracts/grpc';
import { MessageRole } from '@engram/contracts/ingestion';
import type { SearchRequestSchema, SearchResponse, SearchResult } from '@engram/contracts/retrieval';
import {
  clientsAs,
  localToken,
  openStudio,
  openView,
  screenshot,
  signInAs,
  type StudioClients,
  useStudio,
} from './harness.js';

const USER = 'studio-search-user';
const STATEMENTS = [
  'My favourite tea is a smoky lapsang souchong from Fujian',
  'The team meets every Thursday at the lighthouse cafe by the harbour',
  'I parked the blue bicycle behind the old observatory',
];
const QUERY = 'lighthouse cafe';
const TEA = 'smoky lapsang souchong tea';

const studio = useStudio();
let clients: StudioClients;
let sessionName = '';

/** The text a result shows (what the view renders for it). */
function textOf(result: SearchResult | undefined): string {
  const item = result?.item;
  return item?.case === 'memory' || item?.case === 'round' || item?.case === 'chunk' ? item.value.text : '';
}

/** Searches until `accept` holds for the answer (the indexer is asynchronous), at most 90 s. */
async function searchUntil(
  request: MessageInitShape<typeof SearchRequestSchema>,
  accept: (response: SearchResponse) => boolean,
): Promise<SearchResponse> {
  const deadline = Date.now() + 90_000;
  for (;;) {
    const response = await clients.retrieval.search({ explain: true, ...request });
    if (accept(response)) return response;
    if (Date.now() > deadline) throw new Error(`not searchable in time: ${request.query}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** Every statement and the session's round come back, with their dense vectors computed. */
async function waitUntilSearchable(): Promise<void> {
  for (const statement of STATEMENTS) {
    await searchUntil(
      { query: statement },
      (r) => r.results.some((x) => textOf(x) === statement) && r.stats?.densePendingCandidates === 0,
    );
  }
  await searchUntil(
    { query: QUERY, filter: { kinds: [ItemKind.ROUND] } },
    (r) => r.results.length > 0 && r.stats?.densePendingCandidates === 0,
  );
  await searchUntil({ query: QUERY }, (r) => r.stats?.densePendingCandidates === 0);
}

beforeAll(async () => {
  const { server } = studio();
  clients = clientsAs(server, await localToken(server, USER));
  for (const text of STATEMENTS) {
    await clients.governance.createMemory({ memory: { type: MemoryType.EPISODE, text } });
  }
  const session = await clients.ingestion.createSession({ session: { displayName: 'Harbour plans' } });
  sessionName = session.session?.name ?? '';
  await clients.ingestion.appendMessages({
    parent: sessionName,
    messages: [
      { role: MessageRole.USER, content: 'Can you remind me where the lighthouse cafe meeting is?' },
      { role: MessageRole.ASSISTANT, content: 'It is at the lighthouse cafe by the harbour, on Thursday.' },
    ],
  });
  await waitUntilSearchable();
}, 240_000);

async function signedIn(): Promise<{ page: Page; problems: string[] }> {
  const opened = await openStudio(studio().browser, studio().server);
  await signInAs(opened.page, USER);
  return opened;
}

async function runSearch(page: Page, query: string): Promise<void> {
  await page.locator('input[name="q"]').fill(query);
  // The view shows its "enter a query" notice, or the previous answer, until the new request's
  // answer arrives: wait for that answer, then for what the view made of it.
  const answered = page.waitForResponse((r) =>
    r.url().endsWith('/engram.retrieval.v1.RetrievalService/Search'),
  );
  await page.getByRole('button', { name: 'Search', exact: true }).click();
  await answered;
  await page.locator('#search-results, main [role="alert"]').first().waitFor();
}

describe('Studio search playground', () => {
  it('ranks a memory with its per-signal bars and stats, as gRPC Search does, and follows an option change', async () => {
    const { page, problems } = await signedIn();
    await openView(page, 'search');
    await runSearch(page, TEA);
    expect(decodeURIComponent(page.url())).toContain(`#/search?q=${TEA.replaceAll(' ', '+')}`);

    const expected = await clients.retrieval.search({ query: TEA, explain: true });
    const rows = page.locator('tr.search-result');
    expect(await rows.count()).toBe(expected.results.length);
    const top = rows.first();
    expect(await top.locator('.result-text').textContent()).toBe(textOf(expected.results[0]));
    expect(textOf(expected.results[0])).toBe(STATEMENTS[0]);
    expect(await top.getAttribute('data-kind')).toBe('MEMORY');
    // Its link goes to the memory's page.
    const memoryId = expected.results[0]!.name.split('/')[1]!;
    expect(await top.locator('a').getAttribute('href')).toBe(`#/memories/${memoryId}`);
    // Per-signal bars: lexical and dense, valued as the breakdown says.
    const lexical = top.locator('tr[data-signal="lexical"] [role="meter"]');
    const dense = top.locator('tr[data-signal="dense"] [role="meter"]');
    expect(Number(await lexical.getAttribute('aria-valuenow'))).toBeCloseTo(
      expected.results[0]!.breakdown!.textNormalized,
      6,
    );
    expect(Number(await dense.getAttribute('aria-valuenow'))).toBeCloseTo(
      expected.results[0]!.breakdown!.vectorNormalized,
      6,
    );
    expect(await top.locator('tr[data-signal="final"]').count()).toBe(1);
    // Stats: candidate counts per signal, as the server counted them.
    const stats = page.locator('[data-testid="search-stats"]');
    const statValue = (label: string) =>
      stats.locator('dt', { hasText: label }).locator('xpath=following-sibling::dd[1]');
    expect(await statValue('Lexical candidates').textContent()).toBe(
      String(expected.stats!.lexicalCandidates),
    );
    expect(await statValue('Dense candidates').textContent()).toBe(String(expected.stats!.denseCandidates));
    expect(await statValue('Dropped (index drift)').textContent()).toBe(String(expected.stats!.driftDropped));
    expect(await stats.locator('table.search-stages tbody tr').count()).toBe(expected.stats!.stages.length);
    await screenshot(page, 'search-results');

    // Only conversation rounds: the request changes, and so does the answer.
    await page.locator('details.search-options > summary').click();
    await page.locator('input[name="kind-ROUND"]').check();
    await runSearch(page, QUERY);
    expect(decodeURIComponent(page.url())).toContain('kinds=ROUND');
    const rounds = await clients.retrieval.search({
      query: QUERY,
      explain: true,
      filter: { kinds: [ItemKind.ROUND] },
    });
    expect(rounds.results.length).toBeGreaterThan(0);
    await page.locator('tr.search-result[data-kind="ROUND"]').first().waitFor();
    expect(await page.locator('tr.search-result').count()).toBe(rounds.results.length);
    expect(await page.locator('tr.search-result:not([data-kind="ROUND"])').count()).toBe(0);
    expect(await page.locator('tr.search-result .result-text').first().textContent()).toBe(
      textOf(rounds.results[0]),
    );
    const sessionId = sessionName.split('/')[1]!;
    expect(await page.locator('tr.search-result a').first().getAttribute('href')).toMatch(
      new RegExp(`^#/sessions/${sessionId}\\?message=\\d+$`),
    );
    await screenshot(page, 'search-rounds-only');

    // A linked search runs from the URL alone.
    await page.evaluate("location.hash = '#/search?q=observatory+bicycle'");
    await page.locator('tr.search-result').first().waitFor();
    expect(await page.locator('input[name="q"]').inputValue()).toBe('observatory bicycle');
    expect(await page.locator('tr.search-result .result-text').first().textContent()).toBe(STATEMENTS[2]);
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it('shows the server’s refusal of an out-of-range option', async () => {
    const { page } = await signedIn();
    await page.evaluate("location.hash = '#/search?q=tea&k=500'");
    const alert = page.locator('main [role="alert"]').first();
    await alert.waitFor();
    expect(await alert.getAttribute('data-reason')).toBe('FIELD_INVALID');
    await page.context().close();
  });
});

describe('Studio context builder', () => {
  const MESSAGE = 'When does the team meet at the lighthouse cafe?';

  async function build(page: Page, budget: string, session: string): Promise<void> {
    await page.locator('textarea[name="userMessage"]').fill(MESSAGE);
    await page.locator('input[name="totalTokens"]').fill(budget);
    await page.locator('select[name="session"]').selectOption(session);
    await page.getByRole('button', { name: 'Build context' }).click();
  }

  it('renders the messages, tokens per layer and trace of BuildContext', async () => {
    const { page, problems } = await signedIn();
    await openView(page, 'context');
    await build(page, '2000', sessionName);
    const total = page.locator('[data-testid="ctx-total"]');
    await total.waitFor();

    const expected = await clients.context.buildContext({
      session: sessionName,
      userMessage: MESSAGE,
      budget: { totalTokens: 2000 },
      includeTrace: true,
    });
    // The messages, in order, role and content.
    const messages = page.locator('li.ctx-message');
    expect(await messages.count()).toBe(expected.messages.length);
    const shown = await messages.locator('pre').allTextContents();
    expect(shown).toEqual(expected.messages.map((m) => m.content));
    expect(shown.join('\n')).toContain(STATEMENTS[1]);
    expect(shown.at(-1)).toBe(MESSAGE);
    // The stacked bar adds up to the response's total.
    expect(Number(await total.getAttribute('data-total'))).toBe(expected.totalTokens);
    expect(Number(await total.getAttribute('data-budget'))).toBe(expected.budgetTokens);
    expect(await total.textContent()).toContain(
      `${String(expected.totalTokens)} of ${String(expected.budgetTokens)} tokens used`,
    );
    // The trace: every item, included and dropped, with its reason.
    const included = expected.trace.filter((i) => i.included);
    const dropped = expected.trace.filter((i) => !i.included);
    expect(await page.locator('tr.ctx-trace-item[data-included="true"]').count()).toBe(included.length);
    expect(await page.locator('tr.ctx-trace-item[data-included="false"]').count()).toBe(dropped.length);
    // Every item of the gRPC trace is shown in its layer, included or dropped, with the same reason.
    const shownTrace: { layer: string; id: string; included: boolean; reason: string }[] = [];
    for (const table of await page.locator('table.ctx-trace').all()) {
      const layer = (await table.getAttribute('data-layer')) ?? '';
      for (const row of await table.locator('tr.ctx-trace-item').all()) {
        shownTrace.push({
          layer,
          id: (await row.getAttribute('data-id')) ?? '',
          included: (await row.getAttribute('data-included')) === 'true',
          reason: (await row.getAttribute('data-reason')) ?? '',
        });
      }
    }
    const expectedTrace = expected.trace.map((i) => ({
      layer: ContextLayer[i.layer],
      id: i.id,
      included: i.included,
      reason: TraceReason[i.reason],
    }));
    const byKey = (a: { layer: string; id: string }, b: { layer: string; id: string }) =>
      `${a.layer} ${a.id}`.localeCompare(`${b.layer} ${b.id}`);
    expect([...shownTrace].sort(byKey)).toEqual([...expectedTrace].sort(byKey));
    // The memory is among the included knowledge, and it is a memory the user stated.
    const memories = included.filter((i) => i.kind === TraceItemKind.MEMORY);
    expect(memories.length).toBeGreaterThan(0);
    const texts = await Promise.all(
      memories.map(async (m) => (await clients.governance.getMemory({ name: m.id })).memory?.text ?? ''),
    );
    expect(texts).toContain(STATEMENTS[1]);
    for (const text of texts) expect(shown[0]).toContain(text);
    // The layers table has all nine layers with the server's numbers.
    expect(await page.locator('table.ctx-layers tbody tr').count()).toBe(expected.layers.length);
    await screenshot(page, 'context-builder');
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it('shows the server’s error for a budget too small for the message', async () => {
    const { page } = await signedIn();
    await openView(page, 'context');
    let reason = '';
    try {
      await clients.context.buildContext({
        session: sessionName,
        userMessage: MESSAGE,
        budget: { totalTokens: 5 },
      });
    } catch (error) {
      reason = ConnectError.from(error).findDetails(ErrorInfoSchema)[0]?.reason ?? '';
    }
    expect(reason).toBe('BUDGET_TOO_SMALL');
    await build(page, '5', sessionName);
    const alert = page.locator('main [role="alert"]').first();
    await alert.waitFor();
    expect(await alert.getAttribute('data-reason')).toBe(reason);
    expect(await alert.textContent()).toContain('The token budget is too small');
    await screenshot(page, 'context-budget-too-small');
    await page.context().close();
  });

  it('builds without a session on an empty preview session', async () => {
    const { page, problems } = await signedIn();
    await openView(page, 'context');
    await build(page, '2000', '');
    await page.locator('[data-testid="ctx-total"]').waitFor();
    const preview = await clients.ingestion.listSessions({ externalId: 'engram-studio-context-preview' });
    expect(preview.sessions).toHaveLength(1);
    expect(preview.sessions[0]!.messageCount).toBe(0n);
    const expected = await clients.context.buildContext({
      session: preview.sessions[0]!.name,
      userMessage: MESSAGE,
      budget: { totalTokens: 2000 },
      includeTrace: true,
    });
    expect(await page.locator('li.ctx-message').count()).toBe(expected.messages.length);
    expect(await page.locator('tr.ctx-trace-item[data-included="true"]').count()).toBe(
      expected.trace.filter((i) => i.included).length,
    );
    expect(problems).toEqual([]);
    await page.context().close();
  });
});
