import { describe, expect, it } from '@jest/globals';
import { detectSecrets, redact } from './index.js';

const found = (text: string, type?: string) =>
  detectSecrets(text)
    .filter((f) => type === undefined || f.type === type)
    .map((f) => text.slice(f.start, f.end));

describe('detectSecrets: passwords said in prose (issue 18, finding 3)', () => {
  it.each([
    ["is 'Tr0ub4dor&3' a decent password?", 'Tr0ub4dor&3'],
    ['Is "Qw3rty!9zz" strong enough as a password?', 'Qw3rty!9zz'],
    ['the admin login is Zx9!kLp2w', 'Zx9!kLp2w'],
    ['My new password will be m0nkey$Bar7 starting Monday.', 'm0nkey$Bar7'],
    ['I changed the wifi password to Lion@2024x yesterday.', 'Lion@2024x'],
    ["S3cure#Pass is my new password, don't tell anyone.", 'S3cure#Pass'],
    ['What do you think of blue-Horse-42 for a password?', 'blue-Horse-42'],
    ['新密码我想设成 Qw3rty!9zz', 'Qw3rty!9zz'],
    ['密码是k8Fz#q1Lm', 'k8Fz#q1Lm'],
    ['口令改为Tr0ub4dor&3了', 'Tr0ub4dor&3'],
    ['把wifi密码改成 Lion@2024x 吧', 'Lion@2024x'],
    ['「S3cure#Pass」这个密码安全吗？', 'S3cure#Pass'],
    ['m0nkey$Bar7 是我的新密码', 'm0nkey$Bar7'],
  ])('finds the password in %p', (text, value) => {
    expect(found(text, 'password')).toContain(value);
    expect(redact(text).text).not.toContain(value);
  });

  it.each([
    'I forgot my password again.',
    'What makes a good password?',
    'The password must be at least 12 characters long.',
    'My password is in 1Password, I will look it up later.',
    'log in to server01 and check the disk usage',
    'Two-factor login on the iPhone15 takes a few seconds.',
    'The error ERR_PASSWORD_TOO_WEAK shows up on signup.',
    'See ticket AUTH-1234 about password resets.',
    'The password manager v3.2.1 update broke autofill.',
    'I need to change my password to something stronger.',
    '密码至少8位。',
    '密码长度为8到16位。',
    '密码用的是iPhone自带的钥匙串。',
    '密码过期时间是2024-03-01。',
  ])('finds nothing in %p', (text) => {
    expect(found(text)).toEqual([]);
  });
});

describe('detectSecrets: identity documents after their label (issue 18, finding 3)', () => {
  it.each([
    ['my passport number is E12345678', 'E12345678'],
    ['Passport No. 531234567, expires 2031', '531234567'],
    ['passport: EA1234567', 'EA1234567'],
    ['我的护照号是E12345678', 'E12345678'],
    ['护照号码：G40319872，下个月到期', 'G40319872'],
    ['my national insurance number is AB 12 34 56 C', 'AB 12 34 56 C'],
    ['NI number: JG103759A', 'JG103759A'],
    ['my SSN is 536829417', '536829417'],
    ['social security number: 412 55 8823', '412 55 8823'],
    ['他的社会安全号是 536829417', '536829417'],
    ['ID card number: 110105710923123', '110105710923123'],
    ['我的身份证号是320102650101456', '320102650101456'],
  ])('finds the number in %p', (text, value) => {
    expect(found(text, 'national_id')).toEqual([value]);
  });

  it.each([
    'My passport is in the drawer.',
    'My passport expires in 2027.',
    'Passport photos must be 35x45 mm.',
    '我的护照在抽屉里。',
    'The serial is AB123456C on the box.',
    'Order 536829417 was shipped today.',
    'Order number 110105710923123 has been refunded.',
    'The IMEI of the test phone is 356938035643809.',
  ])('finds nothing in %p', (text) => {
    expect(found(text)).toEqual([]);
  });
});
