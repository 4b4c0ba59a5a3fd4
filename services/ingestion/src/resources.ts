import { mkdirSync } from 'node:fs';
import type { Transport } from '@connectrpc/connect';
import { GovernanceService } from '@engram/contracts/governance';
import { loadTenantPolicies, serviceClient, type Logger, type ServiceCredentials } from '@engram/runtime';
import { isMysqlTarget, openStore, storeTarget, type Store } from '@engram/store';
import type { IngestionDataConfig } from './config.js';
import { DEFAULT_CHUNK_SIZE, DEFAULT_OVERLAP } from './domain/chunker.js';
import { ExtractionHandOff } from './handoff.js';
import { Segmenter, type BoundaryJudge } from './segmenter.js';
import type { IngestionDeps } from './ingestion-service.js';

/** Everything the ingestion service runs on, opened from configuration. */
export interface IngestionResources {
  readonly store: Store;
  readonly settings: IngestionDeps['settings'];
  /**
   * Starts the background work: the durable hand-off of MemCells to governance over `transport`
   * (the network, or the all-in-one's in-process transport) with the process's service
   * credentials, and the asynchronous boundary detection (the judge, the silence sweep).
   */
  startWorkers(options: {
    readonly transport: Transport;
    readonly credentials: ServiceCredentials;
    readonly logger: Logger;
    readonly judge?: BoundaryJudge;
  }): { handOff: ExtractionHandOff; segmenter: Segmenter };
  close(): Promise<void>;
}

/** Opens ingestion's connection to the source of truth and resolves its settings. */
export function openIngestionResources(
  config: IngestionDataConfig & { readonly ENGRAM_TENANT_POLICY_FILE?: string | undefined },
): IngestionResources {
  const tenants = loadTenantPolicies(config.ENGRAM_TENANT_POLICY_FILE);
  const target = storeTarget(config);
  if (!isMysqlTarget(target)) mkdirSync(config.ENGRAM_DATA_DIR, { recursive: true, mode: 0o700 });
  const store = openStore({ target });
  let workers: { handOff: ExtractionHandOff; segmenter: Segmenter } | undefined;
  return {
    store,
    settings: {
      maxDocumentBytes: config.ENGRAM_MAX_DOCUMENT_BYTES,
      chunkSize: config.ENGRAM_CHUNK_SIZE ?? DEFAULT_CHUNK_SIZE,
      overlap: DEFAULT_OVERLAP,
      // The tenant's setting (ENGRAM_TENANT_POLICY_FILE), else the server's.
      redactSecrets: (tenantId) =>
        tenants.settings(tenantId).redactSecrets ?? config.ENGRAM_REDACT_SECRETS === 'on',
      boundaries: {
        timeGapMs: config.ENGRAM_BOUNDARY_GAP_MINUTES * 60_000,
        tokenCap: config.ENGRAM_BOUNDARY_TOKEN_CAP,
        messageCap: config.ENGRAM_BOUNDARY_MESSAGE_CAP,
      },
    },
    startWorkers({ transport, credentials, logger, judge }) {
      if (workers !== undefined) return workers;
      const handOff = new ExtractionHandOff({
        store,
        governance: serviceClient(GovernanceService, transport),
        credentials,
        logger: logger.child({ component: 'extraction-handoff' }),
        settings: { maxAttempts: config.ENGRAM_EXTRACTION_MAX_ATTEMPTS },
      });
      const segmenter = new Segmenter({
        store,
        rules: this.settings.boundaries,
        ...(judge !== undefined ? { judge } : {}),
        handOff,
        logger: logger.child({ component: 'segmenter' }),
      });
      handOff.start();
      segmenter.start();
      workers = { handOff, segmenter };
      return workers;
    },
    async close() {
      await workers?.segmenter.stop();
      await workers?.handOff.stop();
      await store.close();
    },
  };
}
