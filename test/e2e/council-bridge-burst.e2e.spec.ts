import { PROPOSAL_EVENT_TYPES, proposalStream, type ProposalEvent } from '@conclave/acp-protocol';
import { COUNCIL_EVENT_TYPES as E, CouncilEvent, councilRunStream } from '@conclave/council-protocol';
import type { EventLog } from '@conclave/event-log';
import { AUDIT_PATTERNS, AuditEntry } from '@conclave/registry-protocol';
import { ConclaveClient } from '@conclave/sdk';
import { scriptedGoalContract, scriptedPanel, valueConflictBehaviour } from '@conclave/sdk/testing';
import { EVENT_LOG } from '@conclave/service-kit';
import { AcpReactions } from '../../apps/council/src/app/acp-reactions';
import { eventually } from '../support/conclave-harness';
import { CouncilHarness } from '../support/council-harness';

/** Councils asked for from ACP at once: half end on a value choice. */
const RUNS = 24;
const DOMAIN = 'burst.bridge';
const OWNER = 'burst-owner';
/** Who races to resolve each value-choice escalation: the owner, and two who may not choose. */
const RESOLVERS = [OWNER, 'burst-mallory', 'burst-bob'];

/**
 * The council service's ACP reactions under a burst, on two council replicas (as Kubernetes runs
 * them), with intake, resolver, escalation and audit on the real NATS server (authentication off).
 * Many ACP proposals ask for deliberation at once, from several clients; half of the councils end
 * on a value choice, whose escalations several writers race to resolve. Over all of them: every
 * council started and decided once, every decision posted to ACP once, every value choice taken
 * once when its owner won the race and refused (and audited) once when someone else did; no
 * reaction left waiting on either replica.
 */
