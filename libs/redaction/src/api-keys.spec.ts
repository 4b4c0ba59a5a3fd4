import { describe, expect, it } from '@jest/globals';
import {
  BASE62,
  fakeAnthropicKey,
  fakeAwsAccessKeyId,
  fakeAwsSecretAccessKey,
  fakeAwsTemporaryKeyId,
  fakeGenericSecret,
  fakeGithubFineGrainedToken,
  fakeGithubToken,
  fakeGoogleApiKey,
  fakeJwt,
  fakeOpenAiKey,
  fakeOpenAiProjectKey,
  fakePemPrivateKey,
  fakeSlackBotToken,
  fakeStripeKey,
  fakeStripeRestrictedKey,
  randomString,
} from '@engram/testing';
import { detectSecrets, redact, type SecretFinding } from './index.js';

/** The findings as [rule, secret text, confidence], for readable assertions. */
function found(text: string): [string, string, string][] {
  return detectSecrets(text).map((f: SecretFinding) => [f.rule, text.slice(f.start, f.end), f.confidence]);
}

describe('detectSecrets: vendor API keys and tokens', () => {
  it.each([
    ['an OpenAI key', fakeOpenAiKey(1), 'openai_api_key'],
    ['an OpenAI project key', fakeOpenAiProjectKey(2), 'openai_api_key'],
    ['an Anthropic key', fakeAnthropicKey(3), 'anthropic_api_key'],
    ['an AWS access key id', fakeAwsAccessKeyId(4), 'aws_access_key_id'],
    ['an AWS temporary access key id', fakeAwsTemporaryKeyId(5), 'aws_access_key_id'],
    ['a GitHub personal access token', fakeGithubToken('p', 6), 'github_token'],
    ['a GitHub OAuth token', fakeGithubToken('o', 7), 'github_token'],
    ['a GitHub server-to-server token', fakeGithubToken('s', 8), 'github_token'],
    ['a GitHub fine-grained token', fakeGithubFineGrainedToken(9), 'github_token'],
    ['a Slack bot token', fakeSlackBotToken(10), 'slack_token'],
    ['a Google API key', fakeGoogleApiKey(11), 'google_api_key'],
    ['a Stripe live secret key', fakeStripeKey('live', 12), 'stripe_secret_key'],
    ['a Stripe restricted key', fakeStripeRestrictedKey(13), 'stripe_secret_key'],
    ['a JWT', fakeJwt(14), 'jwt'],
  ])('finds %s in a sentence, exactly its characters, with high confidence', (_name, key, rule) => {
    const text = `Here is the value: ${key}, please keep it safe.`;
    expect(found(text)).toEqual([[rule, key, 'high']]);
    expect(detectSecrets(text)[0]?.type).toBe('api_key');
  });

  it('rates a Stripe test-mode key medium', () => {
    const key = fakeStripeKey('test', 20);
    expect(found(`STRIPE=${key}`)).toContainEqual(['stripe_secret_key', key, 'medium']);
  });

  it('does not take a kebab-case name after "sk-" for an OpenAI key', () => {
    expect(
      detectSecrets('see sk-learn-preprocessing-pipeline-docs and task-sk-abcdefghijklmnopqrstuvw'),
    ).toEqual([]);
  });

  it('does not find a key glued inside a longer token', () => {
    const aws = fakeAwsAccessKeyId(21);
    const openai = fakeOpenAiKey(22);
    expect(detectSecrets(`X${aws} ${aws}9 id_${openai}`)).toEqual([]);
  });

  it('requires the full length of each vendor format', () => {
    const short = fakeGithubToken('p', 23).slice(0, 30);
    const google = fakeGoogleApiKey(24).slice(0, 30);
    expect(detectSecrets(`${short} ${google}`)).toEqual([]);
  });

  it('does not take three base64url parts for a JWT unless the header is JSON naming an algorithm', () => {
    const noAlg = fakeJwt(25, '{"typ":"JWT"}');
    const notJson = ['eyJub3QganNvbg', 'eyJzdWIiOiIxIn0', randomString(BASE62, 30, 26)].join('.');
    expect(found(noAlg).map(([rule]) => rule)).not.toContain('jwt');
    expect(found(notJson).map(([rule]) => rule)).not.toContain('jwt');
  });
});

