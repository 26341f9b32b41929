import { createHash, createPublicKey, KeyObject, verify } from 'node:crypto';
import { canonicalJson } from '@conclave/registry-protocol';

/** SHA-256, hex: the audit chain's and the payload hash's function. */
export function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

/** RFC 14.3/14.6: SHA-256 of the payload's canonical JSON (keys sorted), hex. */
export function payloadHash(payload: unknown): string {
  return sha256Hex(canonicalJson(payload));
}

const keys = new Map<string, KeyObject>();

/** An Ed25519 public key from its raw 32 bytes in base64url (cached). */
export function ed25519PublicKey(rawBase64Url: string): KeyObject {
  let key = keys.get(rawBase64Url);
  if (!key) {
    key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: rawBase64Url }, format: 'jwk' });
    if (keys.size > 10_000) keys.clear();
    keys.set(rawBase64Url, key);
  }
  return key;
}

/** Ed25519 verification that never throws: a malformed key or signature simply does not verify. */
export function verifyEd25519(publicKeyRaw: string, message: Uint8Array, signature: Uint8Array): boolean {
  try {
    return signature.length === 64 && verify(null, message, ed25519PublicKey(publicKeyRaw), signature);
  } catch {
    return false;
  }
}

/** Standard or url-safe base64; undefined when it is neither. */
export function decodeBase64(text: string): Uint8Array | undefined {
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(text)) return undefined;
  return new Uint8Array(Buffer.from(text.replace(/-/g, '+').replace(/_/g, '/'), 'base64'));
}
