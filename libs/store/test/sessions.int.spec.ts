import { Code } from '@connectrpc/connect';
import { describe, expect, it } from '@jest/globals';
import type { EngramError } from '@engram/errors';
import {
  SessionRepository,
  SessionStateRepository,
  inTransaction,
  type AppendOptions,
  type MessageRecord,
  type NewMessage,
  type NewSession,
  type SessionRecord,
  type Store,
} from '../src/index.js';
import { code, countRows, dialects, reason, thrown, useStore } from './harness.js';

const user = (content: string, extra: Partial<NewMessage> = {}): NewMessage => ({
  role: 'USER',
  content,
  tokenCount: 10,
  ...extra,
});
const assistant = (content: string, extra: Partial<NewMessage> = {}): NewMessage => ({
  role: 'ASSISTANT',
  content,
  tokenCount: 10,
  ...extra,
});

describe.each(dialects)('SessionRepository on $name', (dialect) => {
  let store: Store;
  let sessions: SessionRepository;

  useStore(dialect, (opened) => {
    store = opened;
    sessions = new SessionRepository(opened);
  });

  const create = (input: Partial<NewSession> & { tenantId: string }, now?: number) =>
    inTransaction(store, (trx) => sessions.createSession(trx, { ownerId: 'alice', ...input }, now));
  const append = (
    session: SessionRecord,
    messages: NewMessage[],
    options?: AppendOptions,
    now?: number,
  ): Promise<MessageRecord[]> =>
    inTransaction(store, (trx) =>
      sessions.appendMessages(trx, session.tenantId, session.id, messages, options, now),
    );
  const reread = async (session: SessionRecord) => {
    const current = await sessions.get(session.tenantId, session.id);
    if (current === undefined) throw new Error(`session ${session.id} vanished`);
    return current;
  };

  /** Rows of one tenant in a table (tenants isolate the tests from each other). */
  const count = (
    table: 'sessions' | 'messages' | 'mem_cells' | 'session_states' | 'outbox',
    tenantId: string,
  ): Promise<number> => countRows(store, table, { tenant_id: tenantId });
  const outboxOf = async (tenantId: string) =>
    (
      await store.db
        .selectFrom('outbox')
        .selectAll()
        .where('tenant_id', '=', tenantId)
        .orderBy('id')
        .execute()
    ).map((r) => ({
      kind: r.aggregate_kind,
      id: r.aggregate_id,
      op: r.operation,
      payload: JSON.parse(r.payload_json) as unknown,
    }));

  describe('sessions', () => {
    it('creates an ACTIVE, empty session and reads back every field, including Chinese and emoji', async () => {
      const created = await create(
        {
          tenantId: 's1',
          displayName: '客服对话 😀 𠀋',
          externalId: 'conv-1',
          languageCode: 'zh-CN',
          timeZone: 'Asia/Shanghai',
          metadata: { 来源: '微信 🧠' },
        },
        1_700_000_000_123,
      );
      expect(created).toMatchObject({
        status: 'ACTIVE',
        messageCount: 0,
        lastSequence: 0,
        openFromSequence: 1,
        version: 1,
        createdAt: 1_700_000_000_123,
        updatedAt: 1_700_000_000_123,
      });
      expect(created.id).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
      expect(await sessions.get('s1', created.id)).toEqual(created);
      expect((await sessions.get('s1', created.id))?.metadata).toEqual({ 来源: '微信 🧠' });
    });

    it('defaults the time zone to UTC and treats an empty external id as none', async () => {
      const first = await create({ tenantId: 's1b', externalId: '' });
      const second = await create({ tenantId: 's1b', externalId: '' });
      expect(first.timeZone).toBe('UTC');
      expect((await sessions.get('s1b', first.id))?.externalId).toBeUndefined();
      expect(second.id).not.toBe(first.id);
    });

    it('refuses a second session with the same external id of the same owner with ALREADY_EXISTS', async () => {
      await create({ tenantId: 's2', externalId: 'conv-dup' });
      const before = await count('sessions', 's2');
      const duplicate = await thrown(() => create({ tenantId: 's2', externalId: 'conv-dup' }));
      expect(code(duplicate)).toBe(Code.AlreadyExists);
      expect(reason(duplicate)).toBe('RESOURCE_ALREADY_EXISTS');
      expect(await count('sessions', 's2')).toBe(before);
      // The same external id is free for another owner and in another tenant.
      await expect(create({ tenantId: 's2', ownerId: 'bob', externalId: 'conv-dup' })).resolves.toMatchObject(
        {
          ownerId: 'bob',
        },
      );
      await expect(create({ tenantId: 's2-other', externalId: 'conv-dup' })).resolves.toMatchObject({
        tenantId: 's2-other',
      });
    });

    it("treats another owner's or another tenant's session exactly like a missing one", async () => {
      const own = await create({ tenantId: 's3' });
      await expect(sessions.getOwned('s3', 'alice', own.id)).resolves.toEqual(own);
      expect(code(await thrown(() => sessions.getOwned('s3', 'bob', own.id)))).toBe(Code.NotFound);
      expect(code(await thrown(() => sessions.getOwned('other', 'alice', own.id)))).toBe(Code.NotFound);
      expect(code(await thrown(() => sessions.getOwned('s3', 'alice', '01JD7Z5Q2G8V6K3M9T1R4X0B2C')))).toBe(
        Code.NotFound,
      );
      expect(await sessions.get('other', own.id)).toBeUndefined();
    });

    it('updates with optimistic concurrency: a stale version fails with ABORTED and writes nothing', async () => {
      const session = await create({ tenantId: 's4', displayName: 'old' });
      const updated = await inTransaction(store, (trx) =>
        sessions.update(trx, 's4', session.id, 1, { displayName: '新标题', metadata: { k: 'v' } }, 5_000),
      );
      expect(updated).toMatchObject({
        displayName: '新标题',
        metadata: { k: 'v' },
        version: 2,
        updatedAt: 5_000,
      });
      const stale = await thrown(() =>
        inTransaction(store, (trx) => sessions.update(trx, 's4', session.id, 1, { displayName: 'lost' })),
      );
      expect(code(stale)).toBe(Code.Aborted);
      expect(reason(stale)).toBe('ETAG_MISMATCH');
      expect(await reread(session)).toEqual(updated);
    });

    it('lets exactly one of two concurrent updates of the same version win', async () => {
      const session = await create({ tenantId: 's4b' });
      const write = (displayName: string) =>
        inTransaction(store, (trx) => sessions.update(trx, 's4b', session.id, 1, { displayName }));
      const results = await Promise.allSettled([write('first'), write('second')]);
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      const losers = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
      expect(losers.map((l) => code(l.reason))).toEqual([Code.Aborted]);
      expect((await reread(session)).version).toBe(2);
    });

    it('stamps closedAt when closing, and refuses to reopen a closed session', async () => {
      const session = await create({ tenantId: 's5' });
      const closed = await inTransaction(store, (trx) =>
        sessions.update(trx, 's5', session.id, 1, { status: 'CLOSED' }, 7_000),
      );
      expect(closed).toMatchObject({ status: 'CLOSED', closedAt: 7_000, version: 2 });
      expect(await reread(session)).toEqual(closed);
      const reopen = await thrown(() =>
        inTransaction(store, (trx) => sessions.update(trx, 's5', session.id, 2, { status: 'ACTIVE' })),
      );
      expect(code(reopen)).toBe(Code.FailedPrecondition);
      expect((await reread(session)).status).toBe('CLOSED');
      // A closed session's title stays updatable.
      await expect(
        inTransaction(store, (trx) => sessions.update(trx, 's5', session.id, 2, { displayName: 'archived' })),
      ).resolves.toMatchObject({ displayName: 'archived', status: 'CLOSED', closedAt: 7_000 });
    });

    it("lists the owner's sessions newest first without gaps or repeats, with filters, and refuses a foreign token", async () => {
      const made: SessionRecord[] = [];
      for (let i = 0; i < 5; i += 1) made.push(await create({ tenantId: 's6', externalId: `list-${i}` }));
      await create({ tenantId: 's6', ownerId: 'bob' });
      await create({ tenantId: 's6-other' });
      const first = made[0]!;
      await inTransaction(store, (trx) => sessions.update(trx, 's6', first.id, 1, { status: 'CLOSED' }));

      const seen: string[] = [];
      let token = '';
      do {
        const page = await sessions.list('s6', 'alice', {}, { pageSize: 2, pageToken: token });
        expect(page.items.length).toBeLessThanOrEqual(2);
        seen.push(...page.items.map((s) => s.id));
        token = page.nextPageToken;
      } while (token !== '');
      expect(seen).toEqual(made.map((s) => s.id).reverse());

      const closed = await sessions.list('s6', 'alice', { statuses: ['CLOSED'] }, { pageSize: 10 });
      expect(closed.items.map((s) => s.id)).toEqual([first.id]);
      const active = await sessions.list('s6', 'alice', { statuses: ['ACTIVE'] }, { pageSize: 10 });
      expect(active.items).toHaveLength(4);
      const byExternal = await sessions.list('s6', 'alice', { externalId: 'list-3' }, { pageSize: 10 });
      expect(byExternal.items.map((s) => s.id)).toEqual([made[3]!.id]);

      const page1 = await sessions.list('s6', 'alice', {}, { pageSize: 2 });
      const misuse = await thrown(() =>
        sessions.list(
          's6',
          'alice',
          { statuses: ['ACTIVE'] },
          { pageSize: 2, pageToken: page1.nextPageToken },
        ),
      );
      expect(code(misuse)).toBe(Code.InvalidArgument);
      expect(reason(misuse)).toBe('PAGE_TOKEN_INVALID');
      const otherOwner = await thrown(() =>
        sessions.list('s6', 'bob', {}, { pageSize: 2, pageToken: page1.nextPageToken }),
      );
      expect(reason(otherOwner)).toBe('PAGE_TOKEN_INVALID');
      expect(
        reason(await thrown(() => sessions.list('s6', 'alice', {}, { pageSize: 2, pageToken: 'garbage' }))),
      ).toBe('PAGE_TOKEN_INVALID');
    });
  });

  describe('messages', () => {
    it('appends at dense sequences and round-trips Chinese, emoji, 4-byte characters, tool calls and metadata', async () => {
      const session = await create({ tenantId: 'm1' });
      const stored = await append(
        session,
        [
          user('你好，帮我查一下明天上海的天气 😀 𠀋𡈽', {
            metadata: { 渠道: 'app 📱' },
            participantName: 'alice_1',
          }),
          assistant('', {
            toolCalls: [{ id: 'call_1', name: 'weather', argumentsJson: '{"city":"上海 🌧"}' }],
          }),
          {
            role: 'TOOL',
            content: '{"温度":"12°C"}',
            toolCallId: 'call_1',
            participantName: 'weather',
            tokenCount: 7,
          },
          assistant('明天上海小雨，12°C 🌧'),
        ],
        {},
        1_700_000_000_000,
      );
      expect(stored.map((m) => m.sequence)).toEqual([1, 2, 3, 4]);
      expect(stored.map((m) => m.role)).toEqual(['USER', 'ASSISTANT', 'TOOL', 'ASSISTANT']);
      expect(stored[1]?.toolCalls).toEqual([
        { id: 'call_1', name: 'weather', argumentsJson: '{"city":"上海 🌧"}' },
      ]);
      expect(stored.every((m) => !m.compacted && m.memCellId === undefined)).toBe(true);

      const listed = await sessions.listMessages('m1', session.id, {}, { pageSize: 10 });
      expect(listed.items).toEqual(stored);
      expect(listed.nextPageToken).toBe('');
      expect(await sessions.getMessage('m1', session.id, stored[0]!.id)).toEqual(stored[0]);
      expect(await sessions.getMessage('m1', 'another-session', stored[0]!.id)).toBeUndefined();
      expect(await sessions.getMessage('other', session.id, stored[0]!.id)).toBeUndefined();

      expect(await reread(session)).toMatchObject({
        lastSequence: 4,
        messageCount: 4,
        lastMessageAt: 1_700_000_000_000,
        updatedAt: 1_700_000_000_000,
        version: 2,
      });
      const more = await append(session, [user('再见')]);
      expect(more.map((m) => m.sequence)).toEqual([5]);
    });

    it('stores the largest message: 32,000 code points of 4-byte emoji (128,000 bytes)', async () => {
      const session = await create({ tenantId: 'm2' });
      const content = '😀🧠𠀋🎉'.repeat(8_000);
      expect(Array.from(content)).toHaveLength(32_000);
      expect(Buffer.byteLength(content, 'utf8')).toBe(128_000);
      const [stored] = await append(session, [user(content), assistant(content)]);
      const read = await sessions.getMessage('m2', session.id, stored!.id);
      expect(read?.content).toBe(content);
      expect(read?.content.length).toBe(content.length);
    });

    it("defaults occurredAt to now, raised to the previous message's time, and keeps an explicit one", async () => {
      const session = await create({ tenantId: 'm3' });
      const [imported] = await append(session, [user('from the future', { occurredAt: 9_000 })], {}, 5_000);
      expect(imported?.occurredAt).toBe(9_000);
      const [later] = await append(session, [assistant('reply')], {}, 6_000);
      expect(later?.occurredAt).toBe(9_000);
      const [now] = await append(session, [user('now')], {}, 12_000);
      expect(now?.occurredAt).toBe(12_000);
      expect((await reread(session)).lastMessageAt).toBe(12_000);
    });

    it('gives two concurrent appenders dense sequences 1..N with no duplicates or gaps', async () => {
      const session = await create({ tenantId: 'm4' });
      const appendWithRetry = async (messages: NewMessage[]) => {
        for (let attempt = 0; ; attempt += 1) {
          try {
            return await append(session, messages);
          } catch (error) {
            if (code(error) !== Code.Aborted || attempt >= 50) throw error;
          }
        }
      };
      const writer = async (name: string) => {
        for (let i = 0; i < 10; i += 1) {
          await appendWithRetry([user(`${name}-${i}-q`), assistant(`${name}-${i}-a`)]);
        }
      };
      await Promise.all([writer('a'), writer('b')]);

      const all = await sessions.listMessages('m4', session.id, {}, { pageSize: 100 });
      expect(all.items.map((m) => m.sequence)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
      // Each call's messages are consecutive, and each writer's calls keep their order.
      for (const name of ['a', 'b']) {
        const mine = all.items.filter((m) => m.content.startsWith(`${name}-`));
        expect(mine.map((m) => m.content)).toEqual(
          Array.from({ length: 10 }, (_, i) => [`${name}-${i}-q`, `${name}-${i}-a`]).flat(),
        );
        for (let i = 0; i < mine.length; i += 2) expect(mine[i + 1]!.sequence).toBe(mine[i]!.sequence + 1);
      }
      expect(await reread(session)).toMatchObject({ lastSequence: 40, messageCount: 40, version: 21 });
      // Each conflict rolled back completely: one ROUND row per user message, nothing more.
      expect(await count('outbox', 'm4')).toBe(20);
    });

    it('also serializes two single concurrent appends started together', async () => {
      const session = await create({ tenantId: 'm4b' });
      const once = async (content: string) => {
        for (let attempt = 0; ; attempt += 1) {
          try {
            return await append(session, [user(content)]);
          } catch (error) {
            if (code(error) !== Code.Aborted || attempt >= 50) throw error;
          }
        }
      };
      const [a, b] = await Promise.all([once('a'), once('b')]);
      expect([a[0]!.sequence, b[0]!.sequence].sort()).toEqual([1, 2]);
    });

    it('fails with ABORTED ETAG_MISMATCH when expectedLastSequence is stale, and writes nothing', async () => {
      const session = await create({ tenantId: 'm5' });
      await append(session, [user('one')], { expectedLastSequence: 0 });
      const stale = await thrown(() => append(session, [user('two')], { expectedLastSequence: 0 }));
      expect(code(stale)).toBe(Code.Aborted);
      expect(reason(stale)).toBe('ETAG_MISMATCH');
      expect(await count('messages', 'm5')).toBe(1);
      await expect(append(session, [user('two')], { expectedLastSequence: 1 })).resolves.toHaveLength(1);
    });

    it('refuses appends to a closed session with FAILED_PRECONDITION SESSION_CLOSED and writes nothing', async () => {
      const session = await create({ tenantId: 'm6' });
      await append(session, [user('before closing')]);
      const closed = await inTransaction(store, (trx) =>
        sessions.update(trx, 'm6', session.id, 2, { status: 'CLOSED' }),
      );
      const [messages, outbox] = [await count('messages', 'm6'), await count('outbox', 'm6')];
      const refused = await thrown(() => append(session, [user('too late')]));
      expect(code(refused)).toBe(Code.FailedPrecondition);
      expect(reason(refused)).toBe('SESSION_CLOSED');
      expect((refused as EngramError).metadata).toEqual({ name: `sessions/${session.id}` });
      expect(await count('messages', 'm6')).toBe(messages);
      expect(await count('outbox', 'm6')).toBe(outbox);
      expect(await reread(session)).toEqual(closed);
    });

    it('answers NOT_FOUND for a missing session or one of another tenant', async () => {
      const session = await create({ tenantId: 'm7' });
      const missing = await thrown(() =>
        inTransaction(store, (trx) =>
          sessions.appendMessages(trx, 'm7', '01JD7Z5Q2G8V6K3M9T1R4X0B2C', [user('x')]),
        ),
      );
      expect(code(missing)).toBe(Code.NotFound);
      const foreign = await thrown(() =>
        inTransaction(store, (trx) => sessions.appendMessages(trx, 'other', session.id, [user('x')])),
      );
      expect(code(foreign)).toBe(Code.NotFound);
      expect(await count('messages', 'other')).toBe(0);
    });

    it('leaves no message, no counter change and no outbox row when the transaction fails midway', async () => {
      const session = await create({ tenantId: 'm8' });
      await append(session, [user('kept')]);
      const before = await reread(session);
      const failure = await thrown(() =>
        inTransaction(store, async (trx) => {
          await sessions.appendMessages(trx, 'm8', session.id, [user('doomed'), assistant('doomed too')]);
          throw new Error('crash after the write');
        }),
      );
      expect((failure as Error).message).toBe('crash after the write');
      expect(await count('messages', 'm8')).toBe(1);
      expect(await count('outbox', 'm8')).toBe(1);
      expect(await reread(session)).toEqual(before);
    });

    it('enqueues a ROUND upsert for each user message and re-enqueues its round when the reply arrives', async () => {
      const session = await create({ tenantId: 'm9' });
      const round = (id: string) => ({ kind: 'ROUND', id, op: 'UPSERT', payload: { sessionId: session.id } });

      // An assistant greeting with no user message before it belongs to no round.
      await append(session, [assistant('欢迎！')]);
      expect(await outboxOf('m9')).toEqual([]);

      const [question] = await append(session, [user('问题一')]);
      expect(await outboxOf('m9')).toEqual([round(question!.id)]);

      // A tool-only assistant message and a tool result do not touch the round; the reply does, once.
      await append(session, [
        assistant('', { toolCalls: [{ id: 'c1', name: 'search', argumentsJson: '{}' }] }),
        { role: 'TOOL', content: 'result', toolCallId: 'c1' },
        { role: 'SYSTEM', content: 'be brief' },
      ]);
      expect(await outboxOf('m9')).toEqual([round(question!.id)]);
      await append(session, [assistant('回答一')]);
      expect(await outboxOf('m9')).toEqual([round(question!.id), round(question!.id)]);

      // A question and its reply in one call: one row for that round.
      const [second] = await append(session, [user('问题二'), assistant('回答二')]);
      expect((await outboxOf('m9')).slice(2)).toEqual([round(second!.id)]);
      // A late reply to the previous question, then the next question, in one call: both rounds.
      const [, third] = await append(session, [assistant('补充'), user('问题三')]);
      expect((await outboxOf('m9')).slice(3)).toEqual([round(second!.id), round(third!.id)]);
    });

    it('lists by sequence with range, role, compacted and open-tail filters, in either direction, without gaps', async () => {
      const session = await create({ tenantId: 'm10' });
      await append(session, [
        user('1'),
        assistant('2'),
        user('3'),
        assistant('4'),
        user('5'),
        assistant('6'),
      ]);
      const seqs = async (filter: Parameters<SessionRepository['listMessages']>[2]) =>
        (await sessions.listMessages('m10', session.id, filter, { pageSize: 100 })).items.map(
          (m) => m.sequence,
        );

      expect(await seqs({ fromSequence: 2, toSequence: 4 })).toEqual([2, 3, 4]);
      expect(await seqs({ roles: ['USER'] })).toEqual([1, 3, 5]);
      expect(await seqs({ newestFirst: true })).toEqual([6, 5, 4, 3, 2, 1]);
      await inTransaction(store, (trx) => sessions.markCompacted(trx, 'm10', session.id, 2));
      expect(await seqs({ includeCompacted: false })).toEqual([3, 4, 5, 6]);
      expect(await seqs({ includeCompacted: true })).toEqual([1, 2, 3, 4, 5, 6]);
      await inTransaction(store, (trx) =>
        sessions.closeMemCell(trx, 'm10', session.id, { throughSequence: 3, reason: 'FLUSH' }),
      );
      expect(await seqs({ openOnly: true })).toEqual([4, 5, 6]);

      for (const newestFirst of [false, true]) {
        const seen: number[] = [];
        let token = '';
        do {
          const page = await sessions.listMessages(
            'm10',
            session.id,
            { newestFirst },
            { pageSize: 4, pageToken: token },
          );
          seen.push(...page.items.map((m) => m.sequence));
          token = page.nextPageToken;
        } while (token !== '');
        expect(seen).toEqual(newestFirst ? [6, 5, 4, 3, 2, 1] : [1, 2, 3, 4, 5, 6]);
      }
      const page1 = await sessions.listMessages('m10', session.id, {}, { pageSize: 2 });
      const misuse = await thrown(() =>
        sessions.listMessages(
          'm10',
          session.id,
          { roles: ['USER'] },
          { pageSize: 2, pageToken: page1.nextPageToken },
        ),
      );
      expect(reason(misuse)).toBe('PAGE_TOKEN_INVALID');
    });
  });

  describe('MemCells', () => {
    it('closes exactly the open tail up to the given sequence, links its messages and advances the tail', async () => {
      const session = await create({ tenantId: 'c1' });
      const messages = await append(
        session,
        [
          user('a', { occurredAt: 1_000 }),
          assistant('b'),
          user('c'),
          assistant('d', { tokenCount: 25 }),
          user('e'),
        ],
        {},
        2_000,
      );
      const versionBefore = (await reread(session)).version;
      const cell = await inTransaction(store, (trx) =>
        sessions.closeMemCell(trx, 'c1', session.id, { throughSequence: 3, reason: 'TOKEN_CAP' }, 3_000),
      );
      expect(cell).toMatchObject({
        sessionId: session.id,
        firstSequence: 1,
        lastSequence: 3,
        messageCount: 3,
        tokenCount: 30,
        reason: 'TOKEN_CAP',
        status: 'PENDING',
        attempts: 0,
        lastError: '',
        openedAt: 1_000,
        closedAt: 3_000,
      });
      expect(cell.extractionJobId).toBeUndefined();
      expect(await sessions.getMemCell('c1', session.id, cell.id)).toEqual(cell);

      const listed = await sessions.listMessages('c1', session.id, {}, { pageSize: 10 });
      expect(listed.items.map((m) => m.memCellId)).toEqual([cell.id, cell.id, cell.id, undefined, undefined]);
      expect((await sessions.openTail('c1', session.id)).map((m) => m.id)).toEqual([
        messages[3]!.id,
        messages[4]!.id,
      ]);
      expect(await reread(session)).toMatchObject({ openFromSequence: 4, version: versionBefore + 1 });
      expect(await sessions.counts('c1', session.id)).toEqual({
        openMessageCount: 2,
        openTokenCount: 35,
        memCellCount: 1,
      });

      const next = await inTransaction(store, (trx) =>
        sessions.closeMemCell(trx, 'c1', session.id, { throughSequence: 5, reason: 'FLUSH', tokenCount: 99 }),
      );
      expect(next).toMatchObject({ firstSequence: 4, lastSequence: 5, messageCount: 2, tokenCount: 99 });
      expect(await sessions.openTail('c1', session.id)).toEqual([]);
      expect(await sessions.counts('c1', session.id)).toEqual({
        openMessageCount: 0,
        openTokenCount: 0,
        memCellCount: 2,
      });
      const cells = await sessions.listMemCells('c1', session.id, {}, { pageSize: 1 });
      expect(cells.items.map((c) => c.id)).toEqual([cell.id]);
      const rest = await sessions.listMemCells(
        'c1',
        session.id,
        {},
        { pageSize: 1, pageToken: cells.nextPageToken },
      );
      expect(rest.items.map((c) => c.id)).toEqual([next.id]);
      expect(rest.nextPageToken).toBe('');
    });

    it('refuses to close outside the open tail with FAILED_PRECONDITION and writes nothing', async () => {
      const session = await create({ tenantId: 'c2' });
      await append(session, [user('a'), assistant('b')]);
      await inTransaction(store, (trx) =>
        sessions.closeMemCell(trx, 'c2', session.id, { throughSequence: 1, reason: 'FLUSH' }),
      );
      const before = await reread(session);
      for (const throughSequence of [1, 3]) {
        const refused = await thrown(() =>
          inTransaction(store, (trx) =>
            sessions.closeMemCell(trx, 'c2', session.id, { throughSequence, reason: 'FLUSH' }),
          ),
        );
        expect(code(refused)).toBe(Code.FailedPrecondition);
        expect(reason(refused)).toBe('STATE_CONFLICT');
      }
      expect(await count('mem_cells', 'c2')).toBe(1);
      expect(await reread(session)).toEqual(before);
    });

    it('lets only one of two concurrent closers of the same tail win', async () => {
      const session = await create({ tenantId: 'c3' });
      await append(session, [user('a'), assistant('b')]);
      const close = () =>
        inTransaction(store, (trx) =>
          sessions.closeMemCell(trx, 'c3', session.id, { throughSequence: 2, reason: 'TIME_GAP' }),
        );
      const results = await Promise.allSettled([close(), close()]);
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      const loser = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      expect([Code.Aborted, Code.FailedPrecondition]).toContain(code(loser?.reason));
      expect(await count('mem_cells', 'c3')).toBe(1);
    });

    it('hands a pending cell to one sweeper only, and filters cells by status', async () => {
      const session = await create({ tenantId: 'c4' });
      await append(session, [user('a'), assistant('b'), user('c')]);
      const first = await inTransaction(store, (trx) =>
        sessions.closeMemCell(trx, 'c4', session.id, { throughSequence: 2, reason: 'FLUSH' }, 1_000),
      );
      const second = await inTransaction(store, (trx) =>
        sessions.closeMemCell(trx, 'c4', session.id, { throughSequence: 3, reason: 'SESSION_CLOSED' }, 2_000),
      );
      const pending = (await sessions.dueMemCells(1_000, 2_500)).map((c) => c.id);
      expect(pending).toEqual(expect.arrayContaining([first.id, second.id]));

      const take = () =>
        inTransaction(store, (trx) =>
          sessions.updateMemCellStatus(
            trx,
            'c4',
            first.id,
            {
              status: 'EXTRACTING',
              attempts: 1,
              extractionJobId: '01JD7Z5Q2G8V6K3M9T1R4X0B2C',
              expectedStatus: 'PENDING',
            },
            3_000,
          ),
        );
      const results = await Promise.allSettled([take(), take()]);
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      const loser = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      expect(code(loser?.reason)).toBe(Code.Aborted);

      expect(await sessions.getMemCell('c4', session.id, first.id)).toMatchObject({
        status: 'EXTRACTING',
        attempts: 1,
        extractionJobId: '01JD7Z5Q2G8V6K3M9T1R4X0B2C',
        updatedAt: 3_000,
      });
      expect((await sessions.dueMemCells(1_000)).map((c) => c.id)).not.toContain(first.id);

      const failed = await inTransaction(store, (trx) =>
        sessions.updateMemCellStatus(trx, 'c4', first.id, { status: 'FAILED', lastError: 'x'.repeat(2_000) }),
      );
      expect(failed.lastError).toHaveLength(1_024);
      expect(failed.extractionJobId).toBe('01JD7Z5Q2G8V6K3M9T1R4X0B2C');
      expect(await sessions.getMemCell('c4', session.id, first.id)).toEqual(failed);

      const byStatus = await sessions.listMemCells(
        'c4',
        session.id,
        { statuses: ['PENDING'] },
        { pageSize: 10 },
      );
      expect(byStatus.items.map((c) => c.id)).toEqual([second.id]);
      const missing = await thrown(() =>
        inTransaction(store, (trx) =>
          sessions.updateMemCellStatus(trx, 'other', first.id, { status: 'FAILED' }),
        ),
      );
      expect(code(missing)).toBe(Code.NotFound);
    });
  });

  describe('compaction flags', () => {
    it('flags messages up to the mark once; repeating or lowering the mark flags nothing', async () => {
      const session = await create({ tenantId: 'k1' });
      await append(session, [user('1'), assistant('2'), user('3'), assistant('4')]);
      const mark = (through: number) =>
        inTransaction(store, (trx) => sessions.markCompacted(trx, 'k1', session.id, through));
      expect(await mark(2)).toBe(2);
      expect(await mark(2)).toBe(0);
      expect(await mark(1)).toBe(0);
      const flags = async () =>
        (await sessions.listMessages('k1', session.id, {}, { pageSize: 10 })).items.map((m) => m.compacted);
      expect(await flags()).toEqual([true, true, false, false]);
      expect(await mark(4)).toBe(2);
      expect(await flags()).toEqual([true, true, true, true]);
      expect(await inTransaction(store, (trx) => sessions.markCompacted(trx, 'other', session.id, 4))).toBe(
        0,
      );
    });
  });

  describe('deleting', () => {
    it('deletes a session with its messages, MemCells and state, and enqueues ROUND and SESSION deletes', async () => {
      const session = await create({ tenantId: 'd1' });
      const [q1, , q2] = await append(session, [user('q1'), assistant('a1'), user('q2'), assistant('a2')]);
      await inTransaction(store, (trx) =>
        sessions.closeMemCell(trx, 'd1', session.id, { throughSequence: 2, reason: 'FLUSH' }),
      );
      await inTransaction(store, (trx) =>
        new SessionStateRepository(store).save(trx, 'd1', session.id, 0, {
          summary: 's',
          summaryTokenCount: 1,
          keyPoints: [],
          openLoops: [],
          compactedThroughSequence: 0,
        }),
      );
      const outboxBefore = (await outboxOf('d1')).length;

      const stale = await thrown(() =>
        inTransaction(store, (trx) => sessions.deleteSession(trx, 'd1', session.id, { expectedVersion: 1 })),
      );
      expect(code(stale)).toBe(Code.Aborted);
      expect(await count('sessions', 'd1')).toBe(1);

      const deleted = await inTransaction(store, (trx) => sessions.deleteSession(trx, 'd1', session.id));
      expect(deleted).toEqual({ sessions: 1, messages: 4, memCells: 1, sessionStates: 1 });
      for (const table of ['sessions', 'messages', 'mem_cells', 'session_states'] as const) {
        expect(await count(table, 'd1')).toBe(0);
      }
      expect((await outboxOf('d1')).slice(outboxBefore)).toEqual([
        { kind: 'ROUND', id: q1!.id, op: 'DELETE', payload: { sessionId: session.id } },
        { kind: 'ROUND', id: q2!.id, op: 'DELETE', payload: { sessionId: session.id } },
        { kind: 'SESSION', id: session.id, op: 'DELETE', payload: {} },
      ]);
      const again = await thrown(() =>
        inTransaction(store, (trx) => sessions.deleteSession(trx, 'd1', session.id)),
      );
      expect(code(again)).toBe(Code.NotFound);
    });

    it('leaves no round behind when an append races the delete: every upserted round gets its delete', async () => {
      const retrying = async <T>(fn: () => Promise<T>): Promise<T | undefined> => {
        for (let attempt = 0; ; attempt += 1) {
          try {
            return await fn();
          } catch (error) {
            // The delete won: the append finds no session, which is a valid outcome of the race.
            if (code(error) === Code.NotFound) return undefined;
            if (code(error) !== Code.Aborted || attempt >= 50) throw error;
          }
        }
      };
      for (let round = 0; round < 5; round += 1) {
        const session = await create({ tenantId: 'd2' });
        await append(session, [user('first')]);
        await Promise.all([
          retrying(() => append(session, [user('raced'), assistant('reply')])),
          retrying(() => inTransaction(store, (trx) => sessions.deleteSession(trx, 'd2', session.id))),
        ]);
        expect(await sessions.get('d2', session.id)).toBeUndefined();
      }
      const events = await outboxOf('d2');
      const upserted = new Set(
        events.filter((e) => e.kind === 'ROUND' && e.op === 'UPSERT').map((e) => e.id),
      );
      const deleted = new Set(events.filter((e) => e.kind === 'ROUND' && e.op === 'DELETE').map((e) => e.id));
      expect([...upserted].filter((id) => !deleted.has(id))).toEqual([]);
      expect(await count('messages', 'd2')).toBe(0);
    });

    it("purges every session of one owner and leaves other owners' and other tenants' untouched", async () => {
      const victimA = await create({ tenantId: 'p1', ownerId: 'victim' });
      const victimB = await create({ tenantId: 'p1', ownerId: 'victim', externalId: 'x' });
      const bystander = await create({ tenantId: 'p1', ownerId: 'bystander' });
      const elsewhere = await create({ tenantId: 'p2', ownerId: 'victim' });
      const [u1] = await append(victimA, [user('a'), assistant('b')]);
      const [u2] = await append(victimB, [user('c')]);
      await append(bystander, [user('d'), assistant('e')]);
      await append(elsewhere, [user('f')]);
      await inTransaction(store, (trx) =>
        sessions.closeMemCell(trx, 'p1', victimA.id, { throughSequence: 2, reason: 'FLUSH' }),
      );
      const outboxBefore = (await outboxOf('p1')).length;

      const purged = await inTransaction(store, (trx) => sessions.purgeOwner(trx, 'p1', 'victim'));
      expect(purged).toEqual({ sessions: 2, messages: 3, memCells: 1, sessionStates: 0 });
      expect(await sessions.get('p1', victimA.id)).toBeUndefined();
      expect(await sessions.get('p1', victimB.id)).toBeUndefined();
      expect(await sessions.get('p1', bystander.id)).toEqual(await reread(bystander));
      expect((await sessions.listMessages('p1', bystander.id, {}, { pageSize: 10 })).items).toHaveLength(2);
      expect((await sessions.listMessages('p2', elsewhere.id, {}, { pageSize: 10 })).items).toHaveLength(1);
      expect(await count('messages', 'p1')).toBe(2);
      expect(await count('sessions', 'p2')).toBe(1);

      const enqueued = (await outboxOf('p1')).slice(outboxBefore);
      expect(
        enqueued
          .filter((e) => e.kind === 'ROUND')
          .map((e) => [e.id, e.op])
          .sort(),
      ).toEqual(
        [
          [u1!.id, 'DELETE'],
          [u2!.id, 'DELETE'],
        ].sort(),
      );
      expect(
        enqueued
          .filter((e) => e.kind === 'SESSION')
          .map((e) => e.id)
          .sort(),
      ).toEqual([victimA.id, victimB.id].sort());
      expect(await inTransaction(store, (trx) => sessions.purgeOwner(trx, 'p1', 'victim'))).toEqual({
        sessions: 0,
        messages: 0,
        memCells: 0,
        sessionStates: 0,
      });
    });
  });

  describe('hand-off schedule, activity order and compaction mark', () => {
    it('offers a failed cell again only when its retry is due, and finds interrupted attempts', async () => {
      const session = await create({ tenantId: 'h1' });
      await append(session, [user('a', { occurredAt: 500 }), assistant('b', { occurredAt: 900 })], {}, 1_000);
      const cell = await inTransaction(store, (trx) =>
        sessions.closeMemCell(
          trx,
          'h1',
          session.id,
          { throughSequence: 2, reason: 'FLUSH', note: 'bye' },
          1_000,
        ),
      );
      expect(cell).toMatchObject({
        boundaryNote: 'bye',
        openedAt: 500,
        lastMessageAt: 900,
        lastErrorReason: '',
      });
      const due = async (now: number) => (await sessions.dueMemCells(1_000, now)).map((c) => c.id);
      expect(await due(1_000)).toContain(cell.id);
      const taken = await inTransaction(store, (trx) =>
        sessions.updateMemCellStatus(
          trx,
          'h1',
          cell.id,
          { status: 'EXTRACTING', attempts: 1, expectedStatus: 'PENDING' },
          2_000,
        ),
      );
      expect(await due(2_000)).not.toContain(cell.id);
      expect((await sessions.staleExtractingMemCells(10, 2_001)).map((c) => c.id)).toContain(taken.id);
      expect((await sessions.staleExtractingMemCells(10, 2_000)).map((c) => c.id)).not.toContain(taken.id);
      const retry = await inTransaction(store, (trx) =>
        sessions.updateMemCellStatus(
          trx,
          'h1',
          cell.id,
          {
            status: 'PENDING',
            lastError: 'governance unreachable',
            lastErrorReason: 'DEPENDENCY_UNAVAILABLE',
            nextAttemptAt: 10_000,
            expectedStatus: 'EXTRACTING',
          },
          3_000,
        ),
      );
      expect(retry).toMatchObject({ nextAttemptAt: 10_000, lastErrorReason: 'DEPENDENCY_UNAVAILABLE' });
      expect(await due(9_999)).not.toContain(cell.id);
      expect(await due(10_000)).toContain(cell.id);
      expect(await sessions.getMemCell('h1', session.id, cell.id)).toEqual(retry);
      const cleared = await inTransaction(store, (trx) =>
        sessions.updateMemCellStatus(trx, 'h1', cell.id, {
          status: 'EXTRACTING',
          attempts: 2,
          nextAttemptAt: null,
        }),
      );
      expect(cleared.nextAttemptAt).toBeUndefined();
    });

    it('lists sessions by last activity, then id, across pages', async () => {
      const a = await create({ tenantId: 'h2' }, 1_000);
      const b = await create({ tenantId: 'h2' }, 2_000);
      const c = await create({ tenantId: 'h2' }, 3_000);
      await append(a, [user('latest', { occurredAt: 5_000 })], {}, 5_000);
      const names: string[] = [];
      let pageToken = '';
      do {
        const page = await sessions.list('h2', 'alice', {}, { pageSize: 1, pageToken });
        names.push(...page.items.map((s) => s.id));
        pageToken = page.nextPageToken;
      } while (pageToken !== '');
      expect(names).toEqual([a.id, c.id, b.id]);
    });

    it('reports the compaction mark', async () => {
      const session = await create({ tenantId: 'h3' });
      await append(session, [user('a'), assistant('b'), user('c')]);
      expect(await sessions.compactionMark('h3', session.id)).toBe(0);
      await inTransaction(store, (trx) => sessions.markCompacted(trx, 'h3', session.id, 2));
      expect(await sessions.compactionMark('h3', session.id)).toBe(2);
    });
  });
});
