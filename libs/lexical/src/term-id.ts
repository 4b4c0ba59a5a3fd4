/**
 * The stable id of a lexical term: 32-bit FNV-1a over the token's UTF-8 bytes (offset basis
 * 2166136261, prime 16777619), as an unsigned integer. Ids are stored in sparse vectors inside
 * indexes, so this function must never change. Lone surrogates hash as U+FFFD, as TextEncoder
 * would encode them. Different tokens can share an id (a vocabulary of one million terms has
 * about 116 colliding pairs); the encoders then count them as one term.
 */
export function termId(token: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < token.length; i++) {
    let cp = token.charCodeAt(i);
    if (cp >= 0xd800 && cp <= 0xdfff) {
      const next = token.charCodeAt(i + 1);
      if (cp <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
        cp = 0x10000 + ((cp - 0xd800) << 10) + (next - 0xdc00);
        i++;
      } else {
        cp = 0xfffd;
      }
    }
    if (cp < 0x80) {
      hash = fnvByte(hash, cp);
    } else if (cp < 0x800) {
      hash = fnvByte(hash, 0xc0 | (cp >> 6));
      hash = fnvByte(hash, 0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      hash = fnvByte(hash, 0xe0 | (cp >> 12));
      hash = fnvByte(hash, 0x80 | ((cp >> 6) & 0x3f));
      hash = fnvByte(hash, 0x80 | (cp & 0x3f));
    } else {
      hash = fnvByte(hash, 0xf0 | (cp >> 18));
      hash = fnvByte(hash, 0x80 | ((cp >> 12) & 0x3f));
      hash = fnvByte(hash, 0x80 | ((cp >> 6) & 0x3f));
      hash = fnvByte(hash, 0x80 | (cp & 0x3f));
    }
  }
  return hash >>> 0;
}

function fnvByte(hash: number, byte: number): number {
  return Math.imul(hash ^ byte, 0x01000193);
}
