import { beforeAll, describe, expect, it } from '@jest/globals';
import type { Page } from 'playwright-core';
import { CompactionMode } from '@engram/contracts/context';
import {
  DecisionOutcome,
  ExtractionJobState,
  ExtractionJobView,
  type CandidateMemory,
  type ExtractionJob,
} from '@engram/contracts/governance';
import { BoundaryReason, MemCellStatus, MessageRole, type MemCell } from '@engram/contracts/ingestion';
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

const USER = 'sessions-uma';
const TITLE = 'Tea and travel';
const FILLER = 60;

const studio = useStudio();
let clients: StudioClients;
let session = '';
let sessionId = '';
let flushed: MemCell;

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits until every MemCell of the session is EXTRACTED or FAILED and returns them. */
async function settledCells(name: string): Promise<MemCell[]> {
  for (let i = 0; i < 120; i += 1) {
    const { memCells } = await clients.ingestion.listMemCells({ parent: name, pageSize: 500 });
    if (memCells.every((c) => c.status === MemCellStatus.EXTRACTED || c.status === MemCellStatus.FAILED))
      return memCells;
    await wait(500);
  }
  throw new Error('extraction did not settle in 60 s');
}

/** The jobs of a MemCell as the server returns them (FULL view), once they have ended. */
async function endedJobs(memCell: string): Promise<ExtractionJob[]> {
  for (let i = 0; i < 120; i += 1) {
    const { extractionJobs } = await clients.governance.listExtractionJobs({
      memCell,
      view: ExtractionJobView.FULL,
    });
    const ended = (j: ExtractionJob) =>
      j.state === ExtractionJobState.SUCCEEDED || j.state === ExtractionJobState.FAILED;
    if (extractionJobs.length > 0 && extractionJobs.every(ended)) return extractionJobs;
    await wait(500);
  }
  throw new Error(`no ended extraction job for ${memCell}`);
}

/** What the view shows as a candidate's text. */
function candidateText(c: CandidateMemory): string {
  if (c.text !== '') return c.text;
  return `${c.namespace}.${c.key} = ${JSON.stringify(c.value)}`;
}

const reasonName = (r: BoundaryReason) => BoundaryReason[r];
const outcomeName = (o: DecisionOutcome) => DecisionOutcome[o];

beforeAll(async () => {
  const { server } = studio();
  clients = clientsAs(server, await localToken(server, USER));
  const created = await clients.ingestion.createSession({ session: { displayName: TITLE } });
  session = created.session?.name ?? '';
  sessionId = session.slice('sessions/'.length);
  const user = MessageRole.USER;
  const assistant = MessageRole.ASSISTANT;
  await clients.ingestion.appendMessages({
    parent: session,
    messages: [
      { role: user, content: 'Hi! I live in Lisbon, near the river.' },
      { role: assistant, content: 'Lisbon is a lovely city. How can I help you today?' },
      { role: user, content: 'My favourite tea is genmaicha. <b>Not</b> sencha.' },
      {
        role: assistant,
        content: '',
        toolCalls: [
          { id: 'call_1', name: 'find_tea_shop', argumentsJson: '{"city":"Lisbon","tea":"genmaicha"}' },
        ],
      },
      {
        role: MessageRole.TOOL,
        content: '{"shop":"Casa do Chá"}',
        toolCallId: 'call_1',
        participantName: 'find_tea_shop',
      },
      {
        role: assistant,
        content: 'Casa do Chá in Lisbon sells genmaicha. We decided to visit it on Saturday.',
      },
      { role: user, content: 'Great, we agreed on Saturday. Which tram should I take to get there?' },
    ],
  });
  const flush = await clients.ingestion.flushSession({
    name: session,
    reason: 'end of the tea chat',
    waitForExtraction: true,
    extractionWaitTimeout: { seconds: 60n },
  });
  if (flush.memCell === undefined) throw new Error('flush closed no MemCell');
  flushed = flush.memCell;
  await clients.context.compactSession({
    session,
    force: true,
    policy: { mode: CompactionMode.OFFLINE, keepRecentTurns: 1 },
  });
  // Enough messages for a second page of the timeline (50 a page) and a MESSAGE_CAP boundary.
  await clients.ingestion.appendMessages({
    parent: session,
    messages: Array.from({ length: FILLER }, (_, i) => ({
      role: i % 2 === 0 ? user : assistant,
      content: `Filler line ${String(i + 1)} about nothing in particular.`,
    })),
  });
  await settledCells(session);
}, 300_000);

