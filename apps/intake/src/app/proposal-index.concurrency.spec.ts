import fc from 'fast-check';
import {
  AcpError,
  DEFAULT_DECIDER_CONFIG,
  foldProposal,
  isWithinDomain,
  PROPOSAL_COMMAND_TYPES,
  PROPOSAL_STATUSES,
  ProposalCommand,
  ProposalEvent,
} from '@conclave/acp-protocol';
import { InMemoryEventLog, type EventLog, type LogEvent } from '@conclave/event-log';
import { overTheNetwork } from '@conclave/event-log/testing';
import { loadConfig, MemorySnapshots, ProposalStore, Reactors, Readiness, ServiceConfig } from '@conclave/service-kit';
import { ulid } from 'ulid';
import { ProposalIndex } from './proposal-index';

/*
 * The proposal index is the read model behind `acp.v1.list`: every proposal's id, domain and status.
 * The invariant checked over every burst: with submissions, responses, escalations and
 * resolutions written at once through three intake replicas, and two index replicas (one of them
 * replaced mid-burst by one restored from their shared snapshot), every index lists exactly the
 * proposals of the log, in id order, each under the status and domain the log folds to.
 */

// Snapshots every few events: replicas save and restore them while the burst goes on.
const config = loadConfig(ServiceConfig, {
  CONCLAVE_AUTH_MODE: 'off',
  CONCLAVE_SNAPSHOT_EVERY_EVENTS: '5',
  CONCLAVE_SNAPSHOT_EVERY_MS: '100',
});
const PARTICIPANTS = ['p1', 'p2', 'p3', 'p4'];
const DOMAINS = ['ops', 'ops.db', 'risk'];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const meta = (actor: string) => ({ command_id: ulid(), now: new Date().toISOString(), actor });

const submit = (id: string, domain: string): ProposalCommand => ({
  type: PROPOSAL_COMMAND_TYPES.SubmitProposal,
  ...meta('author'),
  data: {
    proposal_id: id,
    type: 'proposal',
    domain,
    author: 'author',
    payload: { id },
    quorum: 2,
    created_at: new Date().toISOString(),
    expires_at: null,
  },
});
const respond = (id: string, who: string, endorse: boolean): ProposalCommand => ({
  type: PROPOSAL_COMMAND_TYPES.RecordResponse,
  ...meta(who),
  data: {
    proposal_id: id,
    participant_id: who,
    response_type: endorse ? 'endorse' : 'challenge',
    confidence: 0.9,
    domain_authority: 0.8,
    trust_score: 0.9,
  },
});
const resolve = (id: string): ProposalCommand => ({
  type: PROPOSAL_COMMAND_TYPES.ResolveProposal,
  ...meta('resolver'),
  data: { proposal_id: id },
});
const escalate = (id: string): ProposalCommand => ({
  type: PROPOSAL_COMMAND_TYPES.EscalateProposal,
  ...meta('author'),
  data: { proposal_id: id, reason: 'a human should look', requested_by: 'author' },
});

/** One proposal of the burst: its domain, and what is done to it (by whom, through which writer, when). */
type Plan = {
  domain: string;
  writer: number;
  responses: { who: number; endorse: boolean; writer: number; atMs: number }[];
  resolveAtMs: number | null;
  escalateAtMs: number | null;
};
const plan = fc.record({
  domain: fc.constantFrom(...DOMAINS),
  writer: fc.nat(2),
  responses: fc.array(fc.record({ who: fc.nat(3), endorse: fc.boolean(), writer: fc.nat(2), atMs: fc.integer({ min: 0, max: 80 }) }), {
    maxLength: 4,
  }),
  // The resolver's command, mostly after the responses, for most proposals; a human's escalation for a quarter.
  resolveAtMs: fc.oneof({ arbitrary: fc.integer({ min: 40, max: 140 }), weight: 4 }, { arbitrary: fc.constant(null), weight: 1 }),
  escalateAtMs: fc.oneof({ arbitrary: fc.integer({ min: 0, max: 140 }), weight: 1 }, { arbitrary: fc.constant(null), weight: 3 }),
}) as fc.Arbitrary<Plan>;

async function indexReplica(log: EventLog, snapshots: MemorySnapshots): Promise<ProposalIndex> {
  // Every index replica keeps its snapshot under the same name, as in a deployment.
  const index = new ProposalIndex(new Reactors(log, () => undefined, config, 'intake', snapshots, new Readiness()));
  await index.onApplicationBootstrap();
  return index;
}

