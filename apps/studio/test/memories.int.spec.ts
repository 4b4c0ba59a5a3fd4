import { describe, expect, it } from '@jest/globals';
import type { Locator, Page } from 'playwright-core';
import { MemoryStatus, MemoryType } from '@engram/contracts/governance';
import { MessageRole } from '@engram/contracts/ingestion';
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

/**
 * The Memories and Review queue views against a real `npm start`: a statement remembered through
 * the form with its governance decision, its detail and revisions, edit, evergreen pin, delete and
 * restore (checked on the server), the status filter, and a memory quarantined by the default
 * policy (`pii_denial`: email addresses are QUARANTINE) that a reviewer approves in the browser.
 */
const setup = useStudio();

const ALICE = 'mem-alice';
const BOB = 'mem-bob';
const REVIEWER = 'mem-reviewer';
const STATEMENT = 'The user prefers concise answers.';
const EDITED = 'The user prefers short, concise answers with examples.';
const QUARANTINED_TEXT = 'Bob can be reached at bob.smith@example.com for invoices.';

/** What the browser's console says of a call the server refused (expected where a test provokes one). */
const REFUSED = (status: number, text: string) =>
  `console: Failed to load resource: the server responded with a status of ${String(status)} (${text})`;

async function goHash(page: Page, hash: string): Promise<void> {
  await page.evaluate(`location.hash = ${JSON.stringify(hash)}`);
}

async function clients(user: string, admin = false): Promise<StudioClients> {
  const { server } = setup();
  return clientsAs(server, await localToken(server, user, admin));
}

/** Fills and submits the Remember form. */
async function remember(
  page: Page,
  fields: { type?: string; namespace?: string; key?: string; text: string; confidence?: string },
): Promise<void> {
  const form = page.locator('form.remember-form');
  if (fields.type !== undefined)
    await form.locator('select[name="type"]').selectOption({ label: fields.type });
  if (fields.namespace !== undefined) await form.locator('input[name="namespace"]').fill(fields.namespace);
  if (fields.key !== undefined) await form.locator('input[name="key"]').fill(fields.key);
  await form.locator('textarea[name="statement"]').fill(fields.text);
  await form.locator('input[name="confidence"]').fill(fields.confidence ?? '');
  await form.locator('button[type="submit"]').click();
}

/** The `attribute` of every element `locator` matches, in order. */
async function attributes(locator: Locator, attribute: string): Promise<string[]> {
  const out: string[] = [];
  for (const element of await locator.all()) out.push((await element.getAttribute(attribute)) ?? '');
  return out;
}

async function revisionActions(page: Page): Promise<string[]> {
  await page.locator('.revisions-table tbody tr').first().waitFor();
  return attributes(page.locator('.revisions-table tbody tr'), 'data-action');
}

