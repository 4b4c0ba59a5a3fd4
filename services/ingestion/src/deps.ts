import type { AdmissionLimits, Logger } from '@engram/runtime';
import type { Store } from '@engram/store';
import type { BoundaryRules } from './domain/boundaries.js';
import type { ExtractionHandOff } from './handoff.js';

/** Ingestion's settings, resolved once from configuration (`openIngestionResources`). */
export interface IngestionSettings {
  /** Largest document in one IngestDocument request, bytes. */
  readonly maxDocumentBytes: number;
  /** Default chunk size and overlap, code points. */
  readonly chunkSize: number;
  readonly overlap: number;
  /** Redact secrets before anything is stored (the tenant's setting, else the server's). */
  readonly redactSecrets: (tenantId: string) => boolean;
  /** Thresholds of the rule-based MemCell boundaries. */
  readonly boundaries: BoundaryRules;
  /** Extraction attempts per MemCell before it becomes FAILED. */
  readonly maxExtractionAttempts: number;
  /** Per-principal limits of document ingestions and of AppendMessages (decision 0026). */
  readonly admission: { readonly documents: AdmissionLimits; readonly appends: AdmissionLimits };
}

/** What the handler classes are built from (assembled by `ingestionModule`). */
export interface IngestionDeps {
  readonly logger: Logger;
  readonly store: Store;
  readonly settings: IngestionSettings;
  /** The durable hand-off of closed MemCells to governance: woken after commits that close cells. */
  readonly handOff: Pick<ExtractionHandOff, 'wake' | 'settled'>;
  /** Told when a session's open tail grew (the asynchronous boundary judge). */
  readonly onTailGrew: (tenantId: string, sessionId: string) => void;
}
