import { describe, expect, it } from '@jest/globals';
import {
  BASE62,
  fakeAwsAccessKeyId,
  fakeAwsSecretAccessKey,
  fakeIban,
  fakeOpenAiKey,
  randomString,
} from '@engram/testing';
import { detectSecrets, redact } from './index.js';

// Synthetic values; prefixes concatenated so the source holds no key (see libs/testing/src/secrets.ts).
const join = (...parts: string[]) => parts.join('');
const HEX = '0123456789abcdef';
const gitlab = join('gl', 'pat-', randomString(BASE62, 20, 1));
const npm = join('np', 'm_', randomString(BASE62, 36, 2));
const huggingFace = join('h', 'f_', randomString(BASE62.replace(/[0-9]/g, ''), 34, 3));
const sendGrid = join('S', 'G.', randomString(BASE62, 22, 4), '.', randomString(BASE62, 43, 5));
const twilio = join('S', 'K', randomString(HEX, 32, 6));
const slackWebhook = join(
  'https://hooks.',
  'slack.com/services/T',
  randomString('ABCDEFGHJKLMNPQRSTUVWXYZ0123456789', 8, 7),
  '/B',
  randomString('ABCDEFGHJKLMNPQRSTUVWXYZ0123456789', 10, 8),
  '/',
  randomString(BASE62, 24, 9),
);

const findings = (text: string) =>
  detectSecrets(text).map((f) => ({ value: text.slice(f.start, f.end), rule: f.rule }));

describe('detectSecrets: the redaction gaps of issue 18', () => {
  it.each([
    ['a GitLab token', `token ${gitlab} for CI`, gitlab, 'gitlab_token'],
    ['an npm token', `//registry.npmjs.org/:_authToken ${npm}`, npm, 'npm_token'],
    ['a Hugging Face token', `export it: ${huggingFace}`, huggingFace, 'huggingface_token'],
    ['a SendGrid key', `mail via ${sendGrid} please`, sendGrid, 'sendgrid_api_key'],
    ['a Twilio API key SID near "twilio"', `our twilio key ${twilio}`, twilio, 'twilio_credential'],
    ['a Slack webhook URL', `post to ${slackWebhook} on deploy`, slackWebhook, 'slack_webhook_url'],
  ])('finds %s', (_name, text, value, rule) => {
    expect(findings(text)).toContainEqual({ value, rule });
  });

  it('does not take a Twilio-shaped SID without context for a key', () => {
    expect(findings(`row ${twilio} in the table`)).toEqual([]);
  });

  it('finds an unlabelled AWS secret key next to its key id (high) and alone (medium)', () => {
    const id = fakeAwsAccessKeyId(10);
    const secret = fakeAwsSecretAccessKey(11);
    const near = detectSecrets(`${id} ${secret}`).find((f) => f.rule === 'aws_secret_access_key');
    expect(near?.confidence).toBe('high');
    const alone = detectSecrets(`here: ${secret}`).find((f) => f.rule === 'aws_secret_access_key');
    expect(alone?.confidence).toBe('medium');
    // A git SHA (hex) and a path of the same length are not keys.
    expect(findings('commit 3f9a2b7c1d4e5f60718293a4b5c6d7e8f9012345 fixed it')).toEqual([]);
  });

  it.each([
    ['mysql -u root -pZq7!rT2m shop', 'Zq7!rT2m'],
    ['mysql -u admin -p h4rd-Pa55 -h 127.0.0.1', 'h4rd-Pa55'],
    ['sshpass -p Tr0ub4dor ssh deploy@10.0.0.5', 'Tr0ub4dor'],
    ['pg_dump --password S3cure#Pass --host db', 'S3cure#Pass'],
    ['mariadb --user=app --password=Zq7!rT2m appdb', 'Zq7!rT2m'],
  ])('finds the password flag in %p', (text, value) => {
    expect(findings(text).map((f) => f.value)).toContain(value);
  });

  it.each(['ssh -p 2222 deploy@host', 'mkdir -p build/output', 'docker run -p 8080:80 nginx'])(
    'leaves -p alone in %p',
    (text) => {
      expect(findings(text)).toEqual([]);
    },
  );

  it.each([
    ['postgres://app:pa/ss#w0rd@db.internal:5432/app', 'pa/ss#w0rd'],
    ['https://deploy:s3cr@t/x#1@git.example.com/team/repo.git', 's3cr@t/x#1'],
  ])('finds a URL password containing / # @ in %p', (text, value) => {
    expect(findings(text)).toContainEqual({ value, rule: 'url_password' });
  });

  it('does not take a port and a path for a URL password', () => {
    expect(findings('https://example.com:443/users/@alice')).toEqual([]);
  });

  it('finds 15-digit Chinese ID numbers after their label, unhyphenated SSNs and lower-case IBANs', () => {
    expect(findings('身份证号 110105710923123')).toContainEqual({
      value: '110105710923123',
      rule: 'cn_resident_id',
    });
    expect(findings('SSN 536829417')).toContainEqual({ value: '536829417', rule: 'us_ssn' });
    const iban = fakeIban('DE', '370400440532013000').toLowerCase();
    expect(findings(`iban ${iban}`)).toContainEqual({ value: iban, rule: 'iban' });
  });

  it('finds a secret typed right after a literal placeholder, and redaction stays idempotent', () => {
    const key = fakeOpenAiKey(12);
    for (const text of [`[redacted:api_key]${key}`, `[redacted:password]-${gitlab}`]) {
      const once = redact(text).text;
      expect(once).not.toContain(key);
      expect(once).not.toContain(gitlab);
      expect(redact(once).text).toBe(once);
    }
  });
});
