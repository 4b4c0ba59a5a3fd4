/**
 * What a finding is. The order is the precedence used when overlapping findings of different
 * types are merged into one placeholder and their spans are equally long.
 *
 * - `api_key`: a credential for a machine: vendor API keys and tokens, JWTs, private keys, and
 *   high-entropy values labelled `key`/`token`/`secret`.
 * - `password`: a password a person chose, found by its label (`password: …`, `密码是…`), by the
 *   sentence around it (`is 'Tr0ub4dor&3' a decent password?`, `新密码我想设成 …`), as a CLI flag
 *   (`--password x`, `mysql -u root -p x`), in a URL's user-info or a Basic authorization header.
 *   Only the value is a finding, never the label.
 * - `payment_card`: a payment card number (Luhn-valid, known issuer prefix and length).
 * - `national_id`: an identity-document number: a Chinese resident identity number (18 digits
 *   checksummed, or 15 digits after its label), a US social security number, a UK National
 *   Insurance number, or a passport number after its label.
 * - `bank_account`: an IBAN (country length and MOD 97-10 checksum).
 */
export const SECRET_TYPES = ['api_key', 'password', 'payment_card', 'national_id', 'bank_account'] as const;

/** One of {@link SECRET_TYPES}; also the name inside the placeholder `[redacted:<type>]`. */
export type SecretType = (typeof SECRET_TYPES)[number];

/**
 * `high`: the shape is specific enough (a vendor prefix and length, a checksum, an explicit label
 * with a structured value) that a match is a secret with near certainty. `medium`: a heuristic
 * (entropy, natural-language label, a format without a checksum) that is usually right; callers
 * that must not lose ordinary text may treat these differently, the redaction does not.
 */
export type Confidence = 'high' | 'medium';

/** The named detector that produced a finding; see the README for each rule's guards. */
export type SecretRule =
  | 'openai_api_key'
  | 'anthropic_api_key'
  | 'aws_access_key_id'
  | 'aws_secret_access_key'
  | 'github_token'
  | 'slack_token'
  | 'google_api_key'
  | 'stripe_secret_key'
  | 'gitlab_token'
  | 'npm_token'
  | 'huggingface_token'
  | 'sendgrid_api_key'
  | 'twilio_credential'
  | 'slack_webhook_url'
  | 'jwt'
  | 'private_key_pem'
  | 'bearer_token'
  | 'labelled_secret'
  | 'labelled_password'
  | 'prose_password'
  | 'cli_password'
  | 'url_password'
  | 'basic_auth_password'
  | 'payment_card'
  | 'cn_resident_id'
  | 'us_ssn'
  | 'passport_number'
  | 'uk_national_insurance_number'
  | 'iban';

/**
 * A secret found in a text: `text.slice(start, end)` is the secret itself (UTF-16 offsets,
 * `end` exclusive), without any label or quotes around it.
 */
export interface SecretFinding {
  readonly type: SecretType;
  readonly start: number;
  readonly end: number;
  readonly confidence: Confidence;
  readonly rule: SecretRule;
}
