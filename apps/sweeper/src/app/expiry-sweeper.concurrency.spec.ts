import fc from 'fast-check';
import {
  AcpError,
  DEFAULT_DECIDER_CONFIG,
  PROPOSAL_COMMAND_TYPES,
  ProposalCommand,
  ProposalEvent,
  decide,
  foldProposal,
  isTerminalEvent,
  reactionCommandId,
} from '@conclave/acp-protocol';
import { InMemoryEventLog, type EventLog, type LogEvent } from '@conclave/event-log';
import { overTheNetwork } from '@conclave/event-log/testing';
import { loadConfig, MemorySnapshots, ProposalStore, Reactors, Readiness } from '@conclave/service-kit';
import { ulid } from 'ulid';
import { ExpirySweeper } from './expiry-sweeper';
import { SweeperConfig } from './sweeper.config';

/*
 * The sweeper is the reactor that decides every proposal nobody else decides: at its deadline it
 * records ExpireProposal (expired, approved or rejected by the responses in, escalated on a tie,
 * or resolved by quorum first). The invariant checked over every burst: with responses arriving
 * through several intake replicas up to and past the deadlines, and two sweeper replicas that
 * are replaced mid-burst by one restored from their shared snapshot (the only one left, so what
 * it restored must be enough), every proposal is decided exactly once, not before its deadline, as the decider rules on the responses recorded before
 * it; every accepted response is in the log once and before the decision; no queue is left with
 * work.
 */

const clock = { now: () => new Date() };
// Snapshots every few events: replicas save and restore them while the burst goes on.
const config = loadConfig(SweeperConfig, {
  CONCLAVE_AUTH_MODE: 'off',
  CONCLAVE_EXPIRY_GRACE_MS: '0',
  CONCLAVE_SWEEP_INTERVAL_MS: '100',
  CONCLAVE_SNAPSHOT_EVERY_EVENTS: '7',
  CONCLAVE_SNAPSHOT_EVERY_MS: '100',
});
const PARTICIPANTS = ['p1', 'p2', 'p3', 'p4'];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const submit = (id: string, expiresAt: Date): ProposalCommand => ({
  type: PROPOSAL_COMMAND_TYPES.SubmitProposal,
  command_id: ulid(),
  now: new Date().toISOString(),
  actor: 'author',
  data: {
    proposal_id: id,
    type: 'proposal',
    domain: 'ops',
    author: 'author',
    payload: { id },
    quorum: 3,
    created_at: new Date().toISOString(),
    expires_at: expiresAt.toISOString(),
  },
});
const respond = (id: string, who: string, endorse: boolean): ProposalCommand => ({
  type: PROPOSAL_COMMAND_TYPES.RecordResponse,
  command_id: ulid(),
  now: new Date().toISOString(),
  actor: who,
  data: {
    proposal_id: id,
    participant_id: who,
    response_type: endorse ? 'endorse' : 'challenge',
    confidence: 0.9,
    domain_authority: 0.8,
    trust_score: 0.9,
  },
});

/** Appends refused on a stale version, over every view: the replicas really raced. */
let conflicts = 0;
const replicaView = (log: InMemoryEventLog, delays: readonly number[]): EventLog =>
  overTheNetwork(log, { delays, deliveries: true, onConflict: () => conflicts++ });

interface SweeperReplica {
  store: ProposalStore;
  sweeper: ExpirySweeper;
  stop(): Promise<void>;
}

async function sweeperReplica(view: EventLog, snapshots: MemorySnapshots): Promise<SweeperReplica> {
  const store = new ProposalStore(view as EventLog<LogEvent>, DEFAULT_DECIDER_CONFIG);
  await store.onApplicationBootstrap();
  // Every sweeper replica keeps its snapshot under the same name, as in a deployment.
  const reactors = new Reactors(view, () => undefined, config, 'sweeper', snapshots, new Readiness());
  const sweeper = new ExpirySweeper(store, clock, config, reactors);
  await sweeper.onApplicationBootstrap();
  return {
    store,
    sweeper,
    stop: async () => {
      await sweeper.onApplicationShutdown();
      await store.onApplicationShutdown();
    },
  };
}

/** One proposal of the burst: its deadline, and the responses sent to it (participant, endorse, when). */
type Plan = { expiresInMs: number; writer: number; responses: { who: number; endorse: boolean; atMs: number; writer: number }[] };

const proposalPlan = fc.record({
  expiresInMs: fc.integer({ min: 40, max: 250 }),
  writer: fc.nat(2),
  responses: fc.array(fc.record({ who: fc.nat(3), endorse: fc.boolean(), atMs: fc.integer({ min: 0, max: 320 }), writer: fc.nat(2) }), {
    maxLength: 5,
  }),
});

/** The pure decider's ruling on ExpireProposal at `now`, on what the log held before the decision. */
function expectedDecision(id: string, before: readonly ProposalEvent[], now: string): ProposalEvent {
  const command: ProposalCommand = {
    type: PROPOSAL_COMMAND_TYPES.ExpireProposal,
    command_id: reactionCommandId(id, 1000),
    now,
    actor: 'conclave-sweeper',
    data: { proposal_id: id },
  };
  return decide(command, foldProposal(before), DEFAULT_DECIDER_CONFIG)[0];
}

