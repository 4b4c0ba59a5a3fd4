/**
 * The governance domain's vocabulary, shared by the extractors (soft rules: they propose
 * candidates) and the hard rules (they decide what is written). Independent of protobuf and of
 * the store; times are UTC epoch milliseconds.
 */
import type { JsonValue, MemoryType, Scope, SourceKind } from '@engram/store';

export type { JsonValue, MemoryType, Scope, SourceKind };

/** The extractors of blueprint §3 flow 1 (`engram.governance.v1.Extractor`). */
export type ExtractorName = 'EPISODE' | 'EVENT' | 'FORESIGHT' | 'FACT';

/** A message of the MemCell being extracted, as extractors read it. */
export interface SourceMessage {
  /** The message id (ULID), cited as evidence. */
  readonly id: string;
  readonly sequence: number;
  readonly role: 'USER' | 'ASSISTANT' | 'SYSTEM' | 'TOOL';
  /** Already redacted by ingestion when redaction is on. */
  readonly content: string;
  /** When it was said: relative dates ("tomorrow", "下周三", "next 30 days") resolve against it. */
  readonly occurredAt: number;
  readonly participantName?: string;
}

/** What an extractor works on: one closed MemCell of a session. */
export interface ExtractionInput {
  readonly memCellId: string;
  readonly sessionId: string;
  /** BCP-47 hint from the session ('' = detect per message). */
  readonly languageCode: string;
  /** IANA zone of the session (how dates are rendered and calendar days computed). */
  readonly timeZone: string;
  readonly messages: readonly SourceMessage[];
}

/**
 * A proposed memory (`engram.governance.v1.CandidateMemory`): what soft rules produce and hard
 * rules judge. Optional fields are absent when the proposer did not set them.
 */
export interface Candidate {
  readonly type: MemoryType;
  /** FACT only: a category such as `user_preference`, `profile`, `relationship`, `goal`. */
  readonly namespace?: string;
  /** FACT only: the slot within the namespace, e.g. `answer_style`, `current_goal`. */
  readonly key?: string;
  /** FACT only: structured value (a JSON object). */
  readonly value?: JsonValue;
  /** The text rendering (what is embedded and shown); required by the schema rule. */
  readonly text: string;
  readonly languageCode?: string;
  readonly sourceKind: SourceKind;
  /** The scope the proposer suggests; authorization decides. Default SELF. */
  readonly scopeHint?: Scope;
  readonly orgId?: string;
  /** 0–1. */
  readonly confidence: number;
  /** Suggested lifetime, ms, with the reason (e.g. `the user said "next 30 days"`). */
  readonly ttlHintMs?: number;
  readonly ttlReason?: string;
  /** An explicit expiry (ProposeMemories); the TTL rule still caps it. */
  readonly expiresAt?: number;
  readonly occurredAt?: number;
  readonly validFrom?: number;
  readonly validUntil?: number;
  readonly evidence: {
    readonly messageIds: readonly string[];
    /** The session of the message and MemCell ids (see the store's `Evidence`). */
    readonly sessionId?: string;
    readonly memCellId?: string;
    readonly chunkIds?: readonly string[];
    /** A short quote of the source, ≤ 500 characters. */
    readonly excerpt?: string;
  };
  readonly evergreen?: boolean;
  readonly metadata?: Readonly<Record<string, string>>;
}