describe.each(['event', 'append'] as const)(
  'ProposalIndex: proposals written at once through several replicas (commits per %s)',
  (commits) => {
    it('given bursts of submissions, responses, escalations and resolutions through 3 intake replicas, and 2 index replicas (one replaced mid-burst by one restored from their shared snapshot), then every index lists exactly the log, in id order, each proposal under its status and domain', async () => {
      let conflicts = 0;
      let restored = 0;
      const statuses = new Set<string>();
      await fc.assert(
        fc.asyncProperty(
          fc.array(plan, { minLength: 5, maxLength: 20 }),
          fc.array(fc.nat(2), { minLength: 1, maxLength: 12 }),
          fc.integer({ min: 10, max: 120 }),
          async (plans, delays, replaceAtMs) => {
            // Given three intake replicas and two index replicas, each with its own view of one log
            const log = new InMemoryEventLog({ commits });
            const view = () => overTheNetwork(log, { delays, deliveries: true, onConflict: () => conflicts++ }) as EventLog<LogEvent>;
            const snapshots = new MemorySnapshots();
            const writers = await Promise.all(
              [0, 1, 2].map(async () => {
                const w = new ProposalStore(view(), DEFAULT_DECIDER_CONFIG);
                await w.onApplicationBootstrap();
                return w;
              }),
            );
            const indexes = [await indexReplica(view(), snapshots), await indexReplica(view(), snapshots)];

            // When the proposals are submitted and acted on at once, while an index replica is replaced
            const ids = plans.map(() => ulid());
            const replaced = (async () => {
              await sleep(replaceAtMs);
              await indexes[1].onApplicationShutdown();
              if (await snapshots.load('intake-proposal-index')) restored++;
              indexes[1] = await indexReplica(view(), snapshots);
            })();
            const execute = async (writer: number, command: ProposalCommand) => {
              try {
                await writers[writer].execute(command);
              } catch (err) {
                // Refused for the proposal's state (closed already, a response given twice): the decider's call.
                if (!(err instanceof AcpError)) throw err;
              }
            };
            const later = async (atMs: number, writer: number, command: ProposalCommand) => {
              await sleep(atMs);
              await execute(writer, command);
            };
            await Promise.all(
              plans.map(async (p, i) => {
                const id = ids[i];
                await execute(p.writer, submit(id, p.domain));
                await Promise.all([
                  ...p.responses.map((r) => later(r.atMs, r.writer, respond(id, PARTICIPANTS[r.who], r.endorse))),
                  ...(p.resolveAtMs === null ? [] : [later(p.resolveAtMs, (p.writer + 1) % 3, resolve(id))]),
                  ...(p.escalateAtMs === null ? [] : [later(p.escalateAtMs, (p.writer + 2) % 3, escalate(id))]),
                ]);
              }),
            );
            await replaced;

            // Then every index lists what the log folds to, once it has read it all
            const folded = await Promise.all(
              ids.map(async (id) => ({
                id,
                state: foldProposal((await log.read(`proposal-${id}`)).events.map((e) => e.event as ProposalEvent)),
              })),
            );
            const expected = (filter: { status?: string; domain?: string }) =>
              folded
                .filter(({ state }) => state.status !== 'initial')
                .filter(({ state }) => filter.status === undefined || state.status === filter.status)
                .filter(
                  ({ state }) =>
                    state.status === 'initial' || filter.domain === undefined || isWithinDomain(state.proposal.domain, filter.domain),
                )
                .map(({ id }) => id)
                .sort();
            for (const { state } of folded) statuses.add(state.status);
            const all = expected({});
            /** What an index lists: everything, by status and by domain. */
            const listing = (index: ProposalIndex) => ({
              all: index.page({ limit: 1_000 }),
              byStatus: PROPOSAL_STATUSES.map((status) => ({ status, ids: index.page({ status, limit: 1_000 }).ids })),
              byDomain: ['ops', 'risk'].map((domain) => ({ domain, ids: index.page({ domain, limit: 1_000 }).ids })),
            });
            const wanted = {
              all: { ids: all, more: false },
              byStatus: PROPOSAL_STATUSES.map((status) => ({ status, ids: expected({ status }) })),
              byDomain: ['ops', 'risk'].map((domain) => ({ domain, ids: expected({ domain }) })),
            };
            // An index follows the log a moment behind (each delivery is delayed): bounded wait for it to read the last event.
            const end = Date.now() + 5_000;
            while (Date.now() < end && indexes.some((x) => JSON.stringify(listing(x)) !== JSON.stringify(wanted))) await sleep(10);
            for (const index of indexes) {
              expect(listing(index)).toEqual(wanted);
              // Paging in steps of 3 walks the same list, each id once
              const paged: string[] = [];
              for (let page = index.page({ limit: 3 }); ; page = index.page({ limit: 3, cursor: paged[paged.length - 1] })) {
                paged.push(...page.ids);
                if (!page.more) break;
              }
              expect(paged).toEqual(all);
            }

            await Promise.all(indexes.map((x) => x.onApplicationShutdown()));
            await Promise.all(writers.map((w) => w.onApplicationShutdown()));
          },
        ),
        { numRuns: 10 },
      );
      // The bursts did what they are for: writers raced, an index was restored from a snapshot, and
      // proposals ended up under several statuses.
      expect(conflicts).toBeGreaterThan(0);
      expect(restored).toBeGreaterThan(0);
      expect([...statuses].sort()).toEqual(expect.arrayContaining(['escalated', 'pending', 'resolved']));
    }, 120_000);
  },
);
