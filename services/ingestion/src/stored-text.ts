import { redact, redactMetadata, stripUrlCredentials } from '@engram/redaction';

/** The documented limits of the free-text fields stored beside documents and sessions. */
export const FIELD_LIMITS = { displayName: 256, sourceUri: 2048, metadataValue: 512 } as const;

const fit = (text: string, max: number) => {
  const points = Array.from(text);
  return points.length <= max ? text : points.slice(0, max).join('');
};

/**
 * The free text a client sets beside the content (display names, metadata, `source_uri`) as it
 * is stored and answered: redacted like message content when `redactSecrets` (the tenant's
 * setting), then cut to the field's documented limit, which a placeholder longer than the secret
 * it replaces could otherwise pass.
 */
export class StoredText {
  readonly #redactSecrets: boolean;

  constructor(redactSecrets: boolean) {
    this.#redactSecrets = redactSecrets;
  }

  /** A display name. */
  displayName(text: string): string {
    return this.#redactSecrets ? fit(redact(text).text, FIELD_LIMITS.displayName) : text;
  }

  /** A metadata map, each entry scanned as `key: value`. */
  metadata(metadata: Readonly<Record<string, string>>): Record<string, string> {
    if (!this.#redactSecrets) return { ...metadata };
    return Object.fromEntries(
      Object.entries(redactMetadata(metadata)).map(([k, v]) => [k, fit(v, FIELD_LIMITS.metadataValue)]),
    );
  }

  /**
   * A source URI: the credentials of its user-info are always removed (a URL credential is never
   * data, whatever the tenant's setting), the rest redacted like any text.
   */
  sourceUri(uri: string): string {
    const stripped = stripUrlCredentials(uri);
    return this.#redactSecrets ? fit(redact(stripped).text, FIELD_LIMITS.sourceUri) : stripped;
  }
}
