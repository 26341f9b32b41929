import { acpSubjects, acpStreamNames } from '@conclave/messaging';
import type { DecisionEvent, Proposal } from '@conclave/acp-protocol';
import { ConclaveClient, ConclaveError, provisionFeed } from '@conclave/sdk';
import { ulid } from 'ulid';
import { ConclaveHarness, NATS_URL } from '../support/conclave-harness';

/** Reads `iterator` until `enough` says so, then ends it through its AbortController (everything read is acknowledged). */
async function readUntil<T>(iterator: AsyncGenerator<T>, stop: AbortController, enough: (seen: T[]) => boolean): Promise<T[]> {
  const seen: T[] = [];
  for await (const item of iterator) {
    seen.push(item);
    if (enough(seen)) stop.abort();
  }
  return seen;
}

/** The SDK's defaults and its two followers: created_at, decisions() validation, proposals() durable. */
describe('SDK: created_at by default, decisions() validated, proposals() followed durably (intake + resolver over NATS)', () => {
  const h = new ConclaveHarness();

  beforeAll(async () => {
    await h.start('intake', 'resolver');
  });
  afterAll(() => h.stop());

  it('given no created_at and no proposal_id, when an agent proposes, then the SDK sends now and a fresh ULID', async () => {
    const before = Date.now();
    const p = await h.client.propose({ domain: 'sdk.defaults', author: 'alice', payload: {}, quorum: 1 });
    expect(Date.parse(p.created_at)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(p.created_at)).toBeLessThanOrEqual(Date.now());
    expect(p.proposal_id).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
  });

  it('given a decision event of an unsupported schema_version on the stream, then decisions() ends with UNSUPPORTED_SCHEMA_VERSION; a valid one is read', async () => {
    const js = h.nc.jetstream();
    const subject = acpSubjects(h.prefix).decisions('sdk.bad');
    const forged = {
      schema_version: '2.0',
      event_id: ulid(),
      event_type: 'decision',
      proposal_id: ulid(),
      domain: 'sdk.bad',
      outcome: 'approved',
      trigger: 'quorum',
      votes_for: 1,
      votes_against: 0,
      decided_at: new Date().toISOString(),
    };
    await js.publish(subject, new TextEncoder().encode(JSON.stringify(forged)), { msgID: forged.event_id });
    const error = await (async () => {
      for await (const _d of h.client.decisions({ domain: 'sdk.bad' })) return undefined;
      return undefined;
    })().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConclaveError);
    expect(error).toMatchObject({ code: 'UNSUPPORTED_SCHEMA_VERSION', field: 'schema_version' });

    const o = await h.client.propose({ type: 'observation', domain: 'sdk.good', author: 'alice', payload: { seen: true }, quorum: 1 });
    const stop = new AbortController();
    const [d] = await readUntil<DecisionEvent>(
      h.client.decisions({ domain: 'sdk.good', signal: stop.signal }),
      stop,
      (seen) => seen.length >= 1,
    );
    expect(d).toMatchObject({ schema_version: '1.0', proposal_id: o.proposal_id, outcome: 'approved', auto_resolved: true });
  });

  it('given a durable reader of acp.v1.proposals.<domain>, when it stops and comes back, then it resumes after the last proposal it read', async () => {
    const domain = `review.r${ulid().toLowerCase()}`;
    const durable = `reviewer-${ulid()}`;
    const propose = (n: number) => h.client.propose({ domain, author: 'alice', payload: { n }, quorum: 2 });
    const p1 = await propose(1);
    const p2 = await propose(2);
    const first = new AbortController();
    const session1 = await readUntil<Proposal>(
      h.client.proposals({ domain, durable, signal: first.signal }),
      first,
      (seen) => seen.length >= 2,
    );
    expect(session1.map((p) => p.proposal_id)).toEqual([p1.proposal_id, p2.proposal_id]);
    expect(session1[0]).toMatchObject({ schema_version: '1.0', status: 'pending', responses: [], domain });

    const p3 = await propose(3);
    const second = new AbortController();
    const session2 = await readUntil<Proposal>(
      h.client.proposals({ domain, durable, signal: second.signal }),
      second,
      (seen) => seen.length >= 1,
    );
    expect(session2.map((p) => p.proposal_id)).toEqual([p3.proposal_id]);
    await (await h.nc.jetstreamManager()).consumers.delete(acpStreamNames(h.run).proposals, durable);
  });

  /**
   * One reader session on a provisioned feed (docs/consumers.md): a client of its own connection
   * binds to the durable, reads `count` items, stops and disconnects (its acknowledgements flushed).
   */
  async function boundSession<T>(follow: (reader: ConclaveClient, signal: AbortSignal) => AsyncGenerator<T>, count: number): Promise<T[]> {
    const reader = await ConclaveClient.connect({ servers: NATS_URL, prefix: h.prefix, streamSuffix: h.run });
    try {
      const stop = new AbortController();
      return await readUntil(follow(reader, stop.signal), stop, (seen) => seen.length >= count);
    } finally {
      await reader.close();
    }
  }

  it('given a feed provisioned on ACP_PROPOSALS for a domain, when a bound reader reads two proposals and stops, two more arrive, and a new reader binds to the same durable, then it receives exactly the two new ones', async () => {
    // Given: an operator provisions the feed (what `conclave feeds provision` runs), filtered on one domain.
    const domain = `review.f${ulid().toLowerCase()}`;
    const durable = `feed-reviewer-${ulid()}`;
    const stream = acpStreamNames(h.run).proposals;
    const jsm = await h.nc.jetstreamManager();
    const feed = await provisionFeed(jsm, { stream, durable, filter: acpSubjects(h.prefix).proposals(domain) });
    expect(feed.created).toBe(true);
    const consumers = (await jsm.streams.info(stream)).state.consumer_count;
    const propose = (n: number) => h.client.propose({ domain, author: 'alice', payload: { n }, quorum: 2 });
    const follow = (reader: ConclaveClient, signal: AbortSignal) => reader.proposals({ durable, bind: true, signal });
    const p1 = await propose(1);
    const p2 = await propose(2);

    // When: the first reader reads them and stops; two more arrive while nobody reads; a new reader binds.
    const session1 = await boundSession(follow, 2);
    const p3 = await propose(3);
    const p4 = await propose(4);
    const session2 = await boundSession(follow, 2);

    // Then: the second reader starts after the last proposal the first one read: none twice, none missed.
    expect(session1.map((p) => p.proposal_id)).toEqual([p1.proposal_id, p2.proposal_id]);
    expect(session2.map((p) => p.proposal_id)).toEqual([p3.proposal_id, p4.proposal_id]);
    expect(await jsm.consumers.info(stream, durable)).toMatchObject({ num_pending: 0, num_ack_pending: 0, num_redelivered: 0 });
    // Binding created no consumer: the feed is the one the operator made.
    expect((await jsm.streams.info(stream)).state.consumer_count).toBe(consumers);
    await jsm.consumers.delete(stream, durable);
  });

  it('given a feed provisioned on ACP_DECISIONS for a domain, when a bound reader reads two decisions and stops, two more are decided, and a new reader binds to the same durable, then it receives exactly the two new ones', async () => {
    // Given: the operator's feed of one domain's decisions; observations are decided on submission (auto-resolved).
    const domain = `feed.d${ulid().toLowerCase()}`;
    const durable = `feed-downstream-${ulid()}`;
    const stream = acpStreamNames(h.run).decisions;
    const jsm = await h.nc.jetstreamManager();
    const feed = await provisionFeed(jsm, { stream, durable, filter: acpSubjects(h.prefix).decisions(domain) });
    expect(feed.created).toBe(true);
    const consumers = (await jsm.streams.info(stream)).state.consumer_count;
    const observe = async (n: number) =>
      (await h.client.propose({ type: 'observation', domain, author: 'alice', payload: { n }, quorum: 1 })).proposal_id;
    const follow = (reader: ConclaveClient, signal: AbortSignal) => reader.decisions({ durable, bind: true, signal });
    const first = [await observe(1), await observe(2)];

    // When: the first reader reads both decisions and stops; two more are decided; a new reader binds.
    const session1 = await boundSession(follow, 2);
    const later = [await observe(3), await observe(4)];
    const session2 = await boundSession(follow, 2);

    // Then: each decision is read once, by the session that was reading when it came.
    expect(session1.map((d) => d.proposal_id).sort()).toEqual([...first].sort());
    expect(session2.map((d) => d.proposal_id).sort()).toEqual([...later].sort());
    expect(new Set([...session1, ...session2].map((d) => d.event_id)).size).toBe(4);
    expect(await jsm.consumers.info(stream, durable)).toMatchObject({ num_pending: 0, num_ack_pending: 0, num_redelivered: 0 });
    expect((await jsm.streams.info(stream)).state.consumer_count).toBe(consumers);
    await jsm.consumers.delete(stream, durable);
  });

  it('given an observation, then it is not offered for review on acp.v1.proposals (only entries of type proposal are)', async () => {
    const domain = `review.o${ulid().toLowerCase()}`;
    await h.client.propose({ type: 'observation', domain, author: 'alice', payload: {}, quorum: 1 });
    const p = await h.client.propose({ domain, author: 'alice', payload: {}, quorum: 1 });
    const stop = new AbortController();
    const seen = await readUntil<Proposal>(h.client.proposals({ domain, signal: stop.signal }), stop, (s) =>
      s.some((x) => x.proposal_id === p.proposal_id),
    );
    expect(seen.map((x) => x.proposal_id)).toEqual([p.proposal_id]);
  });
});
