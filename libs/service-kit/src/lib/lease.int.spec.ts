import { connect, KV, NatsConnection } from 'nats';
import { ulid } from 'ulid';
import { KvLease } from './lease';

const NATS_URL = process.env['NATS_URL'] ?? 'nats://127.0.0.1:4222';
const TTL_MS = 900;

async function until(check: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('KvLease: one holder at a time on JetStream KV, fenced by the revision', () => {
  const bucket = `LEASE_TEST_${ulid()}`;
  const connections: NatsConnection[] = [];
  const leases: KvLease[] = [];
  const events: string[] = [];

  const open = async (holder: string): Promise<KvLease> => {
    const nc = await connect({ servers: NATS_URL });
    connections.push(nc);
    const lease = new KvLease(
      nc,
      { bucket, key: 'work', holder, ttlMs: TTL_MS, replicas: 1 },
      { acquired: (token) => void events.push(`${holder} acquired ${token}`), lost: (why) => void events.push(`${holder} lost: ${why}`) },
    );
    leases.push(lease);
    return lease;
  };

  afterAll(async () => {
    for (const l of leases) await l.stop().catch(() => undefined);
    // A test may have closed any holder's connection, so the clean-up opens its own.
    const admin = await connect({ servers: NATS_URL });
    const jsm = await admin.jetstreamManager();
    await jsm.streams.delete(`KV_${bucket}`).catch(() => undefined);
    for (const nc of [...connections, admin]) await nc.close().catch(() => undefined);
  });

  it('given five replicas starting at once, when they race for the lease, then exactly one holds it and the others stand by', async () => {
    const racing = await Promise.all(['a', 'b', 'c', 'd', 'e'].map((h) => open(h)));
    await Promise.all(racing.map((l) => l.start()));
    expect(racing.filter((l) => l.held)).toHaveLength(1);
    // Renewals go on for several lease times: still the same single holder.
    const holder = racing.find((l) => l.held);
    await new Promise((r) => setTimeout(r, TTL_MS * 3));
    expect(racing.filter((l) => l.held)).toEqual([holder]);
    expect((await racing[0].holder())?.holder).toBe(holder?.options.holder);
  });

  it('given a holder that stops cleanly, when it releases the lease, then one standby takes it over with a higher token', async () => {
    const holder = leases.find((l) => l.held);
    const token = holder?.token ?? 0;
    await holder?.stop();
    await until(() => leases.filter((l) => l !== holder && l.held).length === 1, TTL_MS * 4, 'a standby holding the lease');
    const next = leases.find((l) => l.held);
    expect(next).not.toBe(holder);
    expect(next?.token ?? 0).toBeGreaterThan(token);
    expect(events).toContain(`${holder?.options.holder} lost: stopping`);
  });

  it('given a holder cut off from NATS, when its lease expires, then it stands down by itself and a standby takes over no earlier than the expiry', async () => {
    const holder = leases.find((l) => l.held);
    const index = leases.indexOf(holder as KvLease);
    const before = await holder?.holder();
    await connections[index].close();
    await until(() => !holder?.held, TTL_MS * 4, 'the cut-off holder to stand down');
    await until(() => leases.filter((l) => l !== holder && l.held).length === 1, TTL_MS * 6, 'a standby holding the lease');
    const after = await leases.find((l) => l.held)?.holder();
    expect(Date.parse(after?.acquired_at ?? '')).toBeGreaterThanOrEqual(Date.parse(before?.expires_at ?? ''));
    expect(events.filter((e) => e.startsWith(`${holder?.options.holder} lost: not renewed`))).toHaveLength(1);
  });
});

/**
 * One lease in a bucket of its own on a connection of its own, with what it was told (when, and
 * what); `close` stops it and removes the bucket.
 */
async function soloLease(holder: string, ttlMs = TTL_MS, standingDownMs = 0) {
  const bucket = `LEASE_TEST_${ulid()}`;
  const nc = await connect({ servers: NATS_URL });
  const events: { at: number; what: string }[] = [];
  const lease = new KvLease(
    nc,
    { bucket, key: 'work', holder, ttlMs, replicas: 1 },
    {
      acquired: (token) => void events.push({ at: Date.now(), what: `acquired ${token}` }),
      // The holder's work may take a while to stop (a write waiting out its timeout, say).
      lost: async (why) => {
        events.push({ at: Date.now(), what: `lost: ${why}` });
        if (standingDownMs === 0) return;
        await new Promise((r) => setTimeout(r, standingDownMs));
        events.push({ at: Date.now(), what: 'stood down' });
      },
    },
  );
  const said = () => events.map((e) => e.what);
  /** The lease's own KV handle, to hold its writes back. */
  const kv = () => (lease as unknown as { bucket(): Promise<KV> }).bucket();
  const close = async () => {
    jest.restoreAllMocks();
    await lease.stop();
    await (await nc.jetstreamManager()).streams.delete(`KV_${bucket}`).catch(() => undefined);
    await nc.close();
  };
  return { bucket, nc, lease, events, said, kv, close };
}

describe('KvLease: a renewal stored while its reply was lost', () => {
  it('given a holder whose renewal was stored but whose reply never came (a leader election), when it next renews, then it stands down and takes the lease back with a new token', async () => {
    const { bucket, nc, lease, said, close } = await soloLease('solo');
    try {
      // Given the holder, and its own record written again behind its back, as a renewal whose reply was lost
      await lease.start();
      const token = lease.token ?? 0;
      const kv = await nc.jetstream().views.kv(bucket);
      const entry = await kv.get('work');
      await kv.update('work', entry?.value ?? new Uint8Array(), entry?.revision ?? 0);

      // When it next renews, then it stands down, and takes the lease back
      await until(() => said().some((e) => e.startsWith('lost: revision moved')), TTL_MS * 4, 'the holder to stand down');
      await until(() => lease.held, TTL_MS * 4, 'the holder to take the lease back');
      expect(lease.token ?? 0).toBeGreaterThan(token);
      expect(said().filter((e) => e.startsWith('acquired'))).toHaveLength(2);
      expect((await lease.holder())?.holder).toBe('solo');
    } finally {
      await close();
    }
  });
});

describe('KvLease: a holder whose renewals get no reply', () => {
  it('given a holder whose lease writes hang (a stream leader that stopped answering), when no renewal lands, then it gives the lease up before the expiry it last wrote, once, and a renewal that lands late is released', async () => {
    const { lease, events, kv: leaseKv, close } = await soloLease('stalled');
    try {
      // Given the holder, and its lease writes from now on held back for two lease times (updates land late, creates time out)
      await lease.start();
      const kv = await leaseKv();
      const update = kv.update.bind(kv);
      const delayed: Promise<unknown>[] = [];
      jest.spyOn(kv, 'update').mockImplementation((key, value, revision) => {
        const late = new Promise<number>((resolve, reject) =>
          setTimeout(() => update(key, value, revision).then(resolve, reject), TTL_MS * 2),
        );
        delayed.push(late.catch(() => undefined));
        return late;
      });
      jest
        .spyOn(kv, 'create')
        .mockImplementation(() => new Promise<number>((_, reject) => setTimeout(() => reject(new Error('TIMEOUT')), TTL_MS * 2)));
      // When no renewal lands, then the holder stands down before the expiry of its last write that
      // landed (the record as it stood down; the held-back writes land two lease times later)
      await until(() => !lease.held, TTL_MS * 2, 'the holder to stand down');
      const last = await lease.holder();
      expect(last?.holder).toBe('stalled');
      const lost = events.filter((e) => e.what.startsWith('lost: not renewed'));
      expect(lost).toHaveLength(1);
      expect(lost[0].at).toBeLessThan(Date.parse(last?.expires_at ?? ''));

      // and the renewal that lands after it stood down is given back: the entry is gone
      await Promise.all(delayed);
      expect(await lease.holder()).toBeNull();
      expect(events.filter((e) => e.what.startsWith('lost'))).toHaveLength(1);
    } finally {
      await close();
    }
  });
});

describe('KvLease: taken back while the holder is still standing down', () => {
  it('given a holder whose renewals time out and whose work takes a while to stop, when the lease could be taken again before that work has stopped, then it is acquired again only after', async () => {
    const { lease, events, said, kv: leaseKv, close } = await soloLease('slow', TTL_MS, TTL_MS * 2);
    try {
      // Given the holder, and its renewals failing after half a lease time
      await lease.start();
      const kv = await leaseKv();
      const update = kv.update.bind(kv);
      let failing = true;
      jest
        .spyOn(kv, 'update')
        .mockImplementation((key, value, revision) =>
          failing
            ? new Promise<number>((_, reject) => setTimeout(() => reject(new Error('TIMEOUT')), TTL_MS / 2))
            : update(key, value, revision),
        );
      // When it gives the lease up by its deadline, and its writes land again at once
      await until(() => !lease.held, TTL_MS * 2, 'the holder to give the lease up');
      failing = false;
      await until(() => said().filter((e) => e.startsWith('acquired')).length === 2, TTL_MS * 6, 'the lease taken back');
      // Then the work was told to start again only once it had stopped: never two at once
      expect(said().filter((e) => !e.startsWith('acquired'))).toEqual([expect.stringMatching(/^lost: not renewed/), 'stood down']);
      expect(said().indexOf('stood down')).toBeLessThan(said().lastIndexOf(said().filter((e) => e.startsWith('acquired'))[1]));
      expect(events.length).toBe(4);
    } finally {
      await close();
    }
  });
});

describe('KvLease: stopped while taking the lease', () => {
  it('given a process stopping while its first write of the lease is on its way, when the write lands, then the lease is given back at once', async () => {
    const { lease, said, kv: leaseKv, close } = await soloLease('leaving', TTL_MS * 10);
    try {
      // Given its create held back for a moment
      const kv = await leaseKv();
      const create = kv.create.bind(kv);
      let written!: () => void;
      const landed = new Promise<void>((r) => (written = r));
      let sent!: () => void;
      const onItsWay = new Promise<void>((r) => (sent = r));
      jest.spyOn(kv, 'create').mockImplementation(async (key, value) => {
        sent();
        await new Promise((r) => setTimeout(r, 200));
        const revision = await create(key, value);
        written();
        return revision;
      });
      const starting = lease.start();
      // When it stops before the write lands
      await onItsWay;
      await lease.stop();
      await landed;
      await starting;
      // Then nobody holds the lease, well within the lease time, and it never said it held it
      expect(await lease.holder()).toBeNull();
      expect(lease.held).toBe(false);
      expect(said()).toEqual([]);
    } finally {
      await close();
    }
  });
});
