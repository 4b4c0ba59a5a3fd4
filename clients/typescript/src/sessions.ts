import type { MessageInitShape } from '@bufbuild/protobuf';
import {
  IngestionService,
  type AppendMessagesRequestSchema,
  type AppendMessagesResponse,
  type DeleteSessionResponse,
  type FlushSessionRequestSchema,
  type FlushSessionResponse,
  type ListMessagesRequestSchema,
  type ListSessionsRequestSchema,
  type Message,
  type MessageSchema,
  type Session,
  type SessionSchema,
} from '@engram/contracts/ingestion';
import type { CallOptions, Caller, FieldsOf } from './caller.js';
import { answered } from './errors.js';
import { Paginated } from './pagination.js';

/** A session to create: `displayName`, `externalId`, `languageCode`, `timeZone`, `metadata`. */
export type SessionInit = MessageInitShape<typeof SessionSchema>;
/** A message to append: `role`, `content`, and optionally `toolCalls`, `toolCallId`, `metadata`, … */
export type MessageInit = MessageInitShape<typeof MessageSchema>;
/** What `sessions.list` takes: filters and page size. */
export type ListSessionsInit = Omit<FieldsOf<typeof ListSessionsRequestSchema>, 'pageToken'>;
/** What `sessions.messages` takes besides the session: filters, order and page size. */
export type ListMessagesInit = Omit<FieldsOf<typeof ListMessagesRequestSchema>, 'pageToken' | 'parent'>;
/** What `sessions.append` takes besides the session and messages: `requestId`, `expectedLastSequence`. */
export type AppendOptions = Omit<FieldsOf<typeof AppendMessagesRequestSchema>, 'parent' | 'messages'>;
/** What `sessions.flush` takes besides the session: `waitForExtraction`, … */
export type FlushOptions = Omit<FieldsOf<typeof FlushSessionRequestSchema>, 'name'>;

/** Sessions and their messages (engram.ingestion.v1). */
export class Sessions {
  readonly #caller: Caller;

  constructor(caller: Caller) {
    this.#caller = caller;
  }

  /** Creates a session (every field optional); retried safely with one `requestId`. */
  async create(session: SessionInit = {}, requestId?: string, options?: CallOptions): Promise<Session> {
    const response = await this.#caller.unary(
      IngestionService.method.createSession,
      { session, requestId: requestId ?? '' },
      options,
    );
    return answered(response.session, 'session');
  }

  /** One session by name (`sessions/{id}`). */
  async get(name: string, options?: CallOptions): Promise<Session> {
    const response = await this.#caller.unary(IngestionService.method.getSession, { name }, options);
    return answered(response.session, 'session');
  }

  /** The caller's sessions, page by page. */
  list(request: ListSessionsInit = {}, options?: CallOptions): Paginated<Session> {
    return new Paginated(async (pageToken) => {
      const response = await this.#caller.unary(
        IngestionService.method.listSessions,
        { ...request, pageToken },
        options,
      );
      return { items: response.sessions, nextPageToken: response.nextPageToken };
    });
  }

  /** Appends messages to the session `parent` in one atomic write, retried safely with one `requestId`. */
  append(
    parent: string,
    messages: readonly MessageInit[],
    request: AppendOptions = {},
    options?: CallOptions,
  ): Promise<AppendMessagesResponse> {
    return this.#caller.unary(
      IngestionService.method.appendMessages,
      { ...request, parent, messages: [...messages] },
      options,
    );
  }

  /** The messages of the session `parent`, oldest first unless `newestFirst`, page by page. */
  messages(parent: string, request: ListMessagesInit = {}, options?: CallOptions): Paginated<Message> {
    return new Paginated(async (pageToken) => {
      const response = await this.#caller.unary(
        IngestionService.method.listMessages,
        { ...request, parent, pageToken },
        options,
      );
      return { items: response.messages, nextPageToken: response.nextPageToken };
    });
  }

  /** Closes the session's open MemCell so its memories are extracted now. */
  flush(name: string, request: FlushOptions = {}, options?: CallOptions): Promise<FlushSessionResponse> {
    return this.#caller.unary(IngestionService.method.flushSession, { ...request, name }, options);
  }

  /** Deletes a session. */
  delete(name: string, etag = '', options?: CallOptions): Promise<DeleteSessionResponse> {
    return this.#caller.unary(IngestionService.method.deleteSession, { name, etag }, options);
  }
}
