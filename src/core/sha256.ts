/**
 * SHA-256 in plain JavaScript, for where Web Crypto is missing: `crypto.subtle` exists
 * only in secure contexts, and a chat app served over plain HTTP on a LAN still needs
 * the `turn.end` integrity check. Slower than Web Crypto; used only as its fallback.
 */

/** The first 32 bits of the fractional parts of the roots of the first primes (FIPS 180-4). */
function fractionBits(count: number, root: (prime: number) => number): Uint32Array {
  const out = new Uint32Array(count);
  let found = 0;
  for (let candidate = 2; found < count; candidate++) {
    let prime = true;
    for (let divisor = 2; divisor * divisor <= candidate; divisor++) {
      if (candidate % divisor === 0) {
        prime = false;
        break;
      }
    }
    if (!prime) continue;
    const value = root(candidate);
    out[found++] = Math.floor((value - Math.floor(value)) * 2 ** 32);
  }
  return out;
}

let constants: { k: Uint32Array; h: Uint32Array } | undefined;

function rotr(value: number, bits: number): number {
  return (value >>> bits) | (value << (32 - bits));
}

/** Lowercase hex SHA-256 of `text` encoded as UTF-8 (the same answer as the protocol's `sha256Hex`). */
export function sha256HexSync(text: string): string {
  constants ??= { k: fractionBits(64, Math.cbrt), h: fractionBits(8, Math.sqrt) };
  const { k } = constants;
  const bytes = new TextEncoder().encode(text);
  const length = bytes.length;
  // Message, 0x80, zeros, then the bit length as 64 bits: a whole number of 64-byte blocks.
  const padded = new Uint8Array(Math.ceil((length + 9) / 64) * 64);
  padded.set(bytes);
  padded[length] = 0x80;
  const view = new DataView(padded.buffer);
  view.setUint32(padded.length - 8, Math.floor(length / 2 ** 29));
  view.setUint32(padded.length - 4, (length * 8) >>> 0);

  const hash = Uint32Array.from(constants.h);
  const w = new Uint32Array(64);
  for (let offset = 0; offset < padded.length; offset += 64) {
    for (let i = 0; i < 16; i++) w[i] = view.getUint32(offset + i * 4);
    for (let i = 16; i < 64; i++) {
      const w15 = w[i - 15] as number;
      const w2 = w[i - 2] as number;
      const s0 = rotr(w15, 7) ^ rotr(w15, 18) ^ (w15 >>> 3);
      const s1 = rotr(w2, 17) ^ rotr(w2, 19) ^ (w2 >>> 10);
      w[i] = ((w[i - 16] as number) + s0 + (w[i - 7] as number) + s1) | 0;
    }
    let [a, b, c, d, e, f, g, h] = hash as unknown as [number, number, number, number, number, number, number, number];
    for (let i = 0; i < 64; i++) {
      const t1 = (h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + (k[i] as number) + (w[i] as number)) | 0;
      const t2 = ((rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) | 0;
      h = g;
      g = f;
      f = e;
      e = (d + t1) | 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) | 0;
    }
    const round = [a, b, c, d, e, f, g, h];
    for (let i = 0; i < 8; i++) hash[i] = ((hash[i] as number) + (round[i] as number)) | 0;
  }
  let hex = '';
  for (const word of hash) hex += word.toString(16).padStart(8, '0');
  return hex;
}
