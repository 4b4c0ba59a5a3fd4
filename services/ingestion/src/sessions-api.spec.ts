import { create } from '@bufbuild/protobuf';
import { describe, expect, it } from '@jest/globals';
import { MessageRole, MessageSchema } from '@engram/contracts/ingestion';
import { prepareMessages } from './sessions-api.js';

const message = (content: string, metadata: Record<string, string> = {}) =>
  create(MessageSchema, { role: MessageRole.USER, content, metadata });

describe('prepareMessages redacts before storage (issue 18, findings 3 and 4)', () => {
  it('reads message metadata entries as key: value, so {"password": "Tr0ub4dor&3"} loses its value', () => {
    const { messages, redactions } = prepareMessages(
      [message('hi', { password: 'Tr0ub4dor&3', app: 'tutor' })],
      {
        now: Date.now(),
        redactSecrets: true,
      },
    );
    expect(messages[0]?.metadata).toEqual({ password: '[redacted:password]', app: 'tutor' });
    expect(redactions).toBe(1);
  });

  it('redacts passwords said in prose and identity-document numbers in message content', () => {
    const { messages } = prepareMessages(
      [
        message("is 'Tr0ub4dor&3' a decent password?"),
        message('新密码我想设成 Qw3rty!9zz'),
        message('my passport number is E12345678 and my NI number is AB 12 34 56 C'),
      ],
      { now: Date.now(), redactSecrets: true },
    );
    expect(messages.map((m) => m.content)).toEqual([
      "is '[redacted:password]' a decent password?",
      '新密码我想设成 [redacted:password]',
      'my passport number is [redacted:national_id] and my NI number is [redacted:national_id]',
    ]);
  });

  it('leaves metadata alone when redaction is off for the tenant', () => {
    const { messages } = prepareMessages([message('hi', { password: 'Tr0ub4dor&3' })], {
      now: Date.now(),
      redactSecrets: false,
    });
    expect(messages[0]?.metadata).toEqual({ password: 'Tr0ub4dor&3' });
  });
});
