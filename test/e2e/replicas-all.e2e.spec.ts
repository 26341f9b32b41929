import { KvLease, LeaseRecord, leaseBucketOf, NATS_CONNECTION, Readiness } from '@conclave/service-kit';
import { NatsConnection } from 'nats';
import { AuditLog } from '../../apps/audit/src/app/audit-log';
import { ConclaveHarness, eventually, Instance, ServiceName } from '../support/conclave-harness';
import { checkInvariants, describeReport, noViolations, readRun, RunRecord, runNamesOf, violationCounts } from '../support/invariants';
import { LoadAgent, pool, ProposalOutcome, ProposalPlan } from '../support/load-agent';

/**
 * Every service at two and at three replicas, in this process, on the shared NATS server. The
 * audit chain is the one piece of work with a single writer: its replicas share a lease
 * (`audit-chain` in `<event stream>_LEASES`). The holder is cut off as a crash looks to NATS (its
 * connection closed, the lease never released); a standby must take the lease over once it
 * expired, never before, and the chain must end with every event exactly once.
 */
const SERVICES: ServiceName[] = ['intake', 'resolver', 'sweeper', 'escalation', 'council', 'audit'];
/** Short, so the takeover is quick here; production runs 10 s (deploy/k8s/services/audit.yaml). */
const LEASE_MS = 4_000;
const PER_PHASE = 60;
const ROUTES = JSON.stringify([{ id: 'replicas', domain_prefix: 'replicas', assignees: ['human-oncall'] }]);

const quorum: ProposalPlan = {
  domain: 'replicas.test',
  quorum: 3,
  responses: [
    { participant_id: 'voter-a', response_type: 'endorse' },
    { participant_id: 'voter-b', response_type: 'endorse' },
    { participant_id: 'voter-c', response_type: 'challenge' },
  ],
};
/** One response and a deadline: a sweeper replica expires it. */
const timed: ProposalPlan = { ...quorum, responses: [quorum.responses[0]], expiresInMs: 2_000 };
/** A tie at quorum 2: escalated, then routed by an escalation replica. */
const tie: ProposalPlan = { ...quorum, quorum: 2, responses: [quorum.responses[0], quorum.responses[2]] };
const planOf = (i: number): ProposalPlan => (i % 6 === 0 ? timed : i % 6 === 3 ? tie : quorum);
const TERMINAL = new Set(['ProposalResolved', 'ProposalExpired', 'ProposalEscalated']);

const decode = (data: Uint8Array): LeaseRecord => JSON.parse(new TextDecoder().decode(data)) as LeaseRecord;

