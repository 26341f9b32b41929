import { PROPOSAL_EVENT_TYPES, proposalStream } from '@conclave/acp-protocol';
import type { ProposalEvent } from '@conclave/acp-protocol';
import type { EventLog } from '@conclave/event-log';
import { EVENT_LOG } from '@conclave/service-kit';
import { acpStreamNames } from '@conclave/messaging';
import { ConclaveError } from '@conclave/sdk';
import { AckPolicy, DeliverPolicy } from 'nats';
import { ConclaveHarness, eventually } from '../support/conclave-harness';
import { DecisionCollector } from '../support/decisions';

const ROUTES = [{ id: 'pricing', domain_prefix: 'strategy', assignees: ['human-pricing-lead'] }];
const now = () => new Date().toISOString();
const tieVotes = { domain_authority: 0.9, confidence: 0.8, trust_score: 0.9 };

/** The inbox entry once the desk has routed it. */
const routedOn = (h: ConclaveHarness, id: string) =>
  eventually(
    async () => (await h.client.escalations({ status: 'all' })).find((e) => e.proposal_id === id && e.routed),
    10_000,
    `${id} routed`,
  );

/**
 * RFC 10 / Appendix C.4 end to end over NATS: a tie escalates, the escalation service takes it
 * (routes it to the domain's human), and a human resolution over `acp.v1.resolve` yields the
 * decision. Errors change nothing.
 */
