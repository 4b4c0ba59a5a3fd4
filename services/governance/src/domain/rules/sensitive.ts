/**
 * Finding and redacting secrets and personal data in one piece of text, by policy category.
 * Secrets, payment cards, government IDs and IBANs come from `@engram/redaction` (the one
 * definition of a secret in Engram); email addresses and phone numbers from `pii-detectors.ts`.
 *
 * The library does not fold character widths (its offsets must stay offsets into the caller's
 * text), but a memory can be rewritten: the NFKC form of every text is scanned too, and when it
 * holds something the text as written does not, a redaction rewrites the NFKC form (so
 * `４１１１ １１１１ …` is found and replaced like `4111 1111 …`).
 */
import { detectSecrets, placeholderFor, type SecretFinding, type SecretType } from '@engram/redaction';
import { detectEmails, detectPhones, type ContactType } from './pii-detectors.js';
import { PII_CATEGORIES, SECRET_CATEGORIES, type PiiCategory, type SecretCategory } from './policy.js';

const SECRET_TYPES: readonly SecretType[] = ['api_key', 'password'];
const PII_LIBRARY_TYPES: readonly SecretType[] = ['payment_card', 'national_id', 'bank_account'];

const ACCESS_TOKEN_RULES = new Set<string>(['jwt', 'bearer_token', 'github_token', 'slack_token']);

/** The policy category of a secret finding. */
export function secretCategory(finding: SecretFinding): SecretCategory {
  if (finding.type === 'password') return 'secret.password';
  if (finding.rule === 'private_key_pem') return 'secret.private_key';
  if (ACCESS_TOKEN_RULES.has(finding.rule)) return 'secret.access_token';
  return 'secret.api_key';
}

const PII_OF_LIBRARY_TYPE: Partial<Record<SecretType, PiiCategory>> = {
  payment_card: 'pii.payment_card_number',
  national_id: 'pii.government_id_number',
  bank_account: 'pii.bank_account_number',
};
const PII_OF_CONTACT_TYPE: Record<ContactType, PiiCategory> = {
  email: 'pii.email_address',
  phone: 'pii.phone_number',
};

/** A sensitive span: `text.slice(start, end)` of the scanned form, its category and placeholder. */
interface Span {
  readonly start: number;
  readonly end: number;
  readonly category: SecretCategory | PiiCategory;
  readonly placeholder: string;
}

function secretSpans(text: string): Span[] {
  return detectSecrets(text, { types: SECRET_TYPES }).map((f) => ({
    start: f.start,
    end: f.end,
    category: secretCategory(f),
    placeholder: placeholderFor(f.type),
  }));
}

function piiSpans(text: string): Span[] {
  const spans: Span[] = [];
  for (const f of detectSecrets(text, { types: PII_LIBRARY_TYPES })) {
    const category = PII_OF_LIBRARY_TYPE[f.type];
    if (category !== undefined)
      spans.push({ start: f.start, end: f.end, category, placeholder: placeholderFor(f.type) });
  }
  for (const f of [...detectEmails(text), ...detectPhones(text)]) {
    spans.push({
      start: f.start,
      end: f.end,
      category: PII_OF_CONTACT_TYPE[f.type],
      placeholder: `[redacted:${f.type}]`,
    });
  }
  return spans;
}

/** The categories found in `text` or in its NFKC form. */
function categoriesIn(text: string, find: (text: string) => Span[]): Set<string> {
  const found = new Set(find(text).map((s) => s.category));
  const folded = text.normalize('NFKC');
  if (folded !== text) for (const span of find(folded)) found.add(span.category);
  return found;
}

/**
 * `text` with the spans of `categories` replaced by their placeholders; overlapping spans are
 * merged into one, named by the longest. When the result still holds such a span in its NFKC
 * form (full-width digits, say), the NFKC form is redacted and returned instead. The input
 * unchanged when it holds nothing of `categories`.
 */
function redactSpans(text: string, find: (text: string) => Span[], categories: ReadonlySet<string>): string {
  const redacted = replaceSpans(text, find(text), categories);
  const folded = redacted.normalize('NFKC');
  if (folded === redacted) return redacted;
  const hidden = find(folded);
  return hidden.some((s) => categories.has(s.category)) ? replaceSpans(folded, hidden, categories) : redacted;
}

function replaceSpans(text: string, spans: readonly Span[], categories: ReadonlySet<string>): string {
  const chosen = spans
    .filter((s) => categories.has(s.category))
    .sort((a, b) => a.start - b.start || b.end - a.end);
  if (chosen.length === 0) return text;
  const merged: { start: number; end: number; longest: Span }[] = [];
  for (const span of chosen) {
    const last = merged[merged.length - 1];
    if (last !== undefined && span.start < last.end) {
      if (span.end - span.start > last.longest.end - last.longest.start) last.longest = span;
      last.end = Math.max(last.end, span.end);
    } else {
      merged.push({ start: span.start, end: span.end, longest: span });
    }
  }
  const parts: string[] = [];
  let cursor = 0;
  for (const group of merged) {
    parts.push(text.slice(cursor, group.start), group.longest.placeholder);
    cursor = group.end;
  }
  parts.push(text.slice(cursor));
  return parts.join('');
}

const ALL_SECRETS: ReadonlySet<string> = new Set<SecretCategory>(SECRET_CATEGORIES);
const ALL_PII: ReadonlySet<string> = new Set<PiiCategory>(PII_CATEGORIES);

/** The secret categories present in `text` (as written or in its NFKC form). */
export function secretCategoriesIn(text: string): Set<SecretCategory> {
  return categoriesIn(text, secretSpans) as Set<SecretCategory>;
}

/** `text` with every secret replaced by `[redacted:api_key]` / `[redacted:password]`. */
export function redactSecrets(text: string): string {
  return redactSpans(text, secretSpans, ALL_SECRETS);
}

/** The personal-data categories present in `text` (as written or in its NFKC form). */
export function piiCategoriesIn(text: string): Set<PiiCategory> {
  return categoriesIn(text, piiSpans) as Set<PiiCategory>;
}

/**
 * `text` with the personal data of `categories` replaced by `[redacted:payment_card]`,
 * `[redacted:national_id]`, `[redacted:bank_account]`, `[redacted:email]`, `[redacted:phone]`.
 */
export function redactPii(text: string, categories: ReadonlySet<PiiCategory>): string {
  return redactSpans(text, piiSpans, categories);
}

/** `text` with every secret and all personal data redacted: for echoing caller text in notes. */
export function redactAll(text: string): string {
  return redactSpans(redactSecrets(text), piiSpans, ALL_PII);
}
