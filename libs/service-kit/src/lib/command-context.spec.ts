import { generateKeyPairSync, KeyObject, sign } from 'node:crypto';
import { InMemoryEventLog } from '@conclave/event-log';
import { AUTH_HEADERS, REGISTRY_COMMAND_TYPES, signingInput } from '@conclave/registry-protocol';
import { headers as natsHeaders } from 'nats';
import { ulid } from 'ulid';
import { CommandContext } from './command-context';
import { loadConfig } from './config';
import { AuthenticatedServiceConfig } from './auth/auth-config';
import type { CommandRequest } from './auth/identity';
import type { NonceStore } from './auth/nonce-store';
import { ParticipantDirectory } from './auth/participant-directory';
import { Readiness } from './readiness';
import { Reactors } from './reactor';
import { MemorySnapshots } from './snapshot-store';

function keyPair() {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return { privateKey, raw: publicKey.export({ format: 'jwk' }).x as string };
}

class MemoryNonces {
  readonly used = new Set<string>();
  async claim(key: string) {
    if (this.used.has(key)) return false;
    this.used.add(key);
    return true;
  }
}

describe('CommandContext: authentication and authorization (14.1, 14.2, 14.4)', () => {
  let now = new Date('2026-01-01T00:00:00.000Z');
  const clock = { now: () => now };
  const ids = { next: () => ulid() };
  const alice = keyPair();
  const other = keyPair();
  let directory: ParticipantDirectory;
  let context: CommandContext;
  let off: CommandContext;

  const admin = (type: string, data: object) =>
    directory.execute({ type, command_id: ulid(), now: now.toISOString(), actor: 'admin', data } as never);

  beforeAll(async () => {
    const config = loadConfig(AuthenticatedServiceConfig, { CONCLAVE_AUTH_MODE: 'required', CONCLAVE_AUTH_SKEW_MS: '30000' });
    const log = new InMemoryEventLog();
    const readiness = new Readiness();
    const reactors = new Reactors(log, () => undefined, config, 'test', new MemorySnapshots(), readiness);
    directory = new ParticipantDirectory(log, clock, ids, config, readiness, reactors);
    await directory.onApplicationBootstrap();
    context = new CommandContext(clock, ids, config, directory, new MemoryNonces() as unknown as NonceStore);
    off = new CommandContext(clock, ids, loadConfig(AuthenticatedServiceConfig, { CONCLAVE_AUTH_MODE: 'off' }), directory);
    await admin(REGISTRY_COMMAND_TYPES.RegisterParticipant, { participant_id: 'alice', roles: ['agent'], public_key: alice.raw });
    await admin(REGISTRY_COMMAND_TYPES.GrantDomain, { participant_id: 'alice', domain: 'risk', domain_authority: 0.9, trust_score: 0.8 });
    await admin(REGISTRY_COMMAND_TYPES.RegisterParticipant, { participant_id: 'gone', roles: ['agent'], public_key: other.raw });
  });
  afterAll(() => directory.onApplicationShutdown());

  function signed(
    body: string,
    opts: {
      key?: KeyObject;
      participant?: string;
      timestamp?: string;
      nonce?: string;
      subject?: string;
      signedSubject?: string;
      drop?: string;
    } = {},
  ): CommandRequest {
    const bytes = new TextEncoder().encode(body);
    const fields = {
      subject: opts.signedSubject ?? opts.subject ?? 'acp.v1.respond',
      timestamp: opts.timestamp ?? now.toISOString(),
      nonce: opts.nonce ?? ulid(),
      participant_id: opts.participant ?? 'alice',
    };
    const h = natsHeaders();
    h.set(AUTH_HEADERS.participant, fields.participant_id);
    h.set(AUTH_HEADERS.timestamp, fields.timestamp);
    h.set(AUTH_HEADERS.nonce, fields.nonce);
    h.set(AUTH_HEADERS.signature, sign(null, signingInput(fields, bytes), opts.key ?? alice.privateKey).toString('base64'));
    if (opts.drop) h.delete(opts.drop);
    return { getSubject: () => opts.subject ?? 'acp.v1.respond', getRawBody: () => bytes, getHeaders: () => h };
  }

  const rejects = (p: Promise<unknown>, code: string, text: string | RegExp) =>
    expect(p).rejects.toMatchObject({ code, message: expect.stringMatching(text) });

  it('accepts a command signed by an active key of a registered participant', async () => {
    const identity = await context.authenticate(signed('{"x":1}'));
    expect(identity).toMatchObject({ participant_id: 'alice', via: 'signature', key_id: 'k1', state: { status: 'active' } });
  });

  it('missing headers, forged signature, wrong key, another subject or body: UNAUTHENTICATED', async () => {
    await rejects(context.authenticate(undefined), 'UNAUTHENTICATED', 'no credentials');
    await rejects(context.authenticate(signed('{}', { drop: AUTH_HEADERS.signature })), 'UNAUTHENTICATED', 'Conclave-Signature');
    await rejects(context.authenticate(signed('{}', { key: other.privateKey })), 'UNAUTHENTICATED', 'does not verify');
    await rejects(context.authenticate(signed('{}', { signedSubject: 'acp.v1.get' })), 'UNAUTHENTICATED', 'does not verify');
    const forged = signed('{}');
    const tampered = { ...forged, getRawBody: () => new TextEncoder().encode('{ }') };
    await rejects(context.authenticate(tampered), 'UNAUTHENTICATED', 'does not verify');
    await rejects(context.authenticate(signed('{}', { participant: 'nobody' })), 'UNAUTHENTICATED', 'unknown participant');
  });

  it('a stale or future timestamp and a replayed nonce: UNAUTHENTICATED', async () => {
    await rejects(
      context.authenticate(signed('{}', { timestamp: new Date(now.getTime() - 31_000).toISOString() })),
      'UNAUTHENTICATED',
      /old/,
    );
    await rejects(
      context.authenticate(signed('{}', { timestamp: new Date(now.getTime() + 31_000).toISOString() })),
      'UNAUTHENTICATED',
      /future/,
    );
    const request = signed('{}', { nonce: 'the-same-nonce-123456' });
    await context.authenticate(request);
    await rejects(context.authenticate(request), 'UNAUTHENTICATED', 'replayed');
  });

  it('given a revoked key, then it stops authenticating at once, and a later rotation does not bring it back; the new key works', async () => {
    await admin(REGISTRY_COMMAND_TYPES.RevokeKey, { participant_id: 'gone', key_id: 'k1' });
    await rejects(context.authenticate(signed('{}', { participant: 'gone', key: other.privateKey })), 'UNAUTHENTICATED', 'revoked');
    const next = keyPair();
    await admin(REGISTRY_COMMAND_TYPES.RotateKey, { participant_id: 'gone', public_key: next.raw });
    await rejects(context.authenticate(signed('{}', { participant: 'gone', key: other.privateKey })), 'UNAUTHENTICATED', 'revoked');
    expect((await context.authenticate(signed('{}', { participant: 'gone', key: next.privateKey }))).key_id).toBe('k2');
  });

  it('given an immediate rotation (no effective_at) and no revocation, then the rotated-out key stops authenticating at once and the new key works', async () => {
    const first = keyPair();
    const second = keyPair();
    await admin(REGISTRY_COMMAND_TYPES.RegisterParticipant, { participant_id: 'rotated', roles: ['agent'], public_key: first.raw });
    expect((await context.authenticate(signed('{}', { participant: 'rotated', key: first.privateKey }))).key_id).toBe('k1');

    await admin(REGISTRY_COMMAND_TYPES.RotateKey, { participant_id: 'rotated', public_key: second.raw });

    await rejects(
      context.authenticate(signed('{}', { participant: 'rotated', key: first.privateKey })),
      'UNAUTHENTICATED',
      'key k1 of rotated was rotated out',
    );
    expect((await context.authenticate(signed('{}', { participant: 'rotated', key: second.privateKey }))).key_id).toBe('k2');
  });

  it('given a rotation with a cool-down, then the old key authenticates until effective_at and the new one is refused as pending; from effective_at the old key is rotated out and the new one works', async () => {
    const start = now;
    const first = keyPair();
    const second = keyPair();
    const effectiveAt = new Date(start.getTime() + 3_600_000).toISOString();
    await admin(REGISTRY_COMMAND_TYPES.RegisterParticipant, { participant_id: 'cooling', roles: ['agent'], public_key: first.raw });
    await admin(REGISTRY_COMMAND_TYPES.RotateKey, { participant_id: 'cooling', public_key: second.raw, effective_at: effectiveAt });
    try {
      now = new Date(start.getTime() + 3_599_999);
      expect((await context.authenticate(signed('{}', { participant: 'cooling', key: first.privateKey }))).key_id).toBe('k1');
      await rejects(
        context.authenticate(signed('{}', { participant: 'cooling', key: second.privateKey })),
        'UNAUTHENTICATED',
        `key k2 of cooling is pending a rotation that takes effect at ${effectiveAt}`,
      );

      now = new Date(effectiveAt);
      await rejects(
        context.authenticate(signed('{}', { participant: 'cooling', key: first.privateKey })),
        'UNAUTHENTICATED',
        'key k1 of cooling was rotated out',
      );
      expect((await context.authenticate(signed('{}', { participant: 'cooling', key: second.privateKey }))).key_id).toBe('k2');
    } finally {
      now = start;
    }
  });

  it('acting as someone else is FORBIDDEN naming the field; grants decide per domain', async () => {
    const identity = await context.authenticate(signed('{}'));
    await expect(context.actAs(identity, 'bob', 'participant_id')).rejects.toMatchObject({ code: 'FORBIDDEN', field: 'participant_id' });
    expect(context.authorize(identity, 'respond', 'risk.credit')).toMatchObject({ domain: 'risk', domain_authority: 0.9 });
    expect(() => context.authorize(identity, 'respond', 'ops')).toThrow(expect.objectContaining({ code: 'FORBIDDEN' }));
    expect(() => context.authorize(identity, 'resolve', 'risk')).toThrow(
      expect.objectContaining({ code: 'FORBIDDEN', field: 'resolved_by' }),
    );
    expect(context.canRead(identity, 'internal')).toBe(true);
    expect(context.canRead(identity, 'confidential')).toBe(false);
  });

  it('with auth off the declared identity is taken and nothing is refused', async () => {
    const identity = await off.authenticate(undefined, 'anyone');
    expect(identity).toMatchObject({ participant_id: 'anyone', via: 'declared', state: { status: 'unregistered' } });
    expect(off.authorize(identity, 'resolve', 'ops')).toBeUndefined();
    expect(off.canRead(identity, 'restricted')).toBe(true);
    expect(off.metadata('anyone').actor).toBe('anyone');
    expect(() => context.metadata('anyone')).toThrow(expect.objectContaining({ code: 'UNAUTHENTICATED' }));
    now = new Date(now.getTime());
  });
});