/** Goes to a hash of the Studio in the same tab (the token stays in session storage). */
async function goHash(page: Page, hash: string): Promise<void> {
  await page.evaluate(`location.hash = ${JSON.stringify(hash)}`);
}

/** Whether the element is (or within 5 s becomes) wholly inside the viewport. */
async function inViewport(page: Page, selector: string): Promise<boolean> {
  const height = page.viewportSize()?.height ?? 860;
  for (let i = 0; i < 50; i += 1) {
    const box = await page.locator(selector).boundingBox();
    if (box !== null && box.y >= 0 && box.y + box.height <= height) return true;
    await wait(100);
  }
  return false;
}

async function signedIn(): Promise<{ page: Page; problems: string[] }> {
  const opened = await openStudio(studio().browser, studio().server);
  await signInAs(opened.page, USER);
  return opened;
}

async function openSession(page: Page, query = ''): Promise<void> {
  await goHash(page, `#/sessions/${sessionId}${query}`);
  await page.locator('[data-testid="timeline"] li[data-sequence="1"]').waitFor();
}

describe('Studio sessions', () => {
  it('lists the signed-in user’s sessions and opens one', async () => {
    const { page, problems } = await signedIn();
    await openView(page, 'sessions');
    const row = page.locator(`tr[data-session="${session}"]`);
    await row.waitFor();
    const listed = await clients.ingestion.getSession({ name: session });
    const cells = await row.locator('td').allTextContents();
    expect(cells[0]).toContain(TITLE);
    expect(cells[1]).toContain('ACTIVE');
    expect(cells[2]).toBe(String(listed.session?.messageCount));
    expect(listed.session?.messageCount).toBe(BigInt(7 + FILLER));
    await screenshot(page, 'sessions-list');
    await row.getByRole('link', { name: TITLE }).click();
    await page.locator('[data-testid="timeline"] li[data-sequence="1"]').waitFor();
    expect(new URL(page.url()).hash).toBe(`#/sessions/${sessionId}`);
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it('shows the messages on a timeline with MemCell boundaries and their reasons', async () => {
    const { page, problems } = await signedIn();
    await openSession(page);
    const first = page.locator('li[data-sequence="1"]');
    expect(await first.textContent()).toContain('I live in Lisbon, near the river.');
    expect(await first.textContent()).toContain('USER');
    // Message text is data: the markup is shown as text, not rendered.
    const third = page.locator('li[data-sequence="3"] .message-text');
    expect(await third.textContent()).toBe('My favourite tea is genmaicha. <b>Not</b> sencha.');
    expect(await third.locator('b').count()).toBe(0);
    const toolCall = page.locator('li[data-sequence="4"] .tool-calls');
    expect(await toolCall.textContent()).toContain('find_tea_shop');
    expect(await toolCall.textContent()).toContain('{"city":"Lisbon","tea":"genmaicha"}');
    expect(await page.locator('li[data-sequence="5"]').textContent()).toContain('call_1');
    // The flushed MemCell's boundary comes right after its last message, with reason and note.
    const boundary = page.locator(`li[data-mem-cell="${flushed.name}"]`);
    expect(await boundary.locator('[data-testid="boundary-reason"]').textContent()).toBe('FLUSH');
    expect(await boundary.textContent()).toContain('end of the tea chat');
    expect(await boundary.locator('xpath=preceding-sibling::li[1]').getAttribute('data-sequence')).toBe(
      String(flushed.lastSequence),
    );
    // Every MemCell the server has is drawn with its reason, once all pages are loaded.
    await page.getByRole('button', { name: 'Load more messages' }).click();
    await page.locator(`li[data-sequence="${String(7 + FILLER)}"]`).waitFor();
    const serverCells = await settledCells(session);
    expect(serverCells.some((c) => c.boundaryReason === BoundaryReason.MESSAGE_CAP)).toBe(true);
    for (const cell of serverCells) {
      const shown = page.locator(`li[data-mem-cell="${cell.name}"] [data-testid="boundary-reason"]`);
      expect(await shown.textContent()).toBe(reasonName(cell.boundaryReason));
    }
    expect(await page.locator('[data-testid="boundary"]').count()).toBe(serverCells.length);
    await page.locator('li[data-sequence="1"]').scrollIntoViewIfNeeded();
    await screenshot(page, 'sessions-timeline');
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it('shows each MemCell’s extraction jobs with every candidate’s decision', async () => {
    const { page, problems } = await signedIn();
    await openSession(page);
    // The MemCells of the first seven messages (the flush, and any topic shift decided before it).
    const early = (await settledCells(session)).filter((c) => c.firstSequence <= 7n);
    const jobsOf = new Map<string, ExtractionJob[]>();
    for (const cell of early) jobsOf.set(cell.name, await endedJobs(cell.name));
    const jobs = [...jobsOf.values()].flat();
    const candidates = jobs.flatMap((j) => j.candidates);
    expect(candidates.length).toBeGreaterThan(0);
    // The facts of the conversation were proposed.
    expect(candidates.map(candidateText).join('\n')).toMatch(/Lisbon/i);
    expect(candidates.map(candidateText).join('\n')).toMatch(/genmaicha/i);
    for (const job of jobs) {
      const card = page.locator(`[data-job="${job.name}"]`);
      await card.waitFor();
      expect(await page.locator(`li[data-mem-cell="${job.memCell}"] [data-job="${job.name}"]`).count()).toBe(
        1,
      );
      const shownTexts = await card.locator('[data-testid="candidate-text"]').allTextContents();
      const shownOutcomes = await card.locator('[data-testid="decision-outcome"]').allTextContents();
      const shownRules = await card.locator('[data-testid="decision-rule"]').allTextContents();
      expect(shownTexts).toEqual(job.candidates.map(candidateText));
      const decisions = [...job.decisions].sort((a, b) => a.candidateIndex - b.candidateIndex);
      expect(shownOutcomes).toEqual(decisions.map((d) => outcomeName(d.outcome)));
      expect(shownRules).toEqual(decisions.map((d) => d.rule));
    }
    // The rule trace of the first decision opens and lists every rule of the policy.
    const firstJob = jobs[0];
    const firstDecision = firstJob?.decisions.find((d) => d.candidateIndex === 0);
    if (firstJob !== undefined && firstDecision !== undefined) {
      const trace = page.locator(`[data-job="${firstJob.name}"] details.rule-trace`).first();
      await trace.locator('summary').click();
      expect(await trace.locator('tbody tr').count()).toBe(firstDecision.evaluations.length);
    }
    await page.locator(`li[data-mem-cell="${flushed.name}"]`).scrollIntoViewIfNeeded();
    await screenshot(page, 'sessions-extraction');
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it('shows the session state the context service returns', async () => {
    const { page, problems } = await signedIn();
    await openSession(page);
    const { sessionState } = await clients.context.getSessionState({ name: `${session}/state` });
    expect(sessionState?.summary).not.toBe('');
    const panel = page.locator('[data-testid="session-state"]');
    await panel.locator('[data-testid="state-summary"]').waitFor();
    expect(await panel.locator('[data-testid="state-summary"]').textContent()).toBe(sessionState?.summary);
    const keyPoints = sessionState?.keyPoints.map((k) => k.text) ?? [];
    // The offline compaction found the decision ("we decided…") and the unanswered question.
    expect(keyPoints.length).toBeGreaterThan(0);
    expect(sessionState?.openLoops.length).toBeGreaterThan(0);
    expect(await panel.locator('[data-testid="state-key-points"] li').allTextContents()).toEqual(keyPoints);
    const loops = sessionState?.openLoops ?? [];
    const shown = await panel.locator('[data-testid="state-open-loops"] li').allTextContents();
    expect(shown.map((s) => s.trim())).toEqual(
      loops.map((l) => (l.resolved ? `${l.text} resolved` : l.text)),
    );
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it('deep-links to a message on a later page and highlights it', async () => {
    const { page, problems } = await signedIn();
    const target = 7 + FILLER - 2; // on the second page of 50
    await goHash(page, `#/sessions/${sessionId}?message=${String(target)}`);
    const row = page.locator(`li[data-sequence="${String(target)}"]`);
    await row.waitFor();
    expect(await row.getAttribute('class')).toContain('highlighted');
    expect(await row.getAttribute('aria-current')).toBe('true');
    expect(await row.textContent()).toContain(`Filler line ${String(target - 7)} about nothing`);
    // Scrolled into the viewport (1366×860).
    await expect(inViewport(page, `li[data-sequence="${String(target)}"]`)).resolves.toBe(true);
    expect(await page.locator('li.message.highlighted').count()).toBe(1);
    // A message of the first page too.
    await goHash(page, `#/sessions/${sessionId}?message=3`);
    await page.locator('li[data-sequence="3"].highlighted').waitFor();
    expect(await page.locator('li.message.highlighted').count()).toBe(1);
    await screenshot(page, 'sessions-deep-link');
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it('flushes the open tail from the view and shows the new MemCell', async () => {
    const { page, problems } = await signedIn();
    await clients.ingestion.appendMessages({
      parent: session,
      messages: [
        { role: MessageRole.USER, content: 'One more thing: I cycle to work every day.' },
        { role: MessageRole.ASSISTANT, content: 'Noted, cycling in Lisbon hills is impressive.' },
      ],
    });
    await openSession(page);
    const before = await clients.ingestion.getSession({ name: session });
    const open = Number(before.session?.openMessageCount ?? 0n);
    expect(open).toBeGreaterThan(0);
    const last = Number(before.session?.lastSequence ?? 0n);
    await page.getByRole('button', { name: 'Flush', exact: true }).click();
    const result = page.locator('.flush-result');
    await result.waitFor({ timeout: 60_000 });
    expect(await result.textContent()).toContain(
      `Flushed messages ${String(last - open + 1)}–${String(last)}`,
    );
    const { memCells } = await clients.ingestion.listMemCells({ parent: session, pageSize: 500 });
    const newest = memCells.at(-1);
    expect(newest?.boundaryReason).toBe(BoundaryReason.FLUSH);
    expect(newest?.boundaryNote).toBe('flushed from Engram Studio');
    expect(newest?.lastSequence).toBe(BigInt(last));
    expect((await clients.ingestion.getSession({ name: session })).session?.openMessageCount).toBe(0n);
    await screenshot(page, 'sessions-flushed');
    // Nothing left to flush now.
    await page.getByRole('button', { name: 'Flush', exact: true }).click();
    await page.locator('.flush-result').filter({ hasText: 'Nothing to flush' }).waitFor();
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it('shows empty states for a session without messages or state', async () => {
    const empty = await clients.ingestion.createSession({ session: { displayName: 'Nothing yet' } });
    const id = (empty.session?.name ?? '').slice('sessions/'.length);
    const { page, problems } = await signedIn();
    await goHash(page, `#/sessions/${id}`);
    await page.getByText('This session has no messages.').waitFor();
    await page.getByText('No summary, key points or open loops yet').waitFor();
    // The same empty states in Chinese.
    await page.locator('header.topbar select').selectOption('zh');
    await page.getByText('此会话没有消息。').waitFor();
    await page.getByText('还没有摘要、要点或未决事项').waitFor();
    await page.locator('header.topbar select').selectOption('en');
    // An unknown session says why.
    await goHash(page, '#/sessions/01JZZZZZZZZZZZZZZZZZZZZZZZ');
    const alert = page.locator('main [role="alert"]').first();
    await alert.waitFor();
    expect(await alert.getAttribute('data-reason')).toBe('RESOURCE_NOT_FOUND');
    expect(problems.filter((p) => !p.includes('404') && !p.includes('Failed to load'))).toEqual([]);
    await page.context().close();
  });
});
