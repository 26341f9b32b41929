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
