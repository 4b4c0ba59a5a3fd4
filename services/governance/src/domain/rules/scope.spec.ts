import { describe, expect, it } from '@jest/globals';
import { context, evaluationOf, fact } from '../../../test/fixtures/rules.js';
import { judge } from './engine.js';
import { resolvePolicy } from './policy.js';

describe('rule scope_authorization', () => {
  it('resolves a missing hint to SELF, owned by the owner of the context', async () => {
    const [judgement] = await judge([fact()], context({ owner: 'user-1' }));
    expect(judgement?.memory).toMatchObject({ scope: 'SELF', orgId: '', ownerId: 'user-1', tenantId: 't1' });
  });

  it('allows ORG for a member of the org', async () => {
    const [judgement] = await judge([fact({ scopeHint: 'ORG', orgId: 'org-a' })], context());
    expect(evaluationOf(judgement, 'scope_authorization')).toMatchObject({
      verdict: 'PASSED',
      note: 'ORG org-a',
    });
    expect(judgement?.memory).toMatchObject({ scope: 'ORG', orgId: 'org-a' });
  });

  it('refuses ORG for a non-member with SCOPE_NOT_ALLOWED', async () => {
    const [judgement] = await judge([fact({ scopeHint: 'ORG', orgId: 'org-b' })], context());
    expect(judgement?.outcome).toBe('REJECTED');
    expect(judgement?.decidingRule).toBe('scope_authorization');
    expect(judgement?.rejection).toEqual({
      reason: 'SCOPE_NOT_ALLOWED',
      field: 'scope_hint',
      details: { scope: 'ORG', org_id: 'org-b' },
    });
    expect(judgement?.memory).toBeUndefined();
  });

  it('refuses PLATFORM without the platform role', async () => {
    const [judgement] = await judge([fact({ scopeHint: 'PLATFORM' })], context());
    expect(judgement?.outcome).toBe('REJECTED');
    expect(judgement?.rejection?.reason).toBe('SCOPE_NOT_ALLOWED');
    expect(judgement?.reason).toBe(
      'Rejected by scope_authorization: PLATFORM scope not allowed: the caller does not have the platform role.',
    );
  });

  it('allows PLATFORM with the platform role', async () => {
    const principal = { subject: 'op-1', tenantId: 't1', orgIds: [], roles: ['platform'] };
    const [judgement] = await judge([fact({ scopeHint: 'PLATFORM' })], context({ principal, owner: 'op-1' }));
    expect(judgement?.outcome).toBe('ACCEPTED');
    expect(judgement?.memory).toMatchObject({ scope: 'PLATFORM', orgId: '', ownerId: 'op-1' });
  });

  it('does not take the admin role for the platform role', async () => {
    const principal = { subject: 'user-1', tenantId: 't1', orgIds: [], roles: ['admin', 'service'] };
    const [judgement] = await judge([fact({ scopeHint: 'PLATFORM' })], context({ principal }));
    expect(judgement?.outcome).toBe('REJECTED');
  });

  it('narrows what cannot be granted to SELF when the policy says so', async () => {
    const policy = resolvePolicy({ scopeDenied: 'NARROW_TO_SELF' });
    const [org, platform] = await judge(
      [fact({ scopeHint: 'ORG', orgId: 'org-b' }), fact({ key: 'tone', scopeHint: 'PLATFORM' })],
      context({ policy }),
    );
    expect(evaluationOf(org, 'scope_authorization')).toMatchObject({
      verdict: 'ADJUSTED',
      note: 'ORG narrowed to SELF: the caller is not a member of org org-b',
    });
    expect(org?.memory).toMatchObject({ scope: 'SELF', orgId: '' });
    expect(platform?.memory).toMatchObject({ scope: 'SELF', orgId: '' });
  });

  it('always narrows extracted memories to SELF, even for a member or a platform operator', async () => {
    const principal = {
      subject: 'ingestion',
      tenantId: 't1',
      orgIds: ['org-a'],
      roles: ['service', 'platform'],
    };
    const [org, platform] = await judge(
      [fact({ scopeHint: 'ORG', orgId: 'org-a' }), fact({ key: 'tone', scopeHint: 'PLATFORM' })],
      context({ mode: 'extract', principal, owner: 'user-7' }),
    );
    expect(evaluationOf(org, 'scope_authorization')).toMatchObject({
      verdict: 'ADJUSTED',
      note: 'ORG hint narrowed to SELF: extracted memories are always SELF-scoped',
    });
    expect(org?.memory).toMatchObject({ scope: 'SELF', orgId: '', ownerId: 'user-7' });
    expect(platform?.memory).toMatchObject({ scope: 'SELF', ownerId: 'user-7' });
  });
});
