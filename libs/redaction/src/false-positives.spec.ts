import { describe, expect, it } from '@jest/globals';
import { containsSecret, detectSecrets } from './index.js';

// Ordinary text that looks a little like secrets: each must come through untouched.
describe('detectSecrets: ordinary text is not a secret', () => {
  it.each([
    [
      'version numbers',
      'Upgraded Node to v20.19.0 and TypeScript 6.0.3; Python 3.12.4; 1.0.0-beta.12+exp.sha.5114f85',
    ],
    [
      'phone numbers',
      'Call +1 (415) 555-0132, +86 138 0013 8000, 010-8765-4321 or +44 20 7946 0958; 4008-123-456',
    ],
    [
      'order and invoice numbers',
      'Order #20240517123456789 shipped; invoice INV-2024-000123; tracking 1Z999AA10123456784',
    ],
    ['UUIDs', 'request 550e8400-e29b-41d4-a716-446655440000 and 12345678-1234-1234-1234-123456789012'],
    ['git SHAs', 'Fixed in commit 3f2a9b1c4d5e6f708192a3b4c5d6e7f8091a2b3c (short 3f2a9b1)'],
    [
      'long numbers that fail the Luhn check',
      'Population 4111111111111112; id 5500000000000005; 6200000000000000001',
    ],
    ['dates and times', 'Met on 2024-05-01, 05/01/2024, 2024年5月1日 10:30:00, epoch 1714555800, 20240501'],
    ['prices', 'It costs $1,299.99, ¥4,999.00, €12 345,67 or 1.299,99 EUR; total 1234567890123.45'],
    [
      'prose about passwords and keys',
      'The key to a good password is length. Never share your API key or token with anyone.',
    ],
    [
      'a sentence where "key" and "token" are ordinary words',
      'The key is to stay calm; the token economy is a teaching method.',
    ],
    ['Chinese prose about 密码 and 密钥', '请妥善保管您的密码和密钥，不要告诉任何人。密码长度至少8位。'],
    [
      'base64 of low entropy in a code sample',
      'const data = "AAAAAAAAAAAAAAAAAAAAAAAA"; const token = "QUFBQUFBQUFBQUFBQUFB";',
    ],
    [
      'base64 image data without a secret label',
      'img src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="',
    ],
    [
      'hex colours, hashes without labels and IP addresses',
      '#ff8800 sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 192.168.0.1',
    ],
    [
      'identifiers in code',
      'const apiKeyHeader = "x-api-key"; const tokenizer = new Tokenizer(); let secretName = "prod-db";',
    ],
    ['ISBNs and coordinates', 'ISBN 978-3-16-148410-0, located at 31.2304, 121.4737'],
    ['a Markdown table of numbers', '| 2021 | 2022 | 2023 |\n| 4000 | 4100 | 4200 |'],
  ])('finds nothing in %s', (_name, text) => {
    expect(detectSecrets(text)).toEqual([]);
    expect(containsSecret(text)).toBe(false);
  });
});
