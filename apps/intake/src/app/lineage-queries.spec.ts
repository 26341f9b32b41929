import { DEFAULT_DECIDER_CONFIG, PROPOSAL_COMMAND_TYPES, ProposalCommand } from '@conclave/acp-protocol';
import { InMemoryEventLog } from '@conclave/event-log';
import { Identity, loadConfig, MemorySnapshots, ProposalStore, Reactors, Readiness, ServiceConfig } from '@conclave/service-kit';
import { ulid } from 'ulid';
import { LineageIndex } from './lineage-index';
import { LineageQueries } from './lineage-queries';
import { ProposalView } from './proposal-view';

const config = loadConfig(ServiceConfig, { CONCLAVE_AUTH_MODE: 'off' });
const observe = (id: string, caused_by: string[]): ProposalCommand => ({
  type: PROPOSAL_COMMAND_TYPES.SubmitProposal,
  command_id: ulid(),
  now: new Date().toISOString(),
  actor: 'agent',
  data: {
    proposal_id: id,
    type: 'observation',
    domain: 'ops',
    author: 'agent',
    payload: {},
    quorum: 1,
    created_at: new Date().toISOString(),
    expires_at: null,
    ...(caused_by.length > 0 ? { caused_by } : {}),
  },
});
const until = async (check: () => boolean, ms = 5_000) => {
  const end = Date.now() + ms;
  while (!check() && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
};
// Authentication is off: every domain is readable (what the reader may see is covered end to end).
const view = { requireDomain: () => undefined, mayReadDomain: () => true } as unknown as ProposalView;
const reader = { participant_id: 'reader' } as unknown as Identity;

describe('acp.v1.lineage: how far the walk goes', () => {
  it('given a chain of 12 entries, each caused by the one before, when lineage is asked without depth, then 8 links each way (the default), truncated; with depth 11, then all of them', async () => {
    const log = new InMemoryEventLog();
    const store = new ProposalStore(log, DEFAULT_DECIDER_CONFIG);
    await store.onApplicationBootstrap();
    const chain = Array.from({ length: 12 }, () => ulid());
    for (const [i, id] of chain.entries()) await store.execute(observe(id, i === 0 ? [] : [chain[i - 1]]));
    const index = new LineageIndex(new Reactors(log, () => undefined, config, 'intake', new MemorySnapshots(), new Readiness()));
    await index.onApplicationBootstrap();
    await until(() => index.effectsOf(chain[10]).length === 1);
    const queries = new LineageQueries(store, index, view);

    // the last entry's causes, nearest first
    const back = (await queries.lineage({ proposal_id: chain[11] }, reader)).lineage;
    expect(back.causes.map((n) => [n.proposal_id, n.distance])).toEqual([10, 9, 8, 7, 6, 5, 4, 3].map((i, k) => [chain[i], k + 1]));
    expect(back).toMatchObject({ effects: [], truncated: true, omitted: 0 });
    // the first entry's effects, nearest first
    const forward = (await queries.lineage({ proposal_id: chain[0] }, reader)).lineage;
    expect(forward.effects.map((n) => n.proposal_id)).toEqual(chain.slice(1, 9));
    expect(forward).toMatchObject({ causes: [], truncated: true });
    // a depth that reaches the end of the chain: nothing is cut
    const all = (await queries.lineage({ proposal_id: chain[11], depth: 11 }, reader)).lineage;
    expect(all.causes.map((n) => n.proposal_id)).toEqual([...chain.slice(0, 11)].reverse());
    expect(all.truncated).toBe(false);

    await index.onApplicationShutdown();
    await store.onApplicationShutdown();
  });
});
