import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { ConfigError } from '@engram/config';
import { loadTenantPolicies, redactSecretsOf } from './tenant-policy.js';

const file = (content: string) => {
  const path = join(mkdtempSync(join(tmpdir(), 'engram-policy-')), 'tenants.json');
  writeFileSync(path, content);
  return path;
};

describe('loadTenantPolicies', () => {
  it('gives every tenant the defaults without a file', () => {
    expect(loadTenantPolicies(undefined).settings('acme')).toEqual({});
  });

  it('lays a tenant over the default, governance overrides merged per setting', () => {
    const policies = loadTenantPolicies(
      file(
        JSON.stringify({
          default: {
            redactSecrets: true,
            governance: { confidenceThreshold: 0.7, maxEvergreenPerOwner: 50 },
          },
          tenants: { lab: { redactSecrets: false, governance: { confidenceThreshold: 0.9 } } },
        }),
      ),
    );
    expect(policies.tenantIds).toEqual(['lab']);
    expect(policies.settings('lab')).toEqual({
      redactSecrets: false,
      governance: { confidenceThreshold: 0.9, maxEvergreenPerOwner: 50 },
    });
    expect(policies.settings('acme')).toEqual({
      redactSecrets: true,
      governance: { confidenceThreshold: 0.7, maxEvergreenPerOwner: 50 },
    });
  });

  it('fails the start naming the variable for an unreadable or malformed file', () => {
    const malformed = [
      file('{ not json'),
      file(JSON.stringify({ tenants: { lab: { redactSecrets: 'no' } } })),
      file(JSON.stringify({ tenant: {} })),
    ];
    for (const path of [...malformed, '/nonexistent/tenants.json']) {
      let thrown: unknown;
      try {
        loadTenantPolicies(path);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(ConfigError);
      expect((thrown as ConfigError).message).toContain('ENGRAM_TENANT_POLICY_FILE');
    }
  });
});

describe('redactSecretsOf', () => {
  it("takes the tenant's redactSecrets, else the server's setting", () => {
    const policies = loadTenantPolicies(file(JSON.stringify({ tenants: { lab: { redactSecrets: false } } })));
    const on = redactSecretsOf(policies, 'on');
    const off = redactSecretsOf(policies, 'off');
    expect([on('lab'), on('acme'), off('lab'), off('acme')]).toEqual([false, true, false, false]);
  });
});
