import { describe, expect, it } from '@jest/globals';
import { detectSecrets } from './index.js';

/** The password values found, as text. */
function passwords(text: string): string[] {
  return detectSecrets(text, { types: ['password'] }).map((f) => text.slice(f.start, f.end));
}

describe('detectSecrets: labelled passwords', () => {
  it.each([
    ['password: Tr0ub4dor&3', 'Tr0ub4dor&3'],
    ['Password = Tr0ub4dor&3', 'Tr0ub4dor&3'],
    ['pwd=Tr0ub4dor&3', 'Tr0ub4dor&3'],
    ['passwd: Tr0ub4dor&3', 'Tr0ub4dor&3'],
    ['DB_PASSWORD=Tr0ub4dor&3', 'Tr0ub4dor&3'],
    ['SMTP_PASS=Tr0ub4dor&3', 'Tr0ub4dor&3'],
    ['{"password": "Tr0ub4dor&3"}', 'Tr0ub4dor&3'],
    ["login(user, password='Tr0ub4dor&3')", 'Tr0ub4dor&3'],
    ['mysql --password=Tr0ub4dor&3 -h db', 'Tr0ub4dor&3'],
    ['passphrase: "correct horse battery staple"', 'correct horse battery staple'],
  ])('finds the value of %p, not its label', (text, value) => {
    expect(passwords(text)).toEqual([value]);
  });

  it.each([
    ['my password is hunter2.', 'hunter2'],
    ['Our wifi password is sunshine.', 'sunshine'],
    ['My password is Tr0ub4dor&3 and my username is alice', 'Tr0ub4dor&3'],
    ['the password for my gmail account is Tr0ub4dor&3', 'Tr0ub4dor&3'],
    ['The passcode to the router was 80417325!', '80417325!'],
    ['(password: s3cret-Value)', 's3cret-Value'],
    ['password=Tr0ub4dor&3&next=/home', 'Tr0ub4dor&3'],
  ])('finds the password in the sentence %p without the punctuation around it', (text, value) => {
    expect(passwords(text)).toEqual([value]);
  });

  it.each([
    ['我的密码是abc12345，请记住', 'abc12345'],
    ['登录密码：Tr0ub4dor&3', 'Tr0ub4dor&3'],
    ['WiFi密码为 88886666', '88886666'],
    ['密码是：“hunter2x”', 'hunter2x'],
    ['口令=Zx9!kk2a', 'Zx9!kk2a'],
    ['支付密码是123456吗', '123456'],
  ])('finds the password in the Chinese text %p', (text, value) => {
    expect(passwords(text)).toEqual([value]);
  });

  it('rates a password mixing character classes high and a single-class one medium', () => {
    expect(detectSecrets('password: hunter2')[0]?.confidence).toBe('high');
    expect(detectSecrets('password: sunshine')[0]?.confidence).toBe('medium');
  });

  it('finds the password in a URL user-info and keeps the user name and host', () => {
    const text = 'DATABASE_URL=postgres://app:Xy9pQ2mz@db.internal:5432/engram';
    expect(passwords(text)).toEqual(['Xy9pQ2mz']);
    expect(detectSecrets(text)[0]?.rule).toBe('url_password');
  });

  it('finds the credentials of a Basic authorization header', () => {
    const encoded = btoa('alice:wonderland-7');
    const text = `Authorization: Basic ${encoded}`;
    expect(passwords(text)).toEqual([encoded]);
    expect(detectSecrets(text)[0]?.rule).toBe('basic_auth_password');
  });
});

describe('detectSecrets: what is not a password', () => {
  it.each([
    'Please reset your password if you forgot it.',
    'The password is required to log in.',
    'Password: must be at least 8 characters long',
    'Your password is incorrect, try again',
    'my password is too short',
    'A strong password is essential.',
    'The best passphrase was memorable, said the report',
    'Forgot password? Click "Reset password".',
    'password: ********',
    'password: <your password here>',
    'password = ${DB_PASSWORD}',
    'password: "{{ vault_db_password }}"',
    'PASSWORD=$DB_PASSWORD',
    'password: [redacted:password]',
    'password = os.environ["DB_PASSWORD"]',
    'password = input("Password: ")',
    'password = req.body.password',
    'password: string;',
    'password: str = Field(min_length=8)',
    'password_hash: $2b$12$abcdefghijklmnopqrstuv',
    'passwordless login is enabled',
    'password: null',
    'postgres://user:password@localhost/db',
    'redis://:${REDIS_PASSWORD}@cache:6379',
    'The boarding pass: gate 12',
    'Authorization: Basic realm="api"',
  ])('finds nothing in %p', (text) => {
    expect(detectSecrets(text)).toEqual([]);
  });

  it.each([
    '请输入密码',
    '密码是什么？',
    '密码错误，请重试',
    '忘记密码了怎么办',
    '密码为空',
    '密码是8位数字',
    '修改密码：请在设置中操作',
    '密码：',
  ])('finds nothing in the Chinese text %p, which mentions 密码 without a value', (text) => {
    expect(detectSecrets(text)).toEqual([]);
  });
});
