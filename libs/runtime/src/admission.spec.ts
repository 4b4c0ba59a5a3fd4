import { Code } from '@connectrpc/connect';
import { describe, expect, it } from '@jest/globals';
import { RetryInfoSchema } from '@engram/contracts/grpc';
import { EngramError, errorInfoOf, toConnectError } from '@engram/errors';
import { PrincipalAdmission, burstOf } from './admission.js';
import type { Principal } from './auth.js';

const principal = (subject: string, tenantId = 't1'): Principal => ({
  subject,
  tenantId,
  orgIds: [],
  roles: [],
  token: '',
});

function refusal(run: () => unknown): EngramError {
  try {
    run();
  } catch (error) {
    if (error instanceof EngramError) return error;
    throw error;
  }
  throw new Error('expected the call to be refused');
}

describe('PrincipalAdmission', () => {
  it('refuses a principal over its concurrency limit while another principal is admitted', () => {
    const admission = new PrincipalAdmission({ maxConcurrent: 2, ratePerMinute: 0 }, { name: 'documents' });
    const a1 = admission.admit(principal('alice'), 'IngestDocument');
    admission.admit(principal('alice'), 'IngestDocument');
    const refused = refusal(() => admission.admit(principal('alice'), 'IngestDocument'));
    expect(refused.code).toBe(Code.ResourceExhausted);
    expect(refused.reason).toBe('RATE_LIMITED');
    expect(refused.metadata).toMatchObject({ limit: 'concurrency', method: 'IngestDocument' });
    expect(refused.retryDelayMs).toBeGreaterThan(0);
    // Another subject, and the same subject in another tenant, are counted apart.
    expect(() => admission.admit(principal('bob'), 'IngestDocument')).not.toThrow();
    expect(() => admission.admit(principal('alice', 't2'), 'IngestDocument')).not.toThrow();
    // A released slot admits again; releasing twice frees one slot only.
    a1.release();
    a1.release();
    admission.admit(principal('alice'), 'IngestDocument');
    expect(() => admission.admit(principal('alice'), 'IngestDocument')).toThrow(EngramError);
  });

  it('refuses calls over the rate with the delay until the next one is due, and refills', () => {
    let now = 0;
    const admission = new PrincipalAdmission(
      { maxConcurrent: 0, ratePerMinute: 60 },
      { name: 'documents', now: () => now },
    );
    expect(burstOf(60)).toBe(10);
    for (let i = 0; i < 10; i++) admission.admit(principal('alice'), 'AppendMessages').release();
    const refused = refusal(() => admission.admit(principal('alice'), 'AppendMessages'));
    expect(refused.metadata).toMatchObject({ limit: 'rate', per_minute: 60, retry_after_ms: 1000 });
    expect(refused.retryDelayMs).toBe(1000);
    now += 400;
    expect(refusal(() => admission.admit(principal('alice'), 'AppendMessages')).retryDelayMs).toBe(600);
    now += 600;
    expect(() => admission.admit(principal('alice'), 'AppendMessages')).not.toThrow();
  });

  it('turns a limit of 0 off', () => {
    const admission = new PrincipalAdmission({ maxConcurrent: 0, ratePerMinute: 0 }, { name: 'x' });
    for (let i = 0; i < 1000; i++) admission.admit(principal('alice'), 'IngestDocument');
  });

  it('is answered as RESOURCE_EXHAUSTED with ErrorInfo RATE_LIMITED and a google.rpc.RetryInfo', () => {
    const admission = new PrincipalAdmission(
      { maxConcurrent: 1, ratePerMinute: 0 },
      { name: 'x', busyRetryMs: 1500 },
    );
    admission.admit(principal('alice'), 'StreamIngestDocument');
    const { error } = toConnectError(
      refusal(() => admission.admit(principal('alice'), 'StreamIngestDocument')),
      { domain: 'engram.ingestion', requestId: 'r' },
    );
    expect(error.code).toBe(Code.ResourceExhausted);
    expect(errorInfoOf(error)?.reason).toBe('RATE_LIMITED');
    const retry = error.findDetails(RetryInfoSchema)[0];
    expect(retry?.retryDelay?.seconds).toBe(1n);
    expect(retry?.retryDelay?.nanos).toBe(500_000_000);
  });
});
