import { detectSecrets } from './detect.js';
import { redact } from './redact.js';

/**
 * A metadata map with its secrets replaced by placeholders. Each entry is scanned as the text
 * `key: value`, so the key labels its value the way it would in prose (`{"password": "hunter2"}`
 * is found although `hunter2` alone is not a secret); only the value changes, unless the key is a
 * secret itself, which is then redacted on its own (two keys that redact alike keep the last).
 */
export function redactMetadata(metadata: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(metadata).map(([key, value]) => {
      const label = `${key}: `;
      const joined = redact(label + value);
      if (joined.findings.every((f) => f.start >= label.length)) {
        return [key, joined.text.slice(label.length)];
      }
      return [redact(key).text, redact(value).text];
    }),
  );
}

// RFC 3986: the authority runs from `//` to the first `/`, `?` or `#`; user-info ends at its last `@`.
const USER_INFO = /^([A-Za-z][A-Za-z0-9+.-]*:\/\/)[^/?#]*@/;

/**
 * A URL without the credentials of its user-info: `https://user:pa55@host/x` becomes
 * `https://host/x`. The whole user-info goes (a user name alone is often a token, as in
 * `https://<token>@github.com/…`), and so does a password that the URL rules cannot delimit but
 * the `url_password` detector finds (one containing `/`, `?` or `#`). Anything else is unchanged;
 * a value that is not a URL is returned as it is.
 */
export function stripUrlCredentials(uri: string): string {
  let text = uri.replace(USER_INFO, '$1');
  const passwords = detectSecrets(text, { types: ['password'] }).filter(
    (f) => f.rule === 'url_password' && text[f.end] === '@',
  );
  for (const finding of passwords.reverse()) {
    const authority = text.lastIndexOf('://', finding.start);
    if (authority >= 0) text = text.slice(0, authority + 3) + text.slice(finding.end + 1);
  }
  return text;
}
