/**
 * Seed data of the sustained-load benchmark, so Search and BuildContext have something to find:
 * per user (tenant `bench`, subjects `load-u<i>`) one Markdown document (IngestDocument, waiting for
 * the index) and one conversation of 12 turns with preferences, goals and facts, flushed with
 * `wait_for_extraction` (so governance extracts memories); then it waits until the index outbox is
 * drained. The generator's own sessions (one per client, for AppendMessages and BuildContext) are
 * created by `clientSessions`. Also the query texts the clients draw from.
 */
import { Code, ConnectError, createClient, type Transport } from '@connectrpc/connect';
import { ItemKind } from '@engram/contracts/common';
import { GovernanceService } from '@engram/contracts/governance';
import { IngestionService, MessageRole } from '@engram/contracts/ingestion';
import { RetrievalService } from '@engram/contracts/retrieval';

/** Call options carrying a bearer token. */
export interface Auth {
  readonly headers: { authorization: string };
}

export const TOPICS = [
  'green tea',
  'the trip to Lisbon in May',
  'marathon training',
  'learning the piano',
  'the Rust rewrite of the billing service',
  'Kubernetes upgrades',
  'cooking fresh pasta',
  'the monthly budget',
  'the product launch deadline',
  'sleep schedule',
  'Spanish lessons',
  'the home office setup',
  '周末去杭州旅行',
  '每天喝绿茶',
  '学习机器学习',
  '项目上线计划',
] as const;

const PREFIXES = [
  'what do I know about',
  'remind me about',
  'notes on',
  'what did I say about',
  'my plans for',
  'anything about',
  'how should I approach',
  'summary of',
];

/** Query `i` of a deterministic, varied set (prefix × topic). */
export function queryText(i: number): string {
  const topic = TOPICS[i % TOPICS.length]!;
  const prefix = PREFIXES[Math.floor(i / TOPICS.length) % PREFIXES.length]!;
  return /[\u4e00-\u9fff]/.test(topic) ? `${topic}怎么样` : `${prefix} ${topic}`;
}

function documentText(user: number): string {
  const sections = TOPICS.map((topic, t) => {
    const n = (user * 7 + t) % 11;
    return /[\u4e00-\u9fff]/.test(topic)
      ? `## ${topic}\n\n关于${topic}的笔记：第${n + 1}周的安排，需要提前准备，注意预算和时间。${topic}是用户${user}最近关心的事情。\n`
      : `## Notes on ${topic}\n\nUser ${user} keeps notes on ${topic}: week ${n + 1} of the plan, what worked, what did not, ` +
          `and the next three steps. The key decision about ${topic} is due by the end of the month; ` +
          `costs stay under ${100 + n * 25} euros.\n`;
  });
  return `# Personal notes of load user ${user}\n\n${sections.join('\n')}`;
}

function conversation(user: number): { role: MessageRole; content: string }[] {
  const t = (k: number) => TOPICS[(user + k) % 12]!; // English topics only
  const turns = [
    `From now on please answer more concisely.`,
    `Understood, I will keep answers short.`,
    `My goal for the next 30 days is to make progress on ${t(0)}.`,
    `That sounds like a good goal. Do you want a weekly plan?`,
    `I prefer ${t(1)} over ${t(2)} on weekends.`,
    `Noted: weekends are for ${t(1)}.`,
    `I live in Porto and I work as a software engineer.`,
    `Thanks, that helps me tailor suggestions.`,
    `Next Tuesday I have a meeting about ${t(3)}.`,
    `I will remember the meeting about ${t(3)}.`,
    `I don't like long emails; keep summaries under five bullet points.`,
    `Got it: five bullet points at most.`,
  ];
  return turns.map((content, i) => ({
    role: i % 2 === 0 ? MessageRole.USER : MessageRole.ASSISTANT,
    content,
  }));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Calls `fn`, retrying ABORTED ("a concurrent change conflicted with this one; retry": a MariaDB
 * deadlock) and UNAVAILABLE (SQLite: "database is locked" when several processes write) up to 8
 * times with a growing pause; counts the retries per code in `retries`. Seeding only: the load
 * itself never retries, it counts.
 */
async function retryConflicts<T>(fn: () => Promise<T>, retries: Record<string, number>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (error) {
      const retryable =
        error instanceof ConnectError && (error.code === Code.Aborted || error.code === Code.Unavailable);
      if (!retryable || attempt >= 8) throw error;
      const name = Code[error.code];
      retries[name] = (retries[name] ?? 0) + 1;
      await sleep(200 * attempt);
    }
  }
}

