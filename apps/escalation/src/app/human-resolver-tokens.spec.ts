import { AcpError } from '@conclave/acp-protocol';
import { initialParticipantState, ParticipantState } from '@conclave/registry-protocol';
import type { CommandContext, Identity, ParticipantDirectory } from '@conclave/service-kit';
import { HumanResolverTokens, TOKEN_FAILURE_SOURCES, TOKEN_FAILURES_PER_WINDOW } from './human-resolver-tokens';

const TOKEN = 'token-of-alice-0123456789abcdefghij';
const active = { status: 'active', participant: { participant_id: 'human:alice' } } as unknown as ParticipantState;

function tokens(authRequired: boolean, registry: Record<string, ParticipantState> = { 'human:alice': active }) {
  const context = {
    authRequired,
    authenticate: async (_r: unknown, declared?: string): Promise<Identity> => ({
      participant_id: declared ?? 'anonymous',
      via: 'declared',
      state: initialParticipantState,
    }),
  } as unknown as CommandContext;
  const directory = { load: async (id: string) => registry[id] ?? initialParticipantState } as unknown as ParticipantDirectory;
  return new HumanResolverTokens({ routes: [], humanTokens: new Map([[TOKEN, 'human:alice']]) }, context, directory);
}

const code = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: AcpError) => e.code,
  );

