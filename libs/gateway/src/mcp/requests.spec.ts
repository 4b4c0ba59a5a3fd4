import { describe, expect, it } from '@jest/globals';
import { ItemKind } from '@engram/contracts/common';
import { MemoryStatus, MemoryType } from '@engram/contracts/governance';
import { MessageRole } from '@engram/contracts/ingestion';
import { isEngramError } from '@engram/errors';
import * as requests from './requests.js';

describe('nameIn', () => {
  it('adds the collection to a bare id and keeps a full name', () => {
    expect(requests.nameIn('memories', ' abc ')).toBe('memories/abc');
    expect(requests.nameIn('memories', 'memories/abc')).toBe('memories/abc');
    expect(requests.nameIn('sessions', 'xyz')).toBe('sessions/xyz');
  });
});

describe('searchRequest', () => {
  it('maps kinds, top_k and explain, and allows degraded answers', () => {
    expect(
      requests.searchRequest({ query: 'kettle', kinds: ['memory', 'round'], top_k: 5, explain: true }),
    ).toEqual({
      query: 'kettle',
      explain: true,
      allowDegraded: true,
      topK: 5,
      filter: { kinds: [ItemKind.MEMORY, ItemKind.ROUND] },
    });
  });

  it('leaves top_k and the filter to the server when not given', () => {
    expect(requests.searchRequest({ query: 'kettle', kinds: [] })).toEqual({
      query: 'kettle',
      explain: false,
      allowDegraded: true,
    });
  });
});

describe('appendRequest', () => {
  it('maps roles onto MessageRole in order', () => {
    expect(
      requests.appendRequest('sessions/s1', {
        messages: [
          { role: 'user', content: 'hi' },
          { role: 'assistant', content: 'hello' },
        ],
      }),
    ).toEqual({
      parent: 'sessions/s1',
      messages: [
        { role: MessageRole.USER, content: 'hi' },
        { role: MessageRole.ASSISTANT, content: 'hello' },
      ],
    });
  });
});

describe('buildContextRequest', () => {
  it('asks for the trace under the default budget', () => {
    expect(requests.buildContextRequest({ session: 's1', message: 'what now?' })).toEqual({
      session: 'sessions/s1',
      userMessage: 'what now?',
      budget: { totalTokens: requests.DEFAULT_CONTEXT_BUDGET },
      includeTrace: true,
    });
  });

  it('passes budget, model and system prompt', () => {
    expect(
      requests.buildContextRequest({
        session: 'sessions/s1',
        message: 'm',
        budget: 900,
        model: 'gpt-4o',
        system_prompt: 'be brief',
      }),
    ).toMatchObject({ budget: { totalTokens: 900 }, model: 'gpt-4o', systemPrompt: 'be brief' });
  });
});

describe('listMemoriesRequest', () => {
  it('maps types and statuses onto the enums', () => {
    expect(
      requests.listMemoriesRequest({
        types: ['fact', 'event'],
        statuses: ['quarantined'],
        evergreen_only: true,
        page_size: 5,
        page_token: 't',
      }),
    ).toEqual({
      pageSize: 5,
      pageToken: 't',
      types: [MemoryType.FACT, MemoryType.EVENT],
      statuses: [MemoryStatus.QUARANTINED],
      evergreenOnly: true,
    });
  });
});

describe('updateMemoryRequest', () => {
  it('names exactly the given fields in the update mask', () => {
    expect(
      requests.updateMemoryRequest({ name: 'm1', text: 'new text', evergreen: false, etag: 'e1' }),
    ).toEqual({
      memory: { name: 'memories/m1', text: 'new text', evergreen: false },
      updateMask: { paths: ['text', 'evergreen'] },
      etag: 'e1',
    });
    expect(requests.updateMemoryRequest({ name: 'm1', value: { tone: 'brief' }, confidence: 0.5 })).toEqual({
      memory: { name: 'memories/m1', value: { tone: 'brief' }, confidence: 0.5 },
      updateMask: { paths: ['value', 'confidence'] },
      etag: '',
    });
  });

  it('refuses an update of nothing with FIELD_REQUIRED update_mask', () => {
    let thrown: unknown;
    try {
      requests.updateMemoryRequest({ name: 'm1' });
    } catch (error) {
      thrown = error;
    }
    expect(isEngramError(thrown)).toBe(true);
    expect(thrown).toMatchObject({ reason: 'FIELD_REQUIRED', metadata: { field: 'update_mask' } });
  });
});

describe('deleteMemoryRequest', () => {
  it('is soft unless purge is asked for', () => {
    expect(requests.deleteMemoryRequest({ name: 'm1' })).toEqual({ name: 'memories/m1', purge: false });
    expect(requests.deleteMemoryRequest({ name: 'memories/m1', purge: true, reason: 'wrong' })).toEqual({
      name: 'memories/m1',
      purge: true,
      reason: 'wrong',
    });
  });
});