describe.each([2, 3])('%i replicas of every service', (replicas) => {
  const h = new ConclaveHarness({ CONCLAVE_AUDIT_LEASE_MS: String(LEASE_MS), CONCLAVE_ESCALATION_ROUTES: ROUTES });
  afterAll(async () => {
    const jsm = await h.nc?.jetstreamManager();
    await h.stop();
    for (const name of [`KV_${leaseBucketOf(h.env['CONCLAVE_EVENT_STREAM'])}`, `KV_${h.env['CONCLAVE_EVENT_STREAM']}_COUNCIL_LEASES`])
      await jsm?.streams.delete(name).catch(() => undefined);
  });

  it(`given ${replicas} replicas of each service, when the audit lease holder is cut off mid-load without releasing its lease, then one standby takes it over after it expired and not before, and every proposal is decided and every event audited exactly once`, async () => {
    // Given every service at the replica count, and an agent
    await h.start(...SERVICES.flatMap((s) => Array.from({ length: replicas }, () => s)));
    const agent = new LoadAgent(() => h.nc, { prefix: h.prefix, timeoutMs: 5_000, retryForMs: 60_000 });
    const audits = (): Instance[] => h.instances.filter((i) => i.name === 'audit');
    const leaseOf = (i: Instance): KvLease => i.app.get(AuditLog).lease;
    const holders = async () => {
      await eventually(
        async () => (audits().filter((i) => leaseOf(i).held).length === 1 ? true : undefined),
        30_000,
        'one audit lease holder',
      );
      return audits().filter((i) => leaseOf(i).held);
    };
    const [holder] = await holders();
    // Standbys are ready (they follow the chain and answer queries) while not writing.
    await eventually(
      async () => (audits().every((i) => i.app.get(Readiness).report().ready) ? true : undefined),
      30_000,
      'every audit replica ready, the standbys included',
    );
    const outcomes: ProposalOutcome[] = [];
    outcomes.push(...(await pool(Array.from({ length: PER_PHASE }), 8, (_, i) => agent.post(planOf(i), i))));

    // When the holder is cut off (its connection closed: no renewal, no release) while load goes on
    const kv = await h.nc.jetstream().views.kv(leaseBucketOf(h.env['CONCLAVE_EVENT_STREAM']));
    const before = await kv.get('audit-chain');
    const last = before ? decode(before.value) : undefined;
    const cutAt = Date.now();
    const load = pool(Array.from({ length: PER_PHASE }), 8, (_, i) => agent.post(planOf(PER_PHASE + i), PER_PHASE + i));
    await (holder.app.get(NATS_CONNECTION) as NatsConnection).close();
    const [next] = await eventually(
      async () => {
        const held = audits().filter((i) => i !== holder && leaseOf(i).held);
        return held.length > 0 ? held : undefined;
      },
      30_000,
      'a standby holding the audit lease',
    );
    const takeoverMs = Date.now() - cutAt;
    const first = await kv.get('audit-chain');
    const taken = first ? decode(first.value) : undefined;
    outcomes.push(...(await load));

    // Then the lease was taken by a standby no earlier than the cut-off holder's had expired
    expect(last?.holder).toBe(leaseOf(holder).options.holder);
    expect([
      ...audits()
        .filter((i) => i !== holder)
        .map((i) => leaseOf(i).options.holder),
    ]).toContain(taken?.holder);
    expect(Date.parse(taken?.acquired_at ?? '')).toBeGreaterThanOrEqual(Date.parse(last?.expires_at ?? ''));
    // and exactly one replica holds it at the end (a starved holder may have handed it on meanwhile: still one)
    const [current] = await eventually(
      async () => {
        const held = audits().filter((i) => leaseOf(i).held);
        return held.length === 1 ? held : undefined;
      },
      30_000,
      'exactly one audit lease holder',
    );
    expect(current).not.toBe(holder);
    console.log(
      `${replicas} replicas: audit lease taken over ${takeoverMs} ms after the holder was cut off (lease ${LEASE_MS} ms; first taker ${next === current ? 'still holds it' : 'handed it on'})`,
    );

    // and every proposal is decided once, every event and rejection in the chain once, the chain verifies
    const accepted = outcomes
      .filter((o, i) => o.proposed && (planOf(i) === timed || o.responded === planOf(i).responses.length))
      .map((o) => o.proposal_id);
    expect(accepted).toHaveLength(2 * PER_PHASE);
    let run: RunRecord = { events: [], decisions: [], escalations: [] };
    let report = checkInvariants(run);
    await eventually(
      async () => {
        run = await readRun(h.nc, runNamesOf(h.env), { audit: true });
        report = checkInvariants(run, { attempts: agent.attempts, expirySlackMs: LEASE_MS + 8_000 });
        const terminal = new Set(run.events.filter((e) => TERMINAL.has(e.event.type)).map((e) => e.id));
        const audited = run.audit?.entries.length === run.events.length + (run.audit?.rejections.length ?? 0);
        return accepted.every((id) => terminal.has(id)) && audited && report.ok ? true : undefined;
      },
      60_000,
      'every accepted proposal decided and every event audited',
    ).catch(() => undefined);
    if (!report.ok) console.warn(describeReport(report));
    expect(violationCounts(report)).toEqual(noViolations());
    expect(report.stuck).toEqual([]);
    const terminal = new Map<string, number>();
    for (const e of run.events) if (TERMINAL.has(e.event.type)) terminal.set(e.id, (terminal.get(e.id) ?? 0) + 1);
    expect(accepted.filter((id) => terminal.get(id) !== 1)).toEqual([]);
    expect(run.audit?.entries.length).toBe(run.events.length + (run.audit?.rejections.length ?? 0));
    // The new writer's in-memory chain is the stream's.
    expect(current.app.get(AuditLog).head.seq).toBe(run.audit?.entries.length);
  }, 240_000);
});