describe('human tokens name registered participants', () => {
  it('given auth required, a valid token of an active participant: that participant, via token', async () => {
    await expect(tokens(true).identify({ authorization: `Bearer ${TOKEN}`, source: 'http:1' })).resolves.toMatchObject({
      participant_id: 'human:alice',
      via: 'token',
      state: active,
    });
  });

  it('given auth required, a missing, malformed or unknown token, or one of an unregistered or deactivated participant: UNAUTHENTICATED', async () => {
    const t = tokens(true);
    expect(await code(t.identify({ source: 'http:1' }))).toBe('UNAUTHENTICATED');
    expect(await code(t.identify({ authorization: `Basic ${TOKEN}`, source: 'http:1' }))).toBe('UNAUTHENTICATED');
    expect(await code(t.identify({ authorization: 'Bearer token-of-mallory-0123456789abcdefgh', source: 'http:1' }))).toBe(
      'UNAUTHENTICATED',
    );
    expect(await code(tokens(true, {}).identify({ authorization: `Bearer ${TOKEN}`, source: 'http:1' }))).toBe('UNAUTHENTICATED');
    const gone = { status: 'deactivated', participant: { participant_id: 'human:alice' } } as unknown as ParticipantState;
    expect(await code(tokens(true, { 'human:alice': gone }).identify({ authorization: `Bearer ${TOKEN}`, source: 'http:1' }))).toBe(
      'UNAUTHENTICATED',
    );
  });

  it('given repeated wrong tokens from one source, then even the right token is refused from it, not from another', async () => {
    const t = tokens(true);
    for (let i = 0; i < TOKEN_FAILURES_PER_WINDOW; i++) await code(t.identify({ authorization: `Bearer wrong-${i}`, source: 'http:9' }));
    await expect(t.identify({ authorization: `Bearer ${TOKEN}`, source: 'http:9' })).rejects.toMatchObject({
      code: 'RATE_LIMITED',
      retryAfterMs: expect.any(Number),
      message: expect.stringMatching(/too many failed token attempts/),
    });
    await expect(t.identify({ authorization: `Bearer ${TOKEN}`, source: 'http:1' })).resolves.toMatchObject({
      participant_id: 'human:alice',
    });
  });

  it('given wrong tokens over NATS naming mallory, then a token naming alice still works: on NATS the limit is kept per named participant', async () => {
    const t = tokens(true);
    for (let i = 0; i < TOKEN_FAILURES_PER_WINDOW + 5; i++) {
      await code(t.identify({ authorization: `Bearer wrong-${i}`, declared: 'mallory', source: 'nats' }));
    }
    expect(await code(t.identify({ authorization: `Bearer wrong-x`, declared: 'mallory', source: 'nats' }))).toBe('RATE_LIMITED');
    await expect(t.identify({ authorization: `Bearer ${TOKEN}`, declared: 'human:alice', source: 'nats' })).resolves.toMatchObject({
      participant_id: 'human:alice',
      via: 'token',
    });
  });

  it('given an HTTP source locked out, when an attacker sends a wrong token under more new NATS names than are remembered, then the lockout holds and the memory stays bounded', async () => {
    const t = tokens(true);
    for (let i = 0; i < TOKEN_FAILURES_PER_WINDOW; i++) await code(t.identify({ authorization: `Bearer wrong-${i}`, source: 'http:9' }));
    for (let i = 0; i < TOKEN_FAILURE_SOURCES + 50; i++) {
      await code(t.identify({ authorization: 'Bearer wrong', declared: `n${i}`, source: 'nats' }));
    }
    expect(await code(t.identify({ authorization: `Bearer ${TOKEN}`, source: 'http:9' }))).toBe('RATE_LIMITED');
    // The bound itself, read from the outside: no public view of it exists.
    const remembered = (t as unknown as { failures: Map<string, number[]> }).failures;
    expect(remembered.size).toBeLessThanOrEqual(TOKEN_FAILURE_SOURCES);
    expect(remembered.has('http:9')).toBe(true);
  });

  it('given more sources than are remembered, then expired sources are forgotten first, then the oldest not locked out, and locked-out ones only when they alone fill the bound', async () => {
    let clock = Date.parse('2026-01-01T00:00:00Z');
    const now = jest.spyOn(Date, 'now').mockImplementation(() => clock);
    // Which sources are remembered: no public view of it exists.
    const remembered = (t: HumanResolverTokens) => (t as unknown as { failures: Map<string, number[]> }).failures;
    const wrong = (t: HumanResolverTokens, name: string) =>
      code(t.identify({ authorization: 'Bearer wrong', declared: name, source: 'nats' }));
    const target = Math.floor(TOKEN_FAILURE_SOURCES * 0.9);
    try {
      // Expired first: `live` failed before 1,001 sources that expire; it failed again later, so it is
      // still live when the bound is passed. Forgetting the expired ones alone is enough: `live` stays.
      const t = tokens(true);
      await wrong(t, 'live');
      clock += 1_000;
      for (let i = 0; i < 1_001; i++) await wrong(t, `old${i}`);
      clock += 49_000;
      await wrong(t, 'live');
      clock += 12_000; // the old ones' last failure is now more than a window ago; live's is not
      for (let i = 0; remembered(t).size < TOKEN_FAILURE_SOURCES; i++) await wrong(t, `new${i}`);
      await wrong(t, 'last');
      expect(remembered(t).size).toBe(target);
      expect([...remembered(t).keys()].filter((s) => s.startsWith('nats:old'))).toEqual([]);
      expect(remembered(t).has('nats:live')).toBe(true);

      // Then the oldest not locked out: `live` goes, the locked-out `locked` (newer than live) stays.
      for (let i = 0; i < TOKEN_FAILURES_PER_WINDOW; i++) await wrong(t, 'locked');
      for (let i = 0; remembered(t).size < TOKEN_FAILURE_SOURCES; i++) await wrong(t, `more${i}`);
      await wrong(t, 'more-last');
      expect(remembered(t).size).toBe(target);
      expect(remembered(t).has('nats:live')).toBe(false);
      expect(remembered(t).has('nats:locked')).toBe(true);
      expect(remembered(t).has('nats:new0')).toBe(false);
      expect(await wrong(t, 'locked')).toBe('RATE_LIMITED');

      // Locked-out sources only when they alone fill the bound: the oldest of them go.
      const full = tokens(true);
      for (let s = 0; s < TOKEN_FAILURE_SOURCES; s++) for (let i = 0; i < TOKEN_FAILURES_PER_WINDOW; i++) await wrong(full, `l${s}`);
      await wrong(full, 'one-more');
      expect(remembered(full).size).toBe(target);
      expect(remembered(full).has('nats:one-more')).toBe(false);
      expect(remembered(full).has(`nats:l${TOKEN_FAILURE_SOURCES - target - 1}`)).toBe(false);
      expect(remembered(full).has(`nats:l${TOKEN_FAILURE_SOURCES - target}`)).toBe(true);
      expect(await wrong(full, `l${TOKEN_FAILURE_SOURCES - 1}`)).toBe('RATE_LIMITED');
    } finally {
      now.mockRestore();
    }
  });

  it("given a NATS request naming mallory with alice's token, then it is refused: a token matches only the participant the request names", async () => {
    expect(await code(tokens(true).identify({ authorization: `Bearer ${TOKEN}`, declared: 'mallory', source: 'nats' }))).toBe(
      'UNAUTHENTICATED',
    );
  });

  it('given auth off, then the declared identity is taken, and a presented token is still checked', async () => {
    const t = tokens(false);
    await expect(t.identify({ declared: 'human:bob', source: 'nats' })).resolves.toMatchObject({
      participant_id: 'human:bob',
      via: 'declared',
    });
    expect(await code(t.identify({ authorization: 'Bearer wrong-token', source: 'nats' }))).toBe('UNAUTHENTICATED');
  });
});