describe('detectSecrets: private keys', () => {
  it('finds a PEM private key block from its BEGIN line to its END line', () => {
    const pem = fakePemPrivateKey(30);
    const text = `my deploy key:\n${pem}\nthanks`;
    expect(found(text)).toEqual([['private_key_pem', pem, 'high']]);
  });

  it('finds RSA, OpenSSH, encrypted and PGP private keys', () => {
    for (const label of [
      'RSA PRIVATE KEY',
      'OPENSSH PRIVATE KEY',
      'ENCRYPTED PRIVATE KEY',
      'PGP PRIVATE KEY BLOCK',
    ]) {
      const pem = fakePemPrivateKey(31, label);
      expect(found(pem)).toEqual([['private_key_pem', pem, 'high']]);
    }
  });

  it('finds a private key inside a JSON string with escaped newlines (a service-account file)', () => {
    const pem = fakePemPrivateKey(35).replace(/\n/g, '\\n');
    const json = `{"type": "service_account", "private_key": "${pem}\\n", "client_email": "a@b.iam"}`;
    expect(found(json)).toContainEqual(['private_key_pem', pem, 'high']);
  });

  it('finds a private key cut off before its END line, up to the end of its body, with medium confidence', () => {
    const pem = fakePemPrivateKey(32);
    const truncated = pem.slice(0, pem.indexOf('\n-----END'));
    expect(found(`${truncated}\n\nAnd that is where the paste ended.`)).toEqual([
      ['private_key_pem', truncated, 'medium'],
    ]);
  });

  it('keeps the PEM header lines of a truncated encrypted key in the finding, and the prose after it out', () => {
    const pem = fakePemPrivateKey(36, 'RSA PRIVATE KEY');
    const headers = 'Proc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,0A1B2C3D4E5F60718293A4B5C6D7E8F9\n\n';
    const truncated = pem
      .replace('-----\n', `-----\n${headers}`)
      .slice(0, pem.indexOf('\n-----END') + headers.length);
    expect(redact(`${truncated}\nNote: the rest was lost`).text).toBe(
      '[redacted:api_key]\nNote: the rest was lost',
    );
  });

  it('ignores public keys, certificates and examples whose body is elided', () => {
    const publicKey = fakePemPrivateKey(33, 'PUBLIC KEY');
    const certificate = fakePemPrivateKey(34, 'CERTIFICATE');
    const elided = ['-----BEGIN', ' PRIVATE KEY-----\nMIIEvQIBADANBg...\n-----END', ' PRIVATE KEY-----'].join(
      '',
    );
    expect(detectSecrets(`${publicKey}\n${certificate}\nA key looks like:\n${elided}`)).toEqual([]);
  });
});

describe('detectSecrets: labelled secrets', () => {
  it('finds a random value labelled key, token or secret in config, code, JSON and headers, with medium confidence', () => {
    const value = fakeGenericSecret(40);
    for (const line of [
      `api_key = "${value}"`,
      `GITHUB_TOKEN=${value}`,
      `"client_secret": "${value}"`,
      `config.apiKey: '${value}'`,
      `x-api-key: ${value}`,
      `access_token => ${value}`,
      `The secret is ${value}.`,
      `API密钥：${value}`,
      `令牌是${value}，别外传`,
    ]) {
      expect([line, found(line)]).toEqual([line, [['labelled_secret', value, 'medium']]]);
    }
  });

  it('finds an AWS secret access key by its label, with high confidence', () => {
    const secret = fakeAwsSecretAccessKey(41);
    expect(found(`aws_secret_access_key = ${secret}`)).toEqual([['aws_secret_access_key', secret, 'high']]);
    expect(found(`AWS_SECRET_ACCESS_KEY="${secret}"`)).toEqual([['aws_secret_access_key', secret, 'high']]);
  });

  it('finds the same 40 characters without a label, with medium confidence (issue 18)', () => {
    expect(detectSecrets(`blob ${fakeAwsSecretAccessKey(42)} end`)).toEqual([
      { type: 'api_key', rule: 'aws_secret_access_key', start: 5, end: 45, confidence: 'medium' },
    ]);
  });

  it('ignores labelled values of low entropy, such as repetitive base64 in a code sample', () => {
    expect(detectSecrets('const token = "QUFBQUFBQUFBQUFBQUFBQUFBQUFB";')).toEqual([]);
    expect(detectSecrets('secret: abc123abc123abc123abc123')).toEqual([]);
  });

  it('ignores identifiers, names and numbers after a key label', () => {
    expect(
      detectSecrets(
        'key = user_profile_2024_settings\ntoken: getTokenFromEnvironment\nsecret_name: prod-db-password-v2\nkey: 12345678901234567890',
      ),
    ).toEqual([]);
  });

  it('ignores keys and tokens that are not credentials: sort, cache, public, pagination, model tokens', () => {
    const value = fakeGenericSecret(43);
    expect(
      detectSecrets(
        `sortKey = ${value}\ncache_key: ${value}\npublic_key=${value}\nnext_page_token: ${value}\nmax_tokens = ${value}`,
      ),
    ).toEqual([]);
  });

  it('finds a bearer token in an Authorization header', () => {
    const token = randomString(BASE62, 40, 44);
    expect(found(`curl -H "Authorization: Bearer ${token}" https://api.example.com`)).toEqual([
      ['bearer_token', token, 'high'],
    ]);
  });

  it('does not take "bearer" followed by an ordinary word for a token', () => {
    expect(detectSecrets('The bearer of this letter is a friend. Bearer authentication explained.')).toEqual(
      [],
    );
  });
});
