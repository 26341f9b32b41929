import { createHash, createPrivateKey, generateKeyPairSync, KeyObject, randomBytes, sign } from 'node:crypto';
import { SignJWT } from 'jose';
import { AUTH_HEADERS, canonicalJson, signingInput } from '@conclave/registry-protocol';

/** A private key as a KeyObject, a PKCS#8 PEM string, or an Ed25519 JWK with `d`. */
export type PrivateKeyInput = KeyObject | string | { kty: 'OKP'; crv: 'Ed25519'; x: string; d: string };

function toKeyObject(key: PrivateKeyInput): KeyObject {
  if (key instanceof KeyObject) return key;
  if (typeof key === 'string') return createPrivateKey(key);
  return createPrivateKey({ key, format: 'jwk' });
}

export interface SignerOptions {
  /** Which registered key this is (`k1`, `k2`...); without it the service tries every active key. */
  keyId?: string;
  /** Clock for the timestamp header (tests). */
  now?: () => Date;
}

/**
 * The `signer` of ConclaveClient for a registered participant (docs/security.md): each command
 * gets `Conclave-Participant`, `Conclave-Timestamp`, a fresh random `Conclave-Nonce` and
 * `Conclave-Signature`, the Ed25519 signature of the subject, timestamp, nonce, participant and
 * exact body bytes, in base64.
 */
export function ed25519Signer(participantId: string, privateKey: PrivateKeyInput, options: SignerOptions = {}) {
  const key = toKeyObject(privateKey);
  return (subject: string, body: Uint8Array): Record<string, string> => {
    const timestamp = (options.now ? options.now() : new Date()).toISOString();
    const nonce = randomBytes(18).toString('base64url');
    const signature = sign(null, signingInput({ subject, timestamp, nonce, participant_id: participantId }, body), key).toString('base64');
    return {
      [AUTH_HEADERS.participant]: participantId,
      [AUTH_HEADERS.timestamp]: timestamp,
      [AUTH_HEADERS.nonce]: nonce,
      [AUTH_HEADERS.signature]: signature,
      ...(options.keyId ? { [AUTH_HEADERS.keyId]: options.keyId } : {}),
    };
  };
}

/**
 * The JWT alternative to `ed25519Signer` (docs/security.md): each command carries
 * `Authorization: Bearer <jwt>`, an EdDSA JWT with `sub` = the participant, `aud` = the subject,
 * `iat`, a fresh `jti` and `body_sha256` binding it to the exact body. One use per token.
 */
export function jwtSigner(participantId: string, privateKey: PrivateKeyInput, options: SignerOptions = {}) {
  const key = toKeyObject(privateKey);
  return async (subject: string, body: Uint8Array): Promise<Record<string, string>> => {
    const now = options.now ? options.now() : new Date();
    const token = await new SignJWT({ body_sha256: createHash('sha256').update(body).digest('hex') })
      .setProtectedHeader({ alg: 'EdDSA', ...(options.keyId ? { kid: options.keyId } : {}) })
      .setSubject(participantId)
      .setAudience(subject)
      .setIssuedAt(Math.floor(now.getTime() / 1000))
      .setJti(randomBytes(18).toString('base64url'))
      .sign(key);
    return { Authorization: `Bearer ${token}` };
  };
}

export interface ParticipantKeyPair {
  /** What the registry stores: the raw 32-byte public key, base64url. */
  publicKey: string;
  /** PKCS#8 PEM: keep it secret. */
  privateKeyPem: string;
}

/** A new Ed25519 key pair for a participant. */
export function generateParticipantKeys(): ParticipantKeyPair {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  return {
    publicKey: publicKey.export({ format: 'jwk' }).x as string,
    privateKeyPem: privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
  };
}

/** RFC 14.3: the author's Ed25519 signature of a payload's canonical JSON, base64 (send it as `payload_signature`). */
export function signPayload(payload: unknown, privateKey: PrivateKeyInput): string {
  return sign(null, new TextEncoder().encode(canonicalJson(payload)), toKeyObject(privateKey)).toString('base64');
}
