import { describe, expect, it } from '@jest/globals';
import { detectEmails, detectPhones } from './pii-detectors.js';

const spans = (text: string, found: { start: number; end: number }[]) =>
  found.map((f) => text.slice(f.start, f.end));

describe('detectEmails', () => {
  it.each([
    ['Write to ann.lee+work@example.co.uk please.', 'ann.lee+work@example.co.uk'],
    ['邮箱是bob_99@mail.example.cn，谢谢', 'bob_99@mail.example.cn'],
    ['<carol@example.org>', 'carol@example.org'],
    ['Sentence ends with dave@example.com.', 'dave@example.com'],
  ])('finds the address in %j', (text, address) => {
    expect(spans(text, detectEmails(text))).toEqual([address]);
  });

  it.each([
    'Meet @ 10am at the gym',
    'version v1.2@3.4 released',
    'user@localhost has no domain',
    'ping me on twitter @ann_lee',
    'the [redacted:email] placeholder',
  ])('finds nothing in %j', (text) => {
    expect(detectEmails(text)).toEqual([]);
  });
});

describe('detectPhones', () => {
  it.each([
    ['我的手机号是13800138000', '13800138000'],
    ['call 138 0013 8000 tonight', '138 0013 8000'],
    ['+86 138-0013-8000', '+86 138-0013-8000'],
    ['London office: +44 20 7946 0958.', '+44 20 7946 0958'],
    ['US: +1 (415) 555-0132', '+1 (415) 555-0132'],
    ['Call (415) 555-0132 after six', '(415) 555-0132'],
    ['Call 415-555-0132 after six', '415-555-0132'],
    ['office 010-62345678', '010-62345678'],
    ['phone: 5550132777', '5550132777'],
    ['Mobile number is 0612 345 678', '0612 345 678'],
    ['电话：88886666', '88886666'],
  ])('finds the number in %j', (text, number) => {
    expect(spans(text, detectPhones(text))).toContain(number);
  });

  it.each([
    'My goal for the next 30 days is to solve 200 problems.',
    'Born on 1990-03-07, moved in 2019-2024.',
    'The meeting is at 10:30 on 2025.01.15.',
    'Order 12345678901 shipped; invoice 2024000123.',
    'Server 192.168.100.200 is down',
    'Pay 1,234,567.89 yuan',
    'Version 10.0.19045.3803',
    'SSN-like 123-45-6789 is not a phone',
    'card 4111 1111 1111 1111',
    'my hotel: 12345678 room',
  ])('finds nothing in %j', (text) => {
    expect(spans(text, detectPhones(text))).toEqual([]);
  });
});
