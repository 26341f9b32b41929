import { acpStreamNames } from '@conclave/messaging';
import { AckPolicy, ConsumerMessages, DeliverPolicy } from 'nats';
import { ConclaveHarness, eventually } from '../support/conclave-harness';
import { DecisionCollector } from '../support/decisions';

const STEP_MS = 300;
const POLICIES = [{ id: 'prod', domain_prefix: 'ops', when: { path: 'payload.env', equals: 'production' }, assign_to: 'team-sre' }];
const ROUTES = [
  { id: 'ops', domain_prefix: 'ops', assignees: ['human-oncall'] },
  {
    id: 'ladder',
    domain_prefix: 'ladder',
    assignees: ['human-first'],
    ladder: [
      { action: 'remind', after_ms: STEP_MS },
      { action: 'reassign', after_ms: STEP_MS, to: ['human-fallback'] },
      { action: 'default', after_ms: STEP_MS, outcome: 'rejected' },
    ],
  },
  { id: 'board', domain_prefix: 'board', sign_off: { required: 2, of: ['alice', 'bob', 'carol'], veto: false } },
  { id: 'veto', domain_prefix: 'veto', sign_off: { required: 2, of: ['alice', 'bob', 'carol'], veto: true } },
];
const now = () => new Date().toISOString();
const F = { domain_authority: 0.9, confidence: 0.8, trust_score: 0.9 };

type Notification = {
  notification?: string;
  proposal_id?: string;
  event_id?: string;
  occurred_at?: string;
  msgId?: string;
  [k: string]: unknown;
};

/**
 * The escalation desk end to end against real NATS: policy escalation with per-domain routing,
 * the escalation ladder (every step an event and a notification), and M-of-N human sign-off.
 */
