import { connect, NatsConnection } from 'nats';
import { ulid } from 'ulid';
import { CouncilConfig } from './council.config';
import { RunLeases } from './run-lease';

/** The run lease against the real NATS server: one holder at a time, revision-checked renewals. */
describe('RunLeases: one council replica drives a run (JetStream KV, real NATS)', () => {
  let nc: NatsConnection;
  const config = Object.assign(new CouncilConfig(), { eventStream: `LEASE_${ulid()}`, leaseMs: 1_000 });
  let now = Date.parse('2026-08-03T10:00:00.000Z');
  const clock = { now: () => new Date(now) };
  let n = 0;
  const replica = () => new RunLeases(nc, config, clock, { next: () => `r${++n}` });
  const held = <T>(v: T | null): T => {
    if (v === null) throw new Error('expected the lease to be granted');
    return v;
  };

  beforeAll(async () => {
    nc = await connect({ servers: process.env['NATS_URL'] ?? 'nats://127.0.0.1:4222' });
  });
  afterAll(async () => {
    await (await nc.jetstreamManager()).streams.delete(`KV_${config.eventStream}_COUNCIL_LEASES`).catch(() => undefined);
    await nc.drain();
  });

  it("given a run leased by replica A, when B tries to take it, then B is refused until A's lease expires", async () => {
    const [a, b] = [replica(), replica()];
    const lease = await a.acquire('run-1');
    expect(lease).toMatchObject({ runId: 'run-1', tookOver: false });
    expect(await b.acquire('run-1')).toBeNull();
    expect(await a.holderOf('run-1')).toMatchObject({ holder: a.holder });
    now += 1_001;
    const taken = await b.acquire('run-1');
    expect(taken).toMatchObject({ tookOver: true });
    expect(await b.holderOf('run-1')).toMatchObject({ holder: b.holder });
  });

  it("given A renews in time, then B never gets it; once B took it over, A's renewal fails (the revision moved)", async () => {
    const [a, b] = [replica(), replica()];
    const lease = held(await a.acquire('run-2'));
    now += 600;
    expect(await a.renew(lease)).toBe(true);
    now += 600;
    expect(await b.acquire('run-2')).toBeNull();
    now += 1_001;
    expect(await b.acquire('run-2')).not.toBeNull();
    expect(await a.renew(lease)).toBe(false);
  });

  it('given the holder releases the lease, then another replica takes it at once; a stale release changes nothing', async () => {
    const [a, b, c] = [replica(), replica(), replica()];
    const lease = held(await a.acquire('run-3'));
    await a.release(lease);
    const taken = held(await b.acquire('run-3'));
    expect(taken).toMatchObject({ tookOver: false });
    await a.release(lease);
    expect(await c.acquire('run-3')).toBeNull();
    expect(await c.holderOf('run-3')).toMatchObject({ holder: b.holder });
  });

  it('given two replicas racing for a free run, then exactly one wins', async () => {
    const results = await Promise.all([replica(), replica(), replica()].map((r) => r.acquire('run-4')));
    expect(results.filter((r) => r !== null)).toHaveLength(1);
  });
});
