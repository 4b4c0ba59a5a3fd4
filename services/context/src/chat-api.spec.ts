import { describe, expect, it } from '@jest/globals';
import { ChatAppendMode } from '@engram/contracts/context';
import { MessageRole } from '@engram/contracts/ingestion';
import type { ChatDoneEvent } from '@engram/llm';
import { toolContinuationProblem, turnMessages } from './chat-api.js';

type Turn = Parameters<typeof toolContinuationProblem>[0][number];

const user = (content: string): Turn => ({ role: MessageRole.USER, content, toolCallId: '', toolCalls: [] });
const assistant = (...ids: string[]): Turn => ({
  role: MessageRole.ASSISTANT,
  content: '',
  toolCallId: '',
  toolCalls: ids.map((id) => ({
    $typeName: 'engram.common.v1.ToolCall',
    id,
    name: 'f',
    argumentsJson: '{}',
  })),
});
const tool = (id: string): Turn => ({ role: MessageRole.TOOL, content: 'ok', toolCallId: id, toolCalls: [] });

describe('toolContinuationProblem (append mode REPLY_AFTER_TOOLS)', () => {
  it('accepts tool results of the newest assistant message after the question', () => {
    expect(
      toolContinuationProblem([tool('b'), tool('a'), assistant('a', 'b'), user('Q?')], 'Q?'),
    ).toBeUndefined();
  });

  it('accepts a second step of a loop: the question is the newest USER message, earlier', () => {
    const session = [tool('c'), assistant('c'), tool('a'), assistant('a'), user('Q?')];
    expect(toolContinuationProblem(session, 'Q?')).toBeUndefined();
  });

  it('refuses a session that does not end with a tool result', () => {
    expect(toolContinuationProblem([user('Q?')], 'Q?')).toMatch(/not a tool result/);
    expect(toolContinuationProblem([], 'Q?')).toMatch(/not a tool result/);
  });

  it('refuses tool results that answer no call of the newest assistant message', () => {
    expect(toolContinuationProblem([tool('x'), assistant('a'), user('Q?')], 'Q?')).toMatch(/does not answer/);
    expect(toolContinuationProblem([tool('a'), user('Q?')], 'Q?')).toMatch(/do not follow/);
  });

  it('refuses a user_message other than the newest user message', () => {
    expect(toolContinuationProblem([tool('a'), assistant('a'), user('Q?')], 'Other')).toMatch(/newest user/);
    expect(toolContinuationProblem([tool('a'), assistant('a')], 'Q?')).toMatch(/no user message/);
  });
});

describe('turnMessages', () => {
  const done: ChatDoneEvent = {
    type: 'done',
    text: 'Sunny.',
    toolCalls: [],
    finishReason: 'stop',
    usage: { promptTokens: 1, completionTokens: 1 },
  };

  it('appends only the reply after tools, like REPLY_ONLY', () => {
    const messages = turnMessages(ChatAppendMode.REPLY_AFTER_TOOLS, 'Q?', done, 'm');
    expect(messages.map((m) => [m.role, m.content])).toEqual([[MessageRole.ASSISTANT, 'Sunny.']]);
  });
});
