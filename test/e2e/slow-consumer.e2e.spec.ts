import type { DecisionEvent } from '@conclave/acp-protocol';
import { acpStreamNames } from '@conclave/messaging';
import { ConclaveHarness, eventually } from '../support/conclave-harness';
import { LoadAgent, pool, ProposalPlan } from '../support/load-agent';

/**
 * A downstream consumer of ACP_DECISIONS that falls behind: one whose loop body is slower than
 * the server's ack wait (so the server redelivers what it holds unacknowledged), and one that
 * stops reading while decisions keep coming, then resumes under its durable name. Both must see
 * every decision exactly once and in stream order.
 */
const PROPOSALS = 400;
const plan: ProposalPlan = {
  domain: 'slow.consumer',
  quorum: 1,
  responses: [{ participant_id: 'voter-a', response_type: 'endorse' }],
};

/** The stream sequence of each decision, read back from the stream, to check the order a consumer saw. */
async function streamOrder(h: ConclaveHarness): Promise<Map<string, number>> {
  const jsm = await h.nc.jetstreamManager();
  const stream = acpStreamNames(h.env['CONCLAVE_STREAM_SUFFIX']).decisions;
  const last = (await jsm.streams.info(stream)).state.last_seq;
  const order = new Map<string, number>();
  for (let seq = 1; seq <= last; seq++) {
    const m = await jsm.streams.getMessage(stream, { seq });
    order.set((m.json() as DecisionEvent).event_id, seq);
  }
  return order;
}

function inOrderOnce(seen: DecisionEvent[], order: Map<string, number>): { duplicates: number; outOfOrder: number } {
  const ids = new Set<string>();
  let duplicates = 0;
  let outOfOrder = 0;
  let last = 0;
  for (const d of seen) {
    if (ids.has(d.event_id)) duplicates++;
    ids.add(d.event_id);
    const seq = order.get(d.event_id) ?? 0;
    if (seq < last) outOfOrder++;
    last = Math.max(last, seq);
  }
  return { duplicates, outOfOrder };
}

describe('a slow consumer of ACP_DECISIONS falls behind, then catches up with every decision in order', () => {
  const h = new ConclaveHarness();

  beforeAll(async () => {
    await h.start('intake', 'resolver');
  });
  afterAll(() => h.stop());

  it(`given a reader slower than its ack wait, when ${PROPOSALS} proposals are decided, then it reads each decision once, in stream order`, async () => {
    // Given a reader whose loop body takes 10 ms per decision with a 1 s ack wait: the 256
    // decisions it holds take longer than that, so the server redelivers some of them
    const stop = new AbortController();
    const seen: DecisionEvent[] = [];
    const reading = (async () => {
      for await (const d of h.client.decisions({ domain: plan.domain, ackWaitMs: 1_000, signal: stop.signal })) {
        seen.push(d);
        await new Promise((r) => setTimeout(r, 10));
      }
    })();

    // When the proposals are posted and decided
    const agent = new LoadAgent(() => h.nc, { prefix: h.prefix, timeoutMs: 20_000 });
    const outcomes = await pool(Array.from({ length: PROPOSALS }), 16, (_, i) => agent.post(plan, i));
    expect(outcomes.filter((o) => !o.proposed || o.responded !== 1)).toEqual([]);

    // Then, once it has caught up, it has read every decision once and in stream order
    await eventually(
      async () => (new Set(seen.map((d) => d.proposal_id)).size >= PROPOSALS ? true : undefined),
      120_000,
      'the reader to catch up',
    );
    // A redelivery still in flight would show as a late duplicate: give the server one more ack wait
    await new Promise((r) => setTimeout(r, 1_500));
    stop.abort();
    await reading;
    const order = await streamOrder(h);
    expect(new Set(seen.map((d) => d.proposal_id)).size).toBe(PROPOSALS);
    expect(inOrderOnce(seen, order)).toEqual({ duplicates: 0, outOfOrder: 0 });
  }, 180_000);

  it('given a durable reader that stops while decisions keep coming, when it resumes under its name, then it reads exactly the decisions it had not, in order', async () => {
    const durable = `slow-${h.run}`;
    const domain = `${plan.domain}.paused`;
    const paused: ProposalPlan = { ...plan, domain };
    const agent = new LoadAgent(() => h.nc, { prefix: h.prefix, timeoutMs: 20_000 });

    // Given a durable reader that has read the first 50 decisions, then stopped
    await pool(Array.from({ length: 50 }), 16, (_, i) => agent.post(paused, i));
    const first: DecisionEvent[] = [];
    const stopFirst = new AbortController();
    for await (const d of h.client.decisions({ domain, durable, signal: stopFirst.signal })) {
      first.push(d);
      if (first.length === 50) stopFirst.abort();
    }

    // When 300 more are decided while it is away, and it comes back under the same name
    await pool(Array.from({ length: 300 }), 16, (_, i) => agent.post(paused, 50 + i));
    const rest: DecisionEvent[] = [];
    const stopRest = new AbortController();
    for await (const d of h.client.decisions({ domain, durable, signal: stopRest.signal })) {
      rest.push(d);
      if (rest.length === 300) stopRest.abort();
    }

    // Then together they are every decision once, in stream order, and nothing is left for it
    const order = await streamOrder(h);
    const all = [...first, ...rest];
    expect(new Set(all.map((d) => d.proposal_id)).size).toBe(350);
    expect(inOrderOnce(all, order)).toEqual({ duplicates: 0, outOfOrder: 0 });
    const jsm = await h.nc.jetstreamManager();
    const info = await jsm.consumers.info(acpStreamNames(h.env['CONCLAVE_STREAM_SUFFIX']).decisions, durable);
    expect({ pending: info.num_pending, unacknowledged: info.num_ack_pending }).toEqual({ pending: 0, unacknowledged: 0 });
    await jsm.consumers.delete(acpStreamNames(h.env['CONCLAVE_STREAM_SUFFIX']).decisions, durable);
  }, 180_000);
});