describe('Studio memories', () => {
  it('remembers a statement, shows its decision, detail and revisions, and edits, pins, deletes and restores it', async () => {
    const alice = await clients(ALICE);
    const { page, problems } = await openStudio(setup().browser, setup().server);
    await signInAs(page, ALICE);
    await openView(page, 'memories');
    await page.getByRole('heading', { name: 'Memories', level: 1 }).waitFor();

    // A write the rules refuse: the error's reason, and the rule from its metadata.
    await remember(page, {
      namespace: 'user_preference',
      key: 'tone',
      text: 'Maybe the user likes jokes.',
      confidence: '0.3',
    });
    await page.locator('.refusal [role="alert"][data-reason="MEMORY_REJECTED"]').waitFor();
    await page.locator('.refusal-rule[data-rule="confidence_threshold"]').waitFor();
    // The browser logs the refused call; that one line is expected, nothing else.
    expect(problems.splice(0)).toEqual([REFUSED(400, 'Bad Request')]);
    await screenshot(page, 'memories-rejected');

    // An accepted FACT: the decision with its outcome and rule.
    await remember(page, { namespace: 'user_preference', key: 'answer_style', text: STATEMENT });
    const decision = page.locator('[data-testid="remember-decision"] .decision');
    await decision.waitFor();
    expect(await decision.getAttribute('data-outcome')).toBe('ACCEPTED');
    expect(await decision.getAttribute('data-rule')).not.toBe('');
    expect(await page.locator('.refusal').count()).toBe(0);
    await screenshot(page, 'memories-remember-decision');

    const listed = await alice.governance.listMemories({});
    expect(listed.memories.map((m) => m.text)).toEqual([STATEMENT]);
    const name = listed.memories[0]?.name ?? '';
    const id = name.slice('memories/'.length);

    // The list shows it (the rejected one was never written).
    const row = page.locator(`.memories-table tr[data-memory="${name}"]`);
    await row.waitFor();
    expect(await row.textContent()).toContain('user_preference/answer_style');
    expect(await page.locator('.memories-table tbody tr').count()).toBe(1);

    // Detail: fields and the CREATE revision with its rule decision.
    await row.getByRole('link', { name: STATEMENT }).click();
    await page.locator(`.memory-detail[data-memory="${name}"]`).waitFor();
    expect(page.url()).toContain(`#/memories/${id}`);
    expect(await page.locator('.memory-detail-text').textContent()).toBe(STATEMENT);
    expect(await revisionActions(page)).toEqual(['CREATE']);
    const createRule = await page
      .locator('.revisions-table tbody tr')
      .first()
      .locator('td')
      .nth(3)
      .textContent();
    expect(createRule).not.toBe('');
    await screenshot(page, 'memories-detail');

    // Edit the text: a new UPDATE revision, on the server too.
    await page.locator('form.edit-form textarea[name="text"]').fill(EDITED);
    await page.getByRole('button', { name: 'Save text' }).click();
    await page.locator('[data-testid="action-result"]').filter({ hasText: 'Saved.' }).waitFor();
    await page.locator('[data-testid="action-result"] .decision[data-outcome="ACCEPTED"]').waitFor();
    await page.locator('.memory-detail-text').filter({ hasText: EDITED }).waitFor();
    await page.locator('.revisions-table tr[data-action="UPDATE"]').waitFor();
    expect(await revisionActions(page)).toEqual(['CREATE', 'UPDATE']);
    expect(await page.locator('.revisions-table tr[data-action="UPDATE"]').textContent()).toContain('text');
    let stored = (await alice.governance.getMemory({ name })).memory;
    expect({ text: stored?.text, version: stored?.version }).toEqual({ text: EDITED, version: 2n });

    // Pin evergreen.
    await page.getByRole('button', { name: 'Pin evergreen' }).click();
    await page.locator('[data-evergreen="true"]').waitFor();
    await page.getByRole('button', { name: 'Unpin evergreen' }).waitFor();
    stored = (await alice.governance.getMemory({ name })).memory;
    expect(stored?.evergreen).toBe(true);

    // Delete, then restore; the server agrees each time.
    await page.locator('input[name="deleteReason"]').fill('testing the studio');
    await page.getByRole('button', { name: 'Delete' }).click();
    await page.locator('.memory-detail .kv [data-status="DELETED"]').waitFor();
    stored = (await alice.governance.getMemory({ name })).memory;
    expect({ status: stored?.status, reason: stored?.statusReason }).toEqual({
      status: MemoryStatus.DELETED,
      reason: 'testing the studio',
    });
    expect(await page.locator('.status-reason').textContent()).toBe('testing the studio');
    await page.getByRole('button', { name: 'Restore' }).click();
    await page.locator('.memory-detail .kv [data-status="ACTIVE"]').waitFor();
    stored = (await alice.governance.getMemory({ name })).memory;
    expect(stored?.status).toBe(MemoryStatus.ACTIVE);
    await page.locator('.revisions-table tr[data-action="RESTORE"]').waitFor();
    expect(await revisionActions(page)).toEqual(['CREATE', 'UPDATE', 'UPDATE', 'DELETE', 'RESTORE']);
    await screenshot(page, 'memories-detail-history');
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it('filters by status and type, and links evidence to the session message', async () => {
    const carol = 'mem-carol';
    const gov = (await clients(carol)).governance;
    const ingestion = (await clients(carol)).ingestion;
    const session = (await ingestion.createSession({ session: { displayName: 'Trip' } })).session?.name ?? '';
    const appended = await ingestion.appendMessages({
      parent: session,
      messages: [
        { role: MessageRole.USER, content: 'Hello there.' },
        { role: MessageRole.ASSISTANT, content: 'Hi! How can I help?' },
        { role: MessageRole.USER, content: 'I am flying to Oslo on Friday.' },
      ],
    });
    const evidenceMessage = appended.messages[2];
    const kept = await gov.createMemory({
      memory: {
        type: MemoryType.EVENT,
        text: 'Carol flies to Oslo on Friday.',
        evidence: { messages: [evidenceMessage?.name ?? ''] },
      },
    });
    const gone = await gov.createMemory({
      memory: {
        type: MemoryType.EVENT,
        text: 'Carol had <b>pasta</b> <img src=x onerror=alert(1)> for lunch.',
      },
    });
    await gov.deleteMemory({ name: gone.memory?.name ?? '' });

    const { page, problems } = await openStudio(setup().browser, setup().server);
    await signInAs(page, carol);
    await openView(page, 'memories');
    const rows = page.locator('.memories-table tbody tr');
    await rows.first().waitFor();
    expect(await attributes(rows, 'data-memory')).toEqual([kept.memory?.name]);
    await screenshot(page, 'memories-list-active');

    // Status DELETED only.
    await page.locator('form.memory-filters input[name="status"][value="DELETED"]').check();
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.locator(`.memories-table tr[data-memory="${gone.memory?.name ?? ''}"]`).waitFor();
    expect(page.url()).toContain('status=DELETED');
    expect(await rows.count()).toBe(1);
    // Memory text is data: shown literally, never as markup.
    expect(await rows.first().locator('.memory-text a').textContent()).toBe(
      'Carol had <b>pasta</b> <img src=x onerror=alert(1)> for lunch.',
    );
    expect(await page.locator('.memories-table img, .memories-table b').count()).toBe(0);
    await screenshot(page, 'memories-filtered-deleted');

    // ACTIVE and DELETED, but type FACT: nothing.
    await page.locator('form.memory-filters input[name="status"][value="ACTIVE"]').check();
    await page.locator('form.memory-filters input[name="type"][value="FACT"]').check();
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.getByText('No memory matches these filters.').waitFor();

    // Evidence: the message's link opens the Sessions view at its sequence.
    await goHash(page, `#/memories/${(kept.memory?.name ?? '').slice('memories/'.length)}`);
    const link = page.locator(`li[data-evidence="${evidenceMessage?.name ?? ''}"] a`);
    await link.filter({ hasText: 'message #3' }).waitFor();
    await screenshot(page, 'memories-evidence');
    expect(await link.getAttribute('href')).toBe(`#/sessions/${session.slice('sessions/'.length)}?message=3`);
    // Bilingual: the same view in Chinese.
    await page.locator('header.topbar select').selectOption('zh');
    await page.locator('li[data-evidence] a').filter({ hasText: '第 3 条消息' }).waitFor();
    await goHash(page, '#/memories');
    await page.getByRole('button', { name: '应用筛选' }).waitFor();
    await page.getByRole('heading', { name: '记忆', level: 1 }).waitFor();
    expect(problems).toEqual([]);
    await page.context().close();
  });

  it('quarantines a memory with an email address; only a reviewer can approve it', async () => {
    const bob = await clients(BOB);
    // Bob remembers it in the browser and sees it held for review.
    const { page, problems } = await openStudio(setup().browser, setup().server);
    await signInAs(page, BOB);
    await openView(page, 'memories');
    await remember(page, { type: 'EVENT', text: QUARANTINED_TEXT });
    const decision = page.locator('[data-testid="remember-decision"] .decision');
    await decision.waitFor();
    expect(await decision.getAttribute('data-outcome')).toBe('QUARANTINED');
    expect(await decision.getAttribute('data-rule')).toBe('pii_denial');
    const name =
      (await bob.governance.listMemories({ statuses: [MemoryStatus.QUARANTINED] })).memories[0]?.name ?? '';
    expect(name).toMatch(/^memories\//);

    // Bob is no reviewer: the server lists his own quarantined memory and refuses his approval.
    await openView(page, 'review');
    await page.locator('.notice-role').waitFor();
    const own = page.locator(`.memories-table tr[data-memory="${name}"]`);
    await own.waitFor();
    await own.getByRole('button', { name: 'Approve' }).click();
    await own.locator('[role="alert"][data-reason="ROLE_REQUIRED"]').waitFor();
    expect(problems.splice(0)).toEqual([REFUSED(403, 'Forbidden')]);
    await screenshot(page, 'review-not-reviewer');

    // A reviewer, in a second page, sees it with its rule and approves it.
    const admin = await openStudio(setup().browser, setup().server);
    await signInAs(admin.page, REVIEWER, true);
    await openView(admin.page, 'review');
    const queued = admin.page.locator(`.memories-table tr[data-memory="${name}"]`);
    await queued.waitFor();
    expect(await admin.page.locator('.notice-role').count()).toBe(0);
    expect(await queued.textContent()).toContain(BOB);
    expect(await queued.textContent()).toContain(QUARANTINED_TEXT);
    await queued.locator('.held-by[data-rule="pii_denial"] .held-rule').waitFor();
    await screenshot(admin.page, 'review-queue');
    await queued.locator('input[name="reviewReason"]').fill('a work address, fine to keep');
    await queued.getByRole('button', { name: 'Approve' }).click();
    await admin.page.locator('[data-testid="review-result"] [data-status="ACTIVE"]').waitFor();
    await queued.waitFor({ state: 'detached' });
    await screenshot(admin.page, 'review-approved');
    const approved = (await bob.governance.getMemory({ name })).memory;
    expect(approved?.status).toBe(MemoryStatus.ACTIVE);
    const revisions = (await bob.governance.listMemoryRevisions({ parent: name })).revisions;
    expect(revisions.at(-1)?.reason).toBe('a work address, fine to keep');
    expect([...problems, ...admin.problems]).toEqual([]);
    await admin.page.context().close();
    await page.context().close();
  });

  it('shows the first page and loads the next one with "Load more"', async () => {
    const dave = 'mem-dave';
    const gov = (await clients(dave)).governance;
    for (let i = 1; i <= 27; i++) {
      await gov.createMemory({ memory: { type: MemoryType.EVENT, text: `Dave note number ${String(i)}.` } });
    }
    const first = await gov.listMemories({ pageSize: 25 });
    expect(first.nextPageToken).not.toBe('');
    const { page, problems } = await openStudio(setup().browser, setup().server);
    await signInAs(page, dave);
    await openView(page, 'memories');
    const rows = page.locator('.memories-table tbody tr');
    await page.getByText('25 shown').waitFor();
    expect(await rows.count()).toBe(25);
    // Newest first: the first page runs from note 27 down to note 3.
    expect(await rows.first().textContent()).toContain('Dave note number 27.');
    expect(await rows.last().textContent()).toContain('Dave note number 3.');
    await page.getByRole('button', { name: 'Load more' }).waitFor();
    await screenshot(page, 'memories-list');
    // The second page (its token was once refused: the store fingerprinted the filter's `now`).
    await page.getByRole('button', { name: 'Load more' }).click();
    await page.getByText('27 shown').waitFor();
    expect(await rows.count()).toBe(27);
    expect(await rows.last().textContent()).toContain('Dave note number 1.');
    expect(await page.getByRole('button', { name: 'Load more' }).count()).toBe(0);
    expect(problems).toEqual([]);
    await page.context().close();
  });
});