describe('escalation service over NATS (acp.v1.resolve, inbox queries, notifications)', () => {
  const h = new ConclaveHarness({ CONCLAVE_ESCALATION_ROUTES: JSON.stringify(ROUTES) });
  let decisions: DecisionCollector;

  beforeAll(async () => {
    await h.start('intake', 'resolver', 'escalation');
    decisions = new DecisionCollector(h.client);
  });
  afterAll(() => h.stop());

  async function tie(domain = 'strategy.pricing') {
    const p = await h.client.propose({
      domain,
      author: 'agent-pricing',
      payload: { action: 'raise_price', pct: 5 },
      quorum: 2,
      created_at: now(),
    });
    await h.client.endorse(p.proposal_id, { participant_id: 'agent-a', ...tieVotes, reason: 'margin is thin' });
    await h.client.challenge(p.proposal_id, { participant_id: 'agent-b', ...tieVotes, reason: 'churn risk' });
    await decisions.waitFor(p.proposal_id, 1);
    return p.proposal_id;
  }

  const routed = (id: string) => routedOn(h, id);

  /** Events on the proposal's stream, read from the log itself. */
  const events = async (id: string) => (await h.instances[0].app.get<EventLog>(EVENT_LOG).read(proposalStream(id))).events.length;

  it('C.4 given a tie escalated by quorum, when the pricing lead resolves it over NATS, then APPROVED with trigger MANUAL, who and why', async () => {
    const id = await tie();
    const [escalated] = decisions.for(id);
    expect(escalated).toMatchObject({
      outcome: 'escalated',
      trigger: 'quorum',
      votes_for: 0.648,
      votes_against: 0.648,
      escalation: { reason: 'tie' },
    });

    const entry = await routed(id);
    expect(entry).toMatchObject({
      status: 'open',
      domain: 'strategy.pricing',
      assignees: ['human-pricing-lead'],
      route_id: 'pricing',
      escalation: { reason: 'tie' },
    });
    const view = await h.client.escalation(id);
    expect(view.proposal.responses.map((r) => [r.participant_id, r.weight, r.reason])).toEqual([
      ['agent-a', 0.648, 'margin is thin'],
      ['agent-b', 0.648, 'churn risk'],
    ]);
    expect(view.binding).toEqual({ escalation_id: escalated.event_id, payload_hash: expect.stringMatching(/^[0-9a-f]{64}$/) });

    const proposal = await h.client.resolve(id, {
      outcome: 'approved',
      resolved_by: 'human-pricing-lead',
      note: 'Pricing change approved after review',
      ...view.binding,
    });
    expect(proposal).toMatchObject({
      status: 'resolved',
      resolution: { outcome: 'approved', trigger: 'manual', resolved_by: 'human-pricing-lead' },
    });
    const [, human] = await decisions.waitFor(id, 2);
    expect(human).toMatchObject({
      outcome: 'approved',
      trigger: 'manual',
      resolved_by: 'human-pricing-lead',
      note: 'Pricing change approved after review',
      escalation: { reason: 'tie' },
    });
    expect(
      await eventually(async () => (await h.client.escalations({ status: 'resolved' })).find((e) => e.proposal_id === id)),
    ).toMatchObject({ status: 'resolved' });
  });

  it('given a resolved escalation, when resolved a second time, then NOT_ESCALATED and nothing is appended or published', async () => {
    const id = await tie();
    await routed(id);
    await h.client.resolve(id, { outcome: 'rejected', resolved_by: 'human-pricing-lead', note: 'no' });
    await decisions.waitFor(id, 2);
    const before = await events(id);
    await expect(
      h.client.resolve(id, { outcome: 'approved', resolved_by: 'human-pricing-lead', note: 'changed my mind' }),
    ).rejects.toMatchObject({ code: 'NOT_ESCALATED' });
    expect(await events(id)).toBe(before);
    expect((await h.client.get(id)).resolution).toMatchObject({ outcome: 'rejected' });

    // A decision appended after the refusal: the outbox publishes in log order, so a second
    // decision of `id` would reach the stream before this one does.
    const marker = await h.client.propose({
      type: 'observation',
      domain: 'strategy.pricing',
      author: 'agent-pricing',
      payload: { marker: id },
      quorum: 1,
      created_at: now(),
    });
    await decisions.waitFor(marker.proposal_id);
    expect(decisions.for(id)).toHaveLength(2);
    expect(decisions.received.map((d) => d.proposal_id).lastIndexOf(id)).toBeLessThan(
      decisions.received.findIndex((d) => d.proposal_id === marker.proposal_id),
    );
  });

  it('given a pending proposal, when someone resolves it, then NOT_ESCALATED and nothing changes', async () => {
    const p = await h.client.propose({
      domain: 'strategy.pricing',
      author: 'agent-pricing',
      payload: { x: 1 },
      quorum: 3,
      created_at: now(),
    });
    const before = await events(p.proposal_id);
    const err = await h.client.resolve(p.proposal_id, { outcome: 'approved', resolved_by: 'human-x', note: 'n' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConclaveError);
    expect(err).toMatchObject({ code: 'NOT_ESCALATED' });
    expect(await events(p.proposal_id)).toBe(before);
    expect((await h.client.get(p.proposal_id)).status).toBe('pending');
  });

  it('given an open escalation, when the resolution names another escalation or another payload hash, then refused and nothing changes', async () => {
    const id = await tie();
    const { binding } = await h.client.escalation(id);
    await routed(id);
    const before = await events(id);
    await expect(
      h.client.resolve(id, { outcome: 'approved', resolved_by: 'h', note: 'n', escalation_id: '01ARZ3NDEKTSV4RRFFQ69G5FAV' }),
    ).rejects.toMatchObject({ code: 'NOT_ESCALATED', field: 'escalation_id' });
    await expect(
      h.client.resolve(id, {
        outcome: 'approved',
        resolved_by: 'h',
        note: 'n',
        escalation_id: binding.escalation_id,
        payload_hash: '0'.repeat(64),
      }),
    ).rejects.toMatchObject({ code: 'CONFLICT', field: 'payload_hash' });
    expect(await events(id)).toBe(before);
    expect((await h.client.get(id)).status).toBe('escalated');
  });

  it('given an escalation, then the assignment goes out on <prefix>.v1.escalations.<domain> with Nats-Msg-Id = event id', async () => {
    const id = await tie('strategy.discounts');
    await routed(id);
    const stream = acpStreamNames(h.run).escalations;
    const jsm = await h.nc.jetstreamManager();
    const ci = await jsm.consumers.add(stream, {
      ack_policy: AckPolicy.None,
      deliver_policy: DeliverPolicy.All,
      filter_subject: `${h.prefix}.v1.escalations.strategy.discounts`,
    });
    const consumer = await h.nc.jetstream().consumers.get(stream, ci.name);
    const seen: Array<{ body: Record<string, unknown>; msgId?: string }> = [];
    const messages = await consumer.consume();
    for await (const m of messages) {
      seen.push({ body: m.json<Record<string, unknown>>(), msgId: m.headers?.get('Nats-Msg-Id') });
      if (seen.some((s) => s.body['notification'] === 'assigned')) break;
    }
    const assigned = seen.find((s) => s.body['notification'] === 'assigned')!;
    expect(assigned.body).toMatchObject({
      proposal_id: id,
      domain: 'strategy.discounts',
      event_type: 'EscalationRouted',
      routing: { assignees: ['human-pricing-lead'] },
    });
    expect(assigned.msgId).toBe(assigned.body['event_id']);
    // the escalation itself, published by the resolver's outbox with its decision event
    expect(seen.some((s) => (s.body['decision'] as { proposal_id?: string } | undefined)?.proposal_id === id)).toBe(true);
    await jsm.consumers.delete(stream, ci.name);
  });
});

/** Route configuration A, then B after a restart: same domains, other assignees and another ladder. */
const LADDER_STEP_MS = 300;
const ROUTES_A = [
  {
    id: 'route-a',
    domain_prefix: 'desk',
    assignees: ['human-a'],
    ladder: [
      { action: 'remind', after_ms: LADDER_STEP_MS },
      { action: 'default', after_ms: 3 * LADDER_STEP_MS, outcome: 'rejected' },
    ],
  },
];
const ROUTES_B = [
  {
    id: 'route-b',
    domain_prefix: 'desk',
    assignees: ['human-b'],
    ladder: [
      { action: 'reassign', after_ms: LADDER_STEP_MS, to: ['human-b2'] },
      { action: 'default', after_ms: LADDER_STEP_MS, outcome: 'approved' },
    ],
  },
];

/**
 * docs/escalation.md, Assignees: the desk records the route (assignees, ladder, sign-off) when it
 * takes an escalation, and later configuration changes do not touch it.
 */
describe('escalation service: a routed escalation keeps its route across a configuration change (restart)', () => {
  const h = new ConclaveHarness({ CONCLAVE_ESCALATION_ROUTES: JSON.stringify(ROUTES_A), CONCLAVE_LADDER_SWEEP_INTERVAL_MS: '1000' });
  let decisions: DecisionCollector;

  beforeAll(async () => {
    await h.start('intake', 'resolver', 'escalation');
    decisions = new DecisionCollector(h.client);
  });
  afterAll(() => h.stop());

  async function escalated(): Promise<string> {
    const p = await h.client.propose({
      domain: 'desk.pricing',
      author: 'agent-pricing',
      payload: { pct: 5 },
      quorum: 3,
      created_at: now(),
    });
    await h.client.escalate(p.proposal_id, { reason: 'needs a human', requested_by: 'agent-pricing' });
    await decisions.waitFor(p.proposal_id, 1);
    return p.proposal_id;
  }
  const routed = (id: string) => routedOn(h, id);
  /** The desk's events on the proposal's stream, from the log itself (intake's connection to it). */
  const deskEvents = async (id: string) =>
    (await h.instances[0].app.get<EventLog<ProposalEvent>>(EVENT_LOG).read(proposalStream(id))).events
      .map((e) => e.event)
      .filter((e) => e.type.startsWith('Escalation'));

  it('given an escalation routed under configuration A, when the service restarts with configuration B, then it keeps A’s assignees and ladder (A’s default decides it), while a new escalation gets B’s', async () => {
    // Given: routed under A; the service stops before A's default is due (so B's service is the one that applies it).
    const old = await escalated();
    expect(await routed(old)).toMatchObject({ route_id: 'route-a', assignees: ['human-a'] });
    const desk = h.instances.find((i) => i.name === 'escalation');
    if (!desk) throw new Error('no escalation service running');
    await h.kill(desk);
    expect((await h.client.get(old)).status).toBe('escalated');

    // When: the escalation service comes back with configuration B, and a new escalation arrives.
    h.env['CONCLAVE_ESCALATION_ROUTES'] = JSON.stringify(ROUTES_B);
    await h.add('escalation');
    const fresh = await escalated();

    // Then: the earlier escalation follows A to its end: reminded, never reassigned, A's default outcome.
    const [, oldFinal] = await decisions.waitFor(old, 2);
    expect(oldFinal).toMatchObject({ outcome: 'rejected', trigger: 'timeout', ladder_default: true });
    const oldEvents = await deskEvents(old);
    expect(oldEvents.map((e) => e.type)).toEqual([
      PROPOSAL_EVENT_TYPES.EscalationRouted,
      PROPOSAL_EVENT_TYPES.EscalationReminded,
      PROPOSAL_EVENT_TYPES.EscalationDefaulted,
    ]);
    expect(oldEvents[0]).toMatchObject({ data: { routing: { route_id: 'route-a', assignees: ['human-a'], ladder: ROUTES_A[0].ladder } } });
    const oldEntry = await eventually(
      async () => (await h.client.escalations({ status: 'all' })).find((e) => e.proposal_id === old && e.status !== 'open'),
      10_000,
      `${old} closed in the inbox`,
    );
    expect(oldEntry).toMatchObject({ route_id: 'route-a', assignees: ['human-a'], status: 'resolved' });
    // The new one is routed under B: B's assignees, B's reassignment, B's default outcome.
    expect(await routed(fresh)).toMatchObject({ route_id: 'route-b' });
    const [, freshFinal] = await decisions.waitFor(fresh, 2);
    expect(freshFinal).toMatchObject({ outcome: 'approved', trigger: 'timeout', ladder_default: true });
    const freshEvents = await deskEvents(fresh);
    expect(freshEvents.map((e) => e.type)).toEqual([
      PROPOSAL_EVENT_TYPES.EscalationRouted,
      PROPOSAL_EVENT_TYPES.EscalationReassigned,
      PROPOSAL_EVENT_TYPES.EscalationDefaulted,
    ]);
    expect(freshEvents[0]).toMatchObject({ data: { routing: { route_id: 'route-b', assignees: ['human-b'] } } });
    expect(freshEvents[1]).toMatchObject({ data: { from: ['human-b'], to: ['human-b2'] } });
  });
});
