import { generateKeyPairSync, sign, verify } from 'node:crypto';
import { checkFreshness, isNonce, signingInput } from './signing';

describe('signed commands (14.1, 14.4)', () => {
  const fields = {
    subject: 'acp.v1.propose',
    timestamp: '2026-01-01T00:00:00.000Z',
    nonce: 'n0nce-0123456789ab',
    participant_id: 'agent-a',
  };
  const body = new TextEncoder().encode('{"a":1}');

  it('the signature binds subject, timestamp, nonce, participant and the exact body bytes', () => {
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const sig = sign(null, signingInput(fields, body), privateKey);
    expect(verify(null, signingInput(fields, body), publicKey, sig)).toBe(true);
    for (const changed of [
      signingInput({ ...fields, subject: 'acp.v1.respond' }, body),
      signingInput({ ...fields, timestamp: '2026-01-01T00:00:01.000Z' }, body),
      signingInput({ ...fields, nonce: 'other-nonce-0123456' }, body),
      signingInput({ ...fields, participant_id: 'agent-b' }, body),
      signingInput(fields, new TextEncoder().encode('{"a": 1}')),
    ]) {
      expect(verify(null, changed, publicKey, sig)).toBe(false);
    }
  });

  it('freshness is a window either side of now', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(checkFreshness('2026-01-01T00:00:29Z', now, 30_000).fresh).toBe(true);
    expect(checkFreshness('2025-12-31T23:59:31Z', now, 30_000).fresh).toBe(true);
    expect(checkFreshness('2025-12-31T23:59:29Z', now, 30_000)).toEqual({ fresh: false, reason: expect.stringContaining('old') });
    expect(checkFreshness('2026-01-01T00:00:31Z', now, 30_000)).toEqual({ fresh: false, reason: expect.stringContaining('future') });
    expect(checkFreshness('yesterday', now, 30_000).fresh).toBe(false);
  });

  it('nonces are 16 to 128 url-safe characters', () => {
    expect(isNonce('abcdefghijklmnop')).toBe(true);
    expect(isNonce('short')).toBe(false);
    expect(isNonce('has space in it 1234')).toBe(false);
  });
});