describe('ExpirySweeper: deadlines racing responses through several replicas', () => {
  it('given bursts of proposals with responses through 3 intake replicas up to and past their deadlines, and 2 sweeper replicas (replaced mid-burst by one restored from their shared snapshot), then every proposal is decided once, not early, as the decider rules, and every queue drains', async () => {
    let restored = 0;
    const decided = new Set<string>();
    await fc.assert(
      fc.asyncProperty(
        fc.array(proposalPlan, { minLength: 10, maxLength: 30 }),
        fc.array(fc.nat(2), { minLength: 1, maxLength: 12 }),
        fc.integer({ min: 20, max: 200 }),
        async (plans: Plan[], delays, replaceAtMs) => {
          // Given three intake replicas and two sweeper replicas, each with its own view of one log
          const log = new InMemoryEventLog();
          const snapshots = new MemorySnapshots();
          const writers = await Promise.all(
            [0, 1, 2].map(async () => {
              const w = new ProposalStore(replicaView(log, delays) as EventLog<LogEvent>, DEFAULT_DECIDER_CONFIG);
              await w.onApplicationBootstrap();
              return w;
            }),
          );
          const sweepers = [
            await sweeperReplica(replicaView(log, delays), snapshots),
            await sweeperReplica(replicaView(log, delays), snapshots),
          ];

          // When the proposals are submitted at once and their responses sent concurrently, up to
          // and past their deadlines, while one sweeper replica is replaced by a new one
          const ids = plans.map(() => ulid());
          const accepted = new Map<string, Set<string>>(ids.map((id) => [id, new Set<string>()]));
          const acceptedOf = (id: string) => accepted.get(id) ?? new Set<string>();
          const refusals: { id: string; who: string; code: string }[] = [];
          // The replica restored from the snapshot is then the only one left: what it restored must be enough.
          const replaced = (async () => {
            await sleep(replaceAtMs);
            await sweepers[1].stop();
            if (await snapshots.load('sweeper-sweeper')) restored++;
            sweepers[1] = await sweeperReplica(replicaView(log, delays), snapshots);
            await sweepers[0].stop();
            sweepers.shift();
          })();
          await Promise.all(
            plans.map(async (plan, i) => {
              const id = ids[i];
              await writers[plan.writer].execute(submit(id, new Date(Date.now() + plan.expiresInMs)));
              await Promise.all(
                plan.responses.map(async (r) => {
                  await sleep(r.atMs);
                  const who = PARTICIPANTS[r.who];
                  try {
                    // Appended, or the same response already recorded: either way it is in the log.
                    await writers[r.writer].execute(respond(id, who, r.endorse));
                    acceptedOf(id).add(who);
                  } catch (err) {
                    if (!(err instanceof AcpError)) throw err;
                    refusals.push({ id, who, code: err.code });
                  }
                }),
              );
            }),
          );
          await replaced;

          // Then every proposal gets its decision, and every sweeper's queue drains
          const decisions = async () =>
            Promise.all(
              ids.map(async (id) => (await log.read(`proposal-${id}`)).events.filter((e) => isTerminalEvent(e.event as ProposalEvent))),
            );
          const end = Date.now() + 10_000;
          while (Date.now() < end && ((await decisions()).some((d) => d.length === 0) || sweepers.some((s) => s.sweeper.pending > 0)))
            await sleep(20);
          expect(sweepers.map((s) => s.sweeper.pending)).toEqual([0]);

          for (const id of ids) {
            const events = (await log.read(`proposal-${id}`)).events.map((e) => e.event as ProposalEvent);
            const terminal = events.filter(isTerminalEvent);
            // Decided exactly once: never left pending, never twice
            expect({ id, decisions: terminal.map((e) => e.type) }).toEqual({ id, decisions: [expect.any(String)] });
            const at = events.indexOf(terminal[0]);
            decided.add(terminal[0].type);
            const submitted = foldProposal(events.slice(0, 1));
            if (submitted.status === 'initial') throw new Error(`${id} was never submitted`);
            // Not before its deadline, and as the decider rules on the responses recorded before it
            expect(Date.parse(terminal[0].occurred_at)).toBeGreaterThanOrEqual(Date.parse(submitted.proposal.expires_at ?? ''));
            const expected = expectedDecision(id, events.slice(0, at), terminal[0].occurred_at);
            expect({ type: terminal[0].type, data: terminal[0].data }).toEqual({ type: expected.type, data: expected.data });
            // Every accepted response is in the log once, before the decision; no refused one is
            const responders = events.flatMap((e) => (e.type === 'ResponseRecorded' ? [e.data.response.participant_id] : []));
            expect(new Set(responders).size).toBe(responders.length);
            expect(events.slice(at + 1).filter((e) => e.type === 'ResponseRecorded')).toEqual([]);
            expect([...responders].sort()).toEqual([...acceptedOf(id)].sort());
          }
          // A refusal is the proposal's state, never a lost race: closed at quorum or past its deadline,
          // or the participant's other response already recorded
          expect(refusals.filter((r) => !['PROPOSAL_NOT_PENDING', 'DUPLICATE_RESPONSE'].includes(r.code))).toEqual([]);

          await Promise.all(sweepers.map((s) => s.stop()));
          await Promise.all(writers.map((w) => w.onApplicationShutdown()));
        },
      ),
      { numRuns: 8 },
    );
    // The bursts did what they are for: replicas raced, a replica was restored from a snapshot,
    // and proposals ended every way the sweeper decides them.
    expect(conflicts).toBeGreaterThan(0);
    expect(restored).toBeGreaterThan(0);
    expect([...decided].sort()).toEqual(expect.arrayContaining(['ProposalExpired', 'ProposalResolved']));
  }, 120_000);
});
