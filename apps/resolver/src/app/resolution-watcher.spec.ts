import { DEFAULT_DECIDER_CONFIG, PROPOSAL_COMMAND_TYPES, ProposalCommand } from '@conclave/acp-protocol';
import { InMemoryEventLog } from '@conclave/event-log';
import { loadConfig, MemorySnapshots, ProposalStore, Reactors, Readiness, ServiceConfig } from '@conclave/service-kit';
import { ulid } from 'ulid';
import { ResolutionWatcher } from './resolution-watcher';

const clock = { now: () => new Date() };
const meta = (actor: string) => ({ command_id: ulid(), now: new Date().toISOString(), actor });
const submit = (id: string): ProposalCommand => ({
  type: PROPOSAL_COMMAND_TYPES.SubmitProposal,
  ...meta('author'),
  data: {
    proposal_id: id,
    type: 'proposal',
    domain: 'ops',
    author: 'author',
    payload: {},
    quorum: 3,
    created_at: new Date().toISOString(),
    expires_at: null,
  },
});
const respond = (id: string, who: string, response_type: 'endorse' | 'challenge'): ProposalCommand => ({
  type: PROPOSAL_COMMAND_TYPES.RecordResponse,
  ...meta(who),
  data: { proposal_id: id, participant_id: who, response_type, confidence: 0.9, domain_authority: 0.8, trust_score: 0.9 },
});
const until = async (check: () => Promise<boolean>, ms = 10_000) => {
  const end = Date.now() + ms;
  while (!(await check()) && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
};

/** Three concurrent responses on a proposal: quorum 3 is met by the last one to land. */
async function burst(store: ProposalStore, ids: string[]) {
  await Promise.all(
    ids.map(async (id) => {
      await store.execute(submit(id));
      await Promise.all([
        store.execute(respond(id, 'a', 'endorse')),
        store.execute(respond(id, 'b', 'endorse')),
        store.execute(respond(id, 'c', 'challenge')),
      ]);
    }),
  );
}

describe('ResolutionWatcher: every proposal whose quorum is met is resolved exactly once', () => {
  it('given proposals completed before it starts, while it catches up, and once it is live, then each is resolved once, with no restart', async () => {
    const log = new InMemoryEventLog();
    const config = loadConfig(ServiceConfig, { CONCLAVE_AUTH_MODE: 'off' });
    const readiness = new Readiness();
    const writer = new ProposalStore(log, DEFAULT_DECIDER_CONFIG);
    await writer.onApplicationBootstrap();
    const before = Array.from({ length: 150 }, () => ulid());
    await burst(writer, before);

    // When the resolver starts while more proposals complete, and more again once it is live
    const resolverStore = new ProposalStore(log, DEFAULT_DECIDER_CONFIG);
    await resolverStore.onApplicationBootstrap();
    const watcher = new ResolutionWatcher(
      resolverStore,
      clock,
      new Reactors(log, () => undefined, config, 'resolver', new MemorySnapshots(), readiness),
    );
    const during = Array.from({ length: 150 }, () => ulid());
    await Promise.all([watcher.onApplicationBootstrap(), burst(writer, during)]);
    const after = Array.from({ length: 150 }, () => ulid());
    await burst(writer, after);

    // Then every one of them has exactly one resolution
    const all = [...before, ...during, ...after];
    const resolutions = async () =>
      Promise.all(
        all.map(async (id) => (await log.read(`proposal-${id}`)).events.filter((e) => e.event.type === 'ProposalResolved').length),
      );
    await until(async () => (await resolutions()).every((n) => n >= 1));
    expect((await resolutions()).filter((n) => n !== 1)).toEqual([]);
    expect(watcher.backlog).toBe(0);
    await watcher.onApplicationShutdown();
    await Promise.all([writer.onApplicationShutdown(), resolverStore.onApplicationShutdown()]);
  }, 30_000);
});
