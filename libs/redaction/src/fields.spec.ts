import { describe, expect, it } from '@jest/globals';
import { fakeAwsAccessKeyId, fakeOpenAiProjectKey } from '@engram/testing';
import { redactMetadata, stripUrlCredentials } from './index.js';

describe('redactMetadata', () => {
  it('redacts values, with the key as their label, and keeps the other entries as they are', () => {
    const key = fakeOpenAiProjectKey(3);
    expect(
      redactMetadata({ api_key: key, password: 'Tr0ub4dor&3', note: 'deploy on Friday', team: 'billing' }),
    ).toEqual({
      api_key: '[redacted:api_key]',
      password: '[redacted:password]',
      note: 'deploy on Friday',
      team: 'billing',
    });
  });

  it('redacts a key that is itself a secret, and never sets a prototype', () => {
    const aws = fakeAwsAccessKeyId(4);
    const out = redactMetadata(JSON.parse(`{"${aws}": "x", "__proto__": "y"}`) as Record<string, string>);
    expect(Object.keys(out)).toEqual(['[redacted:api_key]', '__proto__']);
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
  });
});

describe('stripUrlCredentials', () => {
  it('removes the user-info of a URL, password and user name, and keeps the rest', () => {
    expect(stripUrlCredentials('https://deploy:S3cr3t-pass@git.example.com/team/repo.git?ref=main#top')).toBe(
      'https://git.example.com/team/repo.git?ref=main#top',
    );
    expect(stripUrlCredentials('https://ghp_token@github.com/o/r')).toBe('https://github.com/o/r');
    expect(stripUrlCredentials('postgres://app:p@ss@db:5432/x')).toBe('postgres://db:5432/x');
  });

  it('leaves URLs without user-info and values that are not URLs unchanged', () => {
    for (const value of [
      'https://registry.npmjs.org/@types/node',
      'file:///home/alice/notes.md',
      'notes/2024/plan.md',
      'mailto:alice@example.com',
      '',
    ]) {
      expect(stripUrlCredentials(value)).toBe(value);
    }
  });
});
