import { Writable } from 'node:stream';
import { describe, expect, it } from '@jest/globals';
import { createLogger, resolveLogFormat } from './logger.js';

describe('log format', () => {
  it('auto is pretty on a terminal and JSON lines otherwise; explicit formats win', () => {
    expect(resolveLogFormat('auto', true)).toBe('pretty');
    expect(resolveLogFormat('auto', false)).toBe('json');
    expect(resolveLogFormat('json', true)).toBe('json');
    expect(resolveLogFormat('pretty', false)).toBe('pretty');
  });

  it('an explicit destination always gets JSON lines with the service and redacted secrets', () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    createLogger({ service: 'svc', level: 'info', format: 'pretty' }, sink).info(
      { token: 'abc', request: 'r1' },
      'hello',
    );
    const line = JSON.parse(lines.join('')) as Record<string, unknown>;
    expect(line).toMatchObject({ service: 'svc', msg: 'hello', request: 'r1', token: '[redacted]' });
  });
});
