import type { Migration } from 'kysely';
import * as initial from './0001-initial.js';
import * as sessionActivity from './0002-session-activity-and-handoff.js';
import * as forgetReceipts from './0003-forget-receipts.js';
import * as sessionStateCompaction from './0004-session-state-compaction.js';

/**
 * Every migration, in order. Versioned, forward-only and checked in: a released migration is
 * never edited; a change is a new entry here.
 */
export const migrations: Readonly<Record<string, Migration>> = {
  '0001-initial': initial,
  '0002-session-activity-and-handoff': sessionActivity,
  '0003-forget-receipts': forgetReceipts,
  '0004-session-state-compaction': sessionStateCompaction,
};