describe('escalation desk: policy escalation, ladder, M-of-N sign-off (intake + resolver + escalation over NATS)', () => {
  const h = new ConclaveHarness({
    CONCLAVE_ESCALATION_POLICIES: JSON.stringify(POLICIES),
    CONCLAVE_ESCALATION_ROUTES: JSON.stringify(ROUTES),
    CONCLAVE_LADDER_SWEEP_INTERVAL_MS: '1000',
  });
  let decisions: DecisionCollector;
  const notifications: Notification[] = [];
  let messages: ConsumerMessages;

  beforeAll(async () => {
    await h.start('intake', 'resolver', 'escalation');
    decisions = new DecisionCollector(h.client);
    const stream = acpStreamNames(h.run).escalations;
    const jsm = await h.nc.jetstreamManager();
    const ci = await jsm.consumers.add(stream, {
      ack_policy: AckPolicy.None,
      deliver_policy: DeliverPolicy.All,
      filter_subject: `${h.prefix}.v1.escalations.>`,
    });
    messages = await (await h.nc.jetstream().consumers.get(stream, ci.name)).consume();
    void (async () => {
      for await (const m of messages) notifications.push({ ...m.json<Notification>(), msgId: m.headers?.get('Nats-Msg-Id') });
    })();
  });
  afterAll(async () => {
    await messages?.close();
    await h.stop();
  });

  const notificationsFor = (id: string) => notifications.filter((n) => n.proposal_id === id && n.notification);
  const inboxEntry = (id: string, test: (e: { routed: boolean; status: string }) => boolean = (e) => e.routed) =>
    eventually(
      async () => (await h.client.escalations({ status: 'all' })).find((e) => e.proposal_id === id && test(e)),
      10_000,
      `inbox entry for ${id}`,
    );

  describe('policy-defined escalation (RFC 10.1 item 3), routed per domain', () => {
    it("given a rule for production deploys, when one is proposed, then it is escalated before any vote, reason policy, assigned to the rule's team and the domain's human", async () => {
      const p = await h.client.propose({
        domain: 'ops.deploy',
        author: 'agent-ops',
        payload: { service: 'billing', env: 'production' },
        quorum: 2,
        created_at: now(),
      });
      expect(p).toMatchObject({
        status: 'escalated',
        responses: [],
        escalation: { reason: 'policy', policy_id: 'prod', assigned_to: 'team-sre' },
      });
      const [d] = await decisions.waitFor(p.proposal_id);
      expect(d).toMatchObject({ outcome: 'escalated', trigger: 'manual', escalation: { reason: 'policy', requested_by: 'policy:prod' } });
      expect(await inboxEntry(p.proposal_id)).toMatchObject({
        escalation: { reason: 'policy' },
        assignees: ['team-sre', 'human-oncall'],
        route_id: 'ops',
      });
      await expect(h.client.endorse(p.proposal_id, { participant_id: 'agent-x', ...F })).rejects.toMatchObject({
        code: 'PROPOSAL_NOT_PENDING',
      });

      await h.client.resolve(p.proposal_id, { outcome: 'approved', resolved_by: 'human-oncall', note: 'change window open' });
      const [, human] = await decisions.waitFor(p.proposal_id, 2);
      expect(human).toMatchObject({
        outcome: 'approved',
        trigger: 'manual',
        resolved_by: 'human-oncall',
        escalation: { reason: 'policy' },
      });
    });

    it('given the same rule, when a staging deploy is proposed, then it stays pending for the agents', async () => {
      const p = await h.client.propose({
        domain: 'ops.deploy',
        author: 'agent-ops',
        payload: { service: 'billing', env: 'staging' },
        quorum: 2,
        created_at: now(),
      });
      expect(p.status).toBe('pending');
      expect(await h.client.escalations({ status: 'all', domain: 'ops' })).not.toContainEqual(
        expect.objectContaining({ proposal_id: p.proposal_id }),
      );
    });
  });

  describe('the escalation ladder', () => {
    it('given a ladder of reminder, fallback and default, when nobody answers, then each step is an event and a notification, and the default outcome is decided by timeout', async () => {
      const p = await h.client.propose({ domain: 'ladder.pricing', author: 'agent-p', payload: { pct: 3 }, quorum: 2, created_at: now() });
      await h.client.endorse(p.proposal_id, { participant_id: 'a', ...F });
      await h.client.challenge(p.proposal_id, { participant_id: 'b', ...F });
      const [escalated] = await decisions.waitFor(p.proposal_id, 1);
      expect(escalated.outcome).toBe('escalated');

      const [, defaulted] = await decisions.waitFor(p.proposal_id, 2, 15_000);
      expect(defaulted).toMatchObject({ outcome: 'rejected', trigger: 'timeout', ladder_default: true, escalation: { reason: 'tie' } });
      expect(Date.parse(defaulted.decided_at) - Date.parse(escalated.decided_at)).toBeGreaterThanOrEqual(3 * STEP_MS);

      const steps = await eventually(async () => {
        const n = notificationsFor(p.proposal_id);
        return n.some((x) => x.notification === 'default-outcome') ? n : undefined;
      });
      expect(steps.map((n) => n.notification)).toEqual(['assigned', 'reminder', 'reassigned', 'default-outcome']);
      expect(steps[1]).toMatchObject({ step: 0, assignees: ['human-first'], domain: 'ladder.pricing' });
      expect(steps[2]).toMatchObject({ step: 1, from: ['human-first'], to: ['human-fallback'] });
      for (const n of steps) expect(n.msgId).toBe(n.event_id);
      const gaps = steps.slice(1).map((n) => Date.parse(n.occurred_at!) - Date.parse(escalated.decided_at));
      expect(gaps[0]).toBeGreaterThanOrEqual(STEP_MS);
      expect(gaps[1]).toBeGreaterThanOrEqual(2 * STEP_MS);

      expect(await inboxEntry(p.proposal_id, (e) => e.status === 'resolved')).toMatchObject({
        assignees: ['human-fallback'],
        resolution: { outcome: 'rejected' },
      });
      await expect(
        h.client.resolve(p.proposal_id, { outcome: 'approved', resolved_by: 'human-fallback', note: 'late' }),
      ).rejects.toMatchObject({ code: 'NOT_ESCALATED' });
    });

    it('given a ladder, when a human resolves before the first step, then no step is taken', async () => {
      const p = await h.client.propose({ domain: 'ladder.fast', author: 'agent-p', payload: { pct: 1 }, quorum: 3, created_at: now() });
      await h.client.escalate(p.proposal_id, { reason: 'needs a human', requested_by: 'agent-p2' });
      await h.client.resolve(p.proposal_id, { outcome: 'approved', resolved_by: 'human-first', note: 'quick yes' });
      const [, d] = await decisions.waitFor(p.proposal_id, 2);
      expect(d).toMatchObject({ outcome: 'approved', trigger: 'manual' });
      // Longer than the whole ladder: still no reminder, and no second outcome.
      await decisions.until(() => false, 4 * STEP_MS, 'nothing').catch(() => undefined);
      expect(notificationsFor(p.proposal_id).map((n) => n.notification)).toEqual(['assigned']);
      expect(decisions.for(p.proposal_id)).toHaveLength(2);
    });
  });

  describe('M-of-N human sign-off', () => {
    async function escalated(domain: string) {
      const p = await h.client.propose({ domain, author: 'agent-board', payload: { acquisition: 'ACME' }, quorum: 3, created_at: now() });
      await h.client.escalate(p.proposal_id, { reason: 'board decision', requested_by: 'agent-ceo' });
      await decisions.waitFor(p.proposal_id, 1);
      return p.proposal_id;
    }

    it('given 2 of alice, bob, carol, when alice then bob approve, then approved after the second, with both sign-offs on the decision', async () => {
      const id = await escalated('board.deals');
      const first = await h.client.resolve(id, { outcome: 'approved', resolved_by: 'alice', note: 'numbers check out' });
      expect(first.status).toBe('escalated');
      expect(await inboxEntry(id, (e) => (e as unknown as { sign_offs: unknown[] }).sign_offs.length === 1)).toMatchObject({
        sign_offs: [{ by: 'alice', outcome: 'approved' }],
      });

      await expect(h.client.resolve(id, { outcome: 'approved', resolved_by: 'mallory', note: 'me too' })).rejects.toMatchObject({
        code: 'FORBIDDEN',
        field: 'resolved_by',
      });
      await expect(h.client.resolve(id, { outcome: 'rejected', resolved_by: 'alice', note: 'second thoughts' })).rejects.toMatchObject({
        code: 'DUPLICATE_RESPONSE',
      });
      expect(decisions.for(id)).toHaveLength(1);

      const second = await h.client.resolve(id, { outcome: 'approved', resolved_by: 'bob', note: 'agreed' });
      expect(second).toMatchObject({ status: 'resolved', resolution: { outcome: 'approved', trigger: 'manual', resolved_by: 'bob' } });
      const [, d] = await decisions.waitFor(id, 2);
      expect(d.sign_offs?.map((s) => [s.by, s.outcome])).toEqual([
        ['alice', 'approved'],
        ['bob', 'approved'],
      ]);
      const signed = await eventually(async () => {
        const n = notificationsFor(id).filter((x) => x.notification === 'sign-off');
        return n.length === 2 ? n : undefined;
      });
      expect(signed.map((n) => n['approvals'])).toEqual([1, 2]);
    });

    it('given a veto route, when one named human rejects, then rejected at once, flagged vetoed', async () => {
      const id = await escalated('veto.deals');
      await h.client.resolve(id, { outcome: 'approved', resolved_by: 'alice', note: 'fine' });
      const vetoed = await h.client.resolve(id, { outcome: 'rejected', resolved_by: 'carol', note: 'regulatory risk' });
      expect(vetoed).toMatchObject({ status: 'resolved', resolution: { outcome: 'rejected', vetoed: true, resolved_by: 'carol' } });
      const [, d] = await decisions.waitFor(id, 2);
      expect(d).toMatchObject({ outcome: 'rejected', vetoed: true, note: 'regulatory risk' });
      await expect(h.client.resolve(id, { outcome: 'approved', resolved_by: 'bob', note: 'too late' })).rejects.toMatchObject({
        code: 'NOT_ESCALATED',
      });
    });
  });
});
