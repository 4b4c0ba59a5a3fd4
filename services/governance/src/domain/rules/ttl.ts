/**
 * Rule `ttl_cap`: decides `expiresAt`.
 *
 * 1. The requested expiry: an explicit `expiresAt`; else `ttlHintMs` counted from `occurredAt`
 *    (when the thing was said) or, without one, from the decision time; else, for a FORESIGHT,
 *    its `validUntil`; else the type's default TTL from now (ADJUSTED); else none (never expires).
 * 2. Capped at the type's maximum TTL counted from now (ADJUSTED, with the requested expiry in the
 *    note).
 * 3. An expiry already past (a TTL hint counted from an old message) leaves nothing worth
 *    writing: REJECTED.
 *
 * The transformed candidate carries the final `expiresAt` (and no `ttlHintMs`).
 */
import type { Candidate } from '../candidate.js';
import { redactAll } from './sensitive.js';
import { formatDuration, formatTime } from './text.js';
import type { HardRule, RuleResult } from './types.js';

interface Requested {
  readonly at: number;
  readonly from: string;
  readonly defaulted: boolean;
}

function requestedExpiry(c: Candidate, now: number, defaultTtlMs: number | undefined): Requested | undefined {
  if (c.expiresAt !== undefined) return { at: c.expiresAt, from: 'expire_time', defaulted: false };
  if (c.ttlHintMs !== undefined) {
    const base = c.occurredAt ?? now;
    // The reason is the caller's text: echoed with any secret or personal data redacted.
    const reason = c.ttlReason !== undefined && c.ttlReason !== '' ? ` (${redactAll(c.ttlReason)})` : '';
    const counted = c.occurredAt !== undefined ? 'occur_time' : 'now';
    return {
      at: base + c.ttlHintMs,
      from: `ttl hint ${formatDuration(c.ttlHintMs)} from ${counted}${reason}`,
      defaulted: false,
    };
  }
  if (c.type === 'FORESIGHT' && c.validUntil !== undefined) {
    return { at: c.validUntil, from: 'valid_until_time', defaulted: false };
  }
  if (defaultTtlMs !== undefined) {
    return {
      at: now + defaultTtlMs,
      from: `the ${c.type} default TTL of ${formatDuration(defaultTtlMs)}`,
      defaulted: true,
    };
  }
  return undefined;
}

function withExpiry(c: Candidate, expiresAt: number | undefined): Candidate {
  const { ttlHintMs: _hint, expiresAt: _old, ...rest } = c;
  return expiresAt === undefined ? rest : { ...rest, expiresAt };
}

export const ttlRule: HardRule = {
  name: 'ttl_cap',
  evaluate(candidate, ctx): RuleResult {
    const limit = ctx.policy.ttlLimits[candidate.type] ?? {};
    const requested = requestedExpiry(candidate, ctx.now, limit.defaultTtlMs);
    if (requested === undefined)
      return { verdict: 'PASSED', note: 'no expiry', candidate: withExpiry(candidate, undefined) };
    if (requested.at <= ctx.now) {
      return {
        verdict: 'REJECTED',
        field: requested.from === 'expire_time' ? 'expire_time' : 'ttl_hint',
        note: `already expired at ${formatTime(requested.at)} (${requested.from})`,
      };
    }
    if (limit.maxTtlMs !== undefined && requested.at > ctx.now + limit.maxTtlMs) {
      const capped = ctx.now + limit.maxTtlMs;
      return {
        verdict: 'ADJUSTED',
        field: 'expire_time',
        note: `expire_time capped to ${formatDuration(limit.maxTtlMs)} for a ${candidate.type}: ${formatTime(capped)} instead of ${formatTime(requested.at)} (${requested.from})`,
        details: { max_ttl: formatDuration(limit.maxTtlMs) },
        candidate: withExpiry(candidate, capped),
      };
    }
    return {
      verdict: requested.defaulted ? 'ADJUSTED' : 'PASSED',
      ...(requested.defaulted ? { field: 'expire_time' } : {}),
      note: `expires ${formatTime(requested.at)} (${requested.from})`,
      candidate: withExpiry(candidate, requested.at),
    };
  },
};
