import { AcpError, DEFAULT_DECIDER_CONFIG, PROPOSAL_COMMAND_TYPES, ProposalCommand } from '@conclave/acp-protocol';
import { InMemoryEventLog } from '@conclave/event-log';
import { loadConfig, MemorySnapshots, ProposalStore, Reactors, Readiness } from '@conclave/service-kit';
import { ulid } from 'ulid';
import { ExpirySweeper } from './expiry-sweeper';
import { SweeperConfig } from './sweeper.config';

const clock = { now: () => new Date() };
const config = loadConfig(SweeperConfig, { CONCLAVE_AUTH_MODE: 'off', CONCLAVE_EXPIRY_GRACE_MS: '0', CONCLAVE_SWEEP_INTERVAL_MS: '100' });
const submit = (id: string, expiresInMs: number): ProposalCommand => ({
  type: PROPOSAL_COMMAND_TYPES.SubmitProposal,
  command_id: ulid(),
  now: new Date().toISOString(),
  actor: 'author',
  data: {
    proposal_id: id,
    type: 'proposal',
    domain: 'ops',
    author: 'author',
    payload: {},
    quorum: 3,
    created_at: new Date().toISOString(),
    expires_at: new Date(Date.now() + expiresInMs).toISOString(),
  },
});
const until = async (check: () => Promise<boolean> | boolean, ms = 5_000) => {
  const end = Date.now() + ms;
  while (!(await check()) && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
};

/**
 * The sweeper's store answers each ExpireProposal with the next scripted reply (an error to
 * throw, or 'record' to let the real store record it); the proposals themselves are submitted to
 * the log by another writer, as intake does.
 */
async function sweeperWith(replies: (AcpError | Error | 'record')[], sweeperClock = clock) {
  const log = new InMemoryEventLog();
  const writer = new ProposalStore(log, DEFAULT_DECIDER_CONFIG);
  await writer.onApplicationBootstrap();
  const attempts: string[] = [];
  const attemptsAt: number[] = [];
  const store = {
    execute: async (command: ProposalCommand) => {
      attempts.push(command.type);
      attemptsAt.push(Date.now());
      const reply = replies.shift() ?? 'record';
      if (reply !== 'record') throw reply;
      return writer.execute(command);
    },
  } as unknown as ProposalStore;
  const reactors = new Reactors(log, () => undefined, config, 'sweeper', new MemorySnapshots(), new Readiness());
  const sweeper = new ExpirySweeper(store, sweeperClock, config, reactors);
  await sweeper.onApplicationBootstrap();
  const types = async (id: string) => (await log.read(`proposal-${id}`)).events.map((e) => e.event.type);
  const stop = async () => {
    await sweeper.onApplicationShutdown();
    await writer.onApplicationShutdown();
  };
  return { writer, sweeper, attempts, attemptsAt, types, stop };
}

describe('ExpirySweeper: a deadline stays in the queue until its ExpireProposal is recorded or refused as moot', () => {
  it('given two deadlines, when their ExpireProposals are refused with PROPOSAL_NOT_PENDING and PROPOSAL_NOT_FOUND (someone got there first), then each deadline is dropped after that one attempt', async () => {
    const s = await sweeperWith([
      new AcpError('PROPOSAL_NOT_PENDING', 'already resolved'),
      new AcpError('PROPOSAL_NOT_FOUND', 'no such proposal'),
    ]);
    const ids = [ulid(), ulid()];
    for (const id of ids) await s.writer.execute(submit(id, 50));
    await until(() => s.attempts.length === 2 && s.sweeper.pending === 0);
    await new Promise((r) => setTimeout(r, 300)); // longer than the first backoffs and the sweep interval
    expect(s.attempts).toEqual([PROPOSAL_COMMAND_TYPES.ExpireProposal, PROPOSAL_COMMAND_TYPES.ExpireProposal]);
    expect(s.sweeper.pending).toBe(0);
    for (const id of ids) expect(await s.types(id)).toEqual(['ProposalSubmitted']);
    await s.stop();
  });

  it("given a deadline, when its ExpireProposal fails with CONFLICT and then a log error, then it stays and is retried, no sooner than the queue's backoff (100 ms, then 200 ms), until the expiry is recorded", async () => {
    const s = await sweeperWith([new AcpError('CONFLICT', 'not yet due'), new Error('log unavailable'), 'record']);
    const id = ulid();
    await s.writer.execute(submit(id, 50));
    await until(async () => (await s.types(id)).includes('ProposalExpired') && s.sweeper.pending === 0);
    expect(s.attempts).toEqual([
      PROPOSAL_COMMAND_TYPES.ExpireProposal,
      PROPOSAL_COMMAND_TYPES.ExpireProposal,
      PROPOSAL_COMMAND_TYPES.ExpireProposal,
    ]);
    // Lower bounds only (real timers on a shared machine run late, never early); a 2 ms margin
    // for rounding between Date.now and Node's timer clock. The exact schedule is the queue's test.
    const [first, second, third] = s.attemptsAt;
    expect(second - first).toBeGreaterThanOrEqual(98);
    expect(third - second).toBeGreaterThanOrEqual(198);
    expect(await s.types(id)).toEqual(['ProposalSubmitted', 'ProposalExpired']);
    expect(s.sweeper.pending).toBe(0);
    await s.stop();
  });

  it('given a deadline an hour away, when the clock jumps past it, then the expiry is recorded at the next re-arm (every 100 ms here), not an hour later', async () => {
    let skewMs = 0;
    const s = await sweeperWith([], { now: () => new Date(Date.now() + skewMs) });
    const id = ulid();
    await s.writer.execute(submit(id, 3_600_000));
    await until(() => s.sweeper.pending === 1);
    await new Promise((r) => setTimeout(r, 300));
    expect(await s.types(id)).toEqual(['ProposalSubmitted']);

    skewMs = 2 * 3_600_000; // an NTP step, a resumed VM
    // Within `until`'s 5 s: a queue asleep until its old timer would take the hour.
    await until(async () => (await s.types(id)).includes('ProposalExpired'));
    expect(await s.types(id)).toEqual(['ProposalSubmitted', 'ProposalExpired']);
    await s.stop();
  });
});