export interface SeedResult {
  readonly users: number;
  readonly documents: number;
  readonly messages: number;
  readonly memories: number;
  /** Per item kind at the end: source rows / indexed points. */
  readonly index: Record<string, string>;
  /** Seed calls retried, per code (ABORTED: MariaDB deadlocks; UNAVAILABLE: SQLite locked). */
  readonly retries: Record<string, number>;
  readonly ms: number;
}

/** Seeds `users` users (`parallel` at a time) and waits for the index to drain. */
export async function seed(
  transports: { ingestion: Transport; retrieval: Transport; governance: Transport },
  as: (subject: string, roles?: ('admin' | 'service')[]) => Promise<Auth>,
  users: number,
  parallel: 1 | 2,
  log: (line: string) => void,
): Promise<SeedResult> {
  const start = Date.now();
  const ingestion = createClient(IngestionService, transports.ingestion);
  const retrieval = createClient(RetrievalService, transports.retrieval);
  const governance = createClient(GovernanceService, transports.governance);
  let messages = 0;
  const retries: Record<string, number> = {};
  const one = async (u: number) => {
    const auth = await as(`load-u${u}`);
    await retryConflicts(
      () =>
        ingestion.ingestDocument(
          {
            document: { displayName: `notes-${u}.md`, mimeType: 'text/markdown' },
            content: new TextEncoder().encode(documentText(u)),
            waitForIndex: true,
            requestId: `load-doc-${u}`,
          },
          { ...auth, timeoutMs: 180_000 },
        ),
      retries,
    );
    const { session } = await retryConflicts(
      () => ingestion.createSession({ session: { displayName: `history ${u}` } }, auth),
      retries,
    );
    const turns = conversation(u);
    await retryConflicts(
      () =>
        ingestion.appendMessages(
          { parent: session!.name, messages: turns, requestId: `load-seed-${u}` },
          auth,
        ),
      retries,
    );
    messages += turns.length;
    await retryConflicts(
      () =>
        ingestion.flushSession(
          { name: session!.name, reason: 'load seed', waitForExtraction: true, requestId: `load-flush-${u}` },
          { ...auth, timeoutMs: 180_000 },
        ),
      retries,
    );
  };
  for (let u = 0; u < users; u += parallel) {
    const batch = Array.from({ length: Math.min(parallel, users - u) }, (_, i) => u + i);
    await Promise.all(batch.map(one));
    log(`  seeded user${batch.length > 1 ? 's' : ''} ${batch.join('–')}`);
  }
  // Wait until the outbox is drained twice in a row (memories are indexed after extraction).
  const admin = await as('load-admin', ['admin']);
  let index: Record<string, string> = {};
  let drained = 0;
  const deadline = Date.now() + 300_000;
  while (drained < 2) {
    if (Date.now() > deadline) throw new Error('the index outbox did not drain within 5 min after seeding');
    const { indexStatus } = await retrieval.getIndexStatus({}, admin);
    const backlog = Number(indexStatus?.outboxPending ?? 0n) + Number(indexStatus?.outboxRetrying ?? 0n);
    index = Object.fromEntries(
      (indexStatus?.kinds ?? []).map((k) => [ItemKind[k.kind], `${k.sourceRows}/${k.indexedPoints ?? '?'}`]),
    );
    drained = backlog === 0 ? drained + 1 : 0;
    if (drained < 2) await sleep(1000);
  }
  let memories = 0;
  for (let u = 0; u < users; u++) {
    const page = await governance.listMemories({ pageSize: 100 }, await as(`load-u${u}`));
    memories += page.memories.length;
  }
  return {
    users,
    documents: users,
    messages,
    memories,
    index,
    retries,
    ms: Date.now() - start,
  };
}

/** One session per client (as its user) with two seeded turns, for AppendMessages and BuildContext. */
export async function clientSessions(
  transport: Transport,
  as: (subject: string) => Promise<Auth>,
  clients: number,
  userOf: (client: number) => number,
  retries: Record<string, number> = {},
): Promise<string[]> {
  const ingestion = createClient(IngestionService, transport);
  const names: string[] = [];
  for (let c = 0; c < clients; c++) {
    const auth = await as(`load-u${userOf(c)}`);
    const { session } = await retryConflicts(
      () => ingestion.createSession({ session: { displayName: `load client ${c}` } }, auth),
      retries,
    );
    await retryConflicts(
      () =>
        ingestion.appendMessages(
          {
            parent: session!.name,
            requestId: `load-client-${c}`,
            messages: [
              { role: MessageRole.USER, content: `Let's talk about ${TOPICS[c % 12]}.` },
              {
                role: MessageRole.ASSISTANT,
                content: `Sure, what would you like to know about ${TOPICS[c % 12]}?`,
              },
            ],
          },
          auth,
        ),
      retries,
    );
    names.push(session!.name);
  }
  return names;
}
