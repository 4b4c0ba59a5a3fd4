import { describe, expect, it } from '@jest/globals';
import { ContextService } from '@engram/contracts/context';
import { GovernanceService } from '@engram/contracts/governance';
import { IngestionService } from '@engram/contracts/ingestion';
import { RetrievalService } from '@engram/contracts/retrieval';
import {
  SERVICE_NAMES,
  driftTone,
  durationSeconds,
  formatDrift,
  formatSeconds,
  jobFinished,
  jobProgress,
  newRequestId,
  optionalCount,
  serviceLabel,
  servingTone,
} from './model.js';

describe('services', () => {
  it('are the four descriptors’ gRPC names, labelled by their package', () => {
    expect([...SERVICE_NAMES].sort()).toEqual(
      [GovernanceService, IngestionService, RetrievalService, ContextService].map((s) => s.typeName).sort(),
    );
    expect(SERVICE_NAMES.map(serviceLabel)).toEqual(['governance', 'ingestion', 'retrieval', 'context']);
    expect(serviceLabel('grpc.health.v1.Health')).toBe('grpc.health.v1.Health');
  });
  it('tone SERVING ok and every failure warn', () => {
    expect(servingTone('SERVING')).toBe('ok');
    expect(servingTone('NOT_SERVING')).toBe('warn');
    expect(servingTone('SERVICE_UNKNOWN')).toBe('warn');
    expect(servingTone('UNREACHABLE')).toBe('warn');
    expect(servingTone('checking…')).toBe('plain');
  });
});

describe('index figures', () => {
  it('show drift signed, and unset counts as a dash', () => {
    expect(formatDrift(3n)).toBe('+3');
    expect(formatDrift(-2n)).toBe('−2');
    expect(formatDrift(0n)).toBe('0');
    expect(formatDrift(undefined)).toBe('—');
    expect(driftTone(0n)).toBe('ok');
    expect(driftTone(-1n)).toBe('warn');
    expect(driftTone(undefined)).toBe('plain');
    expect(optionalCount(5n)).toBe('5');
    expect(optionalCount(undefined)).toBe('—');
  });
  it('format the lag', () => {
    expect(durationSeconds({ seconds: 2n, nanos: 500_000_000 })).toBe(2.5);
    expect(durationSeconds(undefined)).toBeUndefined();
    expect(formatSeconds(2.5)).toBe('2.5 s');
    expect(formatSeconds(42)).toBe('42 s');
    expect(formatSeconds(125)).toBe('2 min 5 s');
    expect(formatSeconds(3_725)).toBe('1 h 2 min');
    expect(formatSeconds(undefined)).toBe('—');
  });
});

describe('reindex jobs', () => {
  it('are finished in a terminal state and progress by rows scanned', () => {
    expect(jobFinished('SUCCEEDED')).toBe(true);
    expect(jobFinished('FAILED')).toBe(true);
    expect(jobFinished('CANCELLED')).toBe(true);
    expect(jobFinished('RUNNING')).toBe(false);
    expect(jobProgress(5n, 10n, 'RUNNING')).toBe(0.5);
    expect(jobProgress(12n, 10n, 'RUNNING')).toBe(1);
    expect(jobProgress(0n, 0n, 'PENDING')).toBeUndefined();
    expect(jobProgress(0n, 0n, 'SUCCEEDED')).toBe(1);
  });
  it('get a request id the server accepts', () => {
    expect(newRequestId(() => '0f8e2c1a-1b2c-4d5e-8f90-123456789abc')).toBe(
      '0f8e2c1a-1b2c-4d5e-8f90-123456789abc',
    );
    expect(newRequestId(() => 'a b/c'.repeat(30))).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
  });
});