describe('council ↔ ACP reactions under a burst, on two replicas (ACP starts, posts and value choices at once)', () => {
  const c = new CouncilHarness({ CONCLAVE_COUNCIL_LEASE_MS: '3000' });
  let log: EventLog<CouncilEvent>;

  beforeAll(async () => {
    await c.start();
    for (const name of ['intake', 'resolver', 'escalation', 'audit', 'council'] as const) await c.h.add(name);
    log = c.h.instances[0].app.get<EventLog<CouncilEvent>>(EVENT_LOG);
  });
  afterAll(() => c.stop());

  it('given many councils asked for from ACP at once and value choices resolved by racing writers, then each start, post and choice happens exactly once', async () => {
    // Given two panels shared by every run: one that agrees, one that leaves a value conflict.
    const clean = ['builder', 'skeptic', 'operator'].map((l) => `bb-clean-${l}`);
    const torn = ['builder', 'skeptic', 'operator'].map((l) => `bb-torn-${l}`);
    c.join(Object.fromEntries([...clean, 'bb-clean-chair'].map((id) => [id, { score: () => 3 }])));
    c.join(Object.fromEntries([...torn, 'bb-torn-chair'].map((id) => [id, valueConflictBehaviour()])));
    const writers = await Promise.all(
      [0, 1, 2].map(() => ConclaveClient.connect({ nc: c.h.nc, prefix: c.h.prefix, streamSuffix: c.h.run })),
    );

    // When the deliberation requests arrive at once, from three writers.
    const asks = await Promise.all(
      Array.from({ length: RUNS }, (_, i) => {
        const conflicted = i % 2 === 1;
        return writers[i % writers.length].propose({
          domain: DOMAIN,
          author: OWNER,
          quorum: 2,
          payload: {
            deliberate: {
              goal_contract: scriptedGoalContract({ goal_contract_id: `gc-burst-${i}`, decision_owner: OWNER }),
              panel: conflicted
                ? scriptedPanel({ proposers: torn, chair: 'bb-torn-chair' })
                : scriptedPanel({ proposers: clean, chair: 'bb-clean-chair' }),
              policy: { stage_timeout_ms: 15_000 },
            },
          },
        });
      }),
    );
    const runs = asks.map((a, i) => ({ runId: `acp_${a.proposal_id}`, ask: a.proposal_id, conflicted: i % 2 === 1 }));

    // Then each is decided and its decision posted back (escalated when it needs a value choice).
    const bridgedOf = async (runId: string) => (await c.client.get(runId, OWNER)).acp_bridge;
    const bridged = new Map<string, { proposal_id: string; escalated: boolean }>();
    await eventually(
      async () => {
        for (const r of runs)
          if (!bridged.has(r.runId)) {
            const b = await bridgedOf(r.runId).catch(() => undefined);
            if (b) bridged.set(r.runId, b);
          }
        return bridged.size === RUNS ? true : undefined;
      },
      45_000,
      'every decision posted back to ACP',
    );
    for (const r of runs)
      expect({ run: r.runId, escalated: bridged.get(r.runId)?.escalated }).toEqual({ run: r.runId, escalated: r.conflicted });

    // When the owner and two others race to resolve each escalation, from three writers at once.
    const conflicted = runs.filter((r) => r.conflicted);
    await Promise.all(
      conflicted.map(async (r, j) => {
        const proposalId = bridged.get(r.runId)!.proposal_id;
        await eventually(async () => ((await c.h.client.get(proposalId)).status === 'escalated' ? true : undefined), 15_000, 'escalated');
        // Each run's race starts with another of them, so that every kind of winner occurs.
        const order = [...RESOLVERS.slice(j % RESOLVERS.length), ...RESOLVERS.slice(0, j % RESOLVERS.length)];
        await Promise.all(
          order.map((who, k) =>
            writers[k]
              .resolve(proposalId, { outcome: who === 'burst-bob' ? 'rejected' : 'approved', resolved_by: who, note: `by ${who}` })
              .catch(() => undefined),
          ),
        );
      }),
    );

    // Then, once both replicas have nothing left to do, over every run:
    const reactions = c.h.instances.filter((i) => i.name === 'council').map((i) => i.app.get(AcpReactions));
    expect(reactions).toHaveLength(2);
    const winners = new Map<string, string>();
    for (const r of conflicted) {
      // The same log holds the ACP proposals the bridge posted.
      const acp = await (log as unknown as EventLog<ProposalEvent>).read(proposalStream(bridged.get(r.runId)!.proposal_id));
      const resolutions = acp.events.filter((e) => e.event.type === PROPOSAL_EVENT_TYPES.EscalationResolved);
      // ACP takes one resolution of the race.
      expect(resolutions).toHaveLength(1);
      const data = resolutions[0].event.data as { resolution: { resolved_by?: string } };
      winners.set(r.runId, data.resolution.resolved_by ?? resolutions[0].event.actor);
    }
    const ownerWon = conflicted.filter((r) => winners.get(r.runId) === OWNER);
    const othersWon = conflicted.filter((r) => winners.get(r.runId) !== OWNER);
    const refusals = async () =>
      (
        await c.h.client.call<{ entries: AuditEntry[] }>(AUDIT_PATTERNS.query, {
          action: 'rejected:council.acp.value-choice',
          limit: 1000,
        })
      ).entries.filter((e) => othersWon.some((r) => bridged.get(r.runId)!.proposal_id === e.proposal_id));
    await eventually(
      async () => {
        if (reactions.some((x) => x.backlog > 0)) return undefined;
        for (const r of ownerWon) if (!(await c.client.get(r.runId, OWNER)).value_choice) return undefined;
        return (await refusals()).length >= othersWon.length ? true : undefined;
      },
      30_000,
      'every value choice taken or refused',
    );

    for (const r of runs) {
      const events = (await log.read(councilRunStream(r.runId))).events.map((e) => e.event.type);
      const count = (type: string) => events.filter((t) => t === type).length;
      const choices = ownerWon.includes(r) ? 1 : 0;
      // Started once, ended once, posted once, the choice taken once where the owner won (none where another did).
      expect({
        run: r.runId,
        started: count(E.RunStarted),
        terminated: count(E.RunTerminated),
        bridged: count(E.DecisionBridged),
        chosen: count(E.ValueChoiceResolved),
      }).toEqual({
        run: r.runId,
        started: 1,
        terminated: 1,
        bridged: 1,
        chosen: choices,
      });
      // Posted to ACP once: one observation and one proposal carry the run.
      const { proposals } = await c.h.client.list({ domain: DOMAIN, limit: 500 });
      const entries = proposals.filter((p) => (p.payload as { council?: { run_id?: string } }).council?.run_id === r.runId);
      expect({ run: r.runId, entries: entries.map((p) => p.type).sort() }).toEqual({ run: r.runId, entries: ['observation', 'proposal'] });
    }
    // Downstream readers got each run's end once, and its new terminal state once after the owner's choice.
    const published = (runId: string) => c.decisions.received.filter((d) => d.run_id === runId).length;
    await eventually(
      async () => (runs.every((r) => published(r.runId) >= (ownerWon.includes(r) ? 2 : 1)) ? true : undefined),
      15_000,
      'every COUNCIL_DECISIONS message',
    );
    for (const r of runs)
      expect({ run: r.runId, messages: published(r.runId) }).toEqual({ run: r.runId, messages: ownerWon.includes(r) ? 2 : 1 });
    // Each refused choice is audited once, in the name of who won the race.
    const audited = await refusals();
    expect(audited.map((e) => [e.proposal_id, e.actor]).sort()).toEqual(
      othersWon.map((r) => [bridged.get(r.runId)!.proposal_id, winners.get(r.runId)]).sort(),
    );
    // Nothing is left waiting.
    expect(reactions.map((x) => x.backlog)).toEqual([0, 0]);
    console.log(`value choices: the owner won ${ownerWon.length}, another resolver ${othersWon.length} of ${conflicted.length}`);
    await Promise.all(writers.map((w) => w.close()));
  }, 90_000);
});
