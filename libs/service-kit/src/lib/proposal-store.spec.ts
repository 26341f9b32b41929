import { AcpError, DEFAULT_DECIDER_CONFIG, PROPOSAL_COMMAND_TYPES, SubmitProposal } from '@conclave/acp-protocol';
import { ConcurrencyError, InMemoryEventLog, LogEvent } from '@conclave/event-log';
import { ProposalStore } from './proposal-store';

const submit = (id: string): SubmitProposal => ({
  type: PROPOSAL_COMMAND_TYPES.SubmitProposal,
  command_id: '01JAAAAAAAAAAAAAAAAAAAAAAA',
  now: '2025-01-15T10:00:00Z',
  actor: 'alice',
  data: {
    proposal_id: id,
    type: 'proposal',
    domain: 'risk.credit',
    author: 'alice',
    payload: {},
    quorum: 1,
    created_at: '2025-01-15T10:00:00Z',
    expires_at: null,
  },
});

/** A log whose appends always lose the race, as if another replica always wrote first. */
class AlwaysContendedLog extends InMemoryEventLog<LogEvent> {
  appends = 0;
  override async append(stream: string): Promise<never> {
    this.appends++;
    throw new ConcurrencyError(stream, 'no_stream', '1');
  }
}

describe('ProposalStore: read, decide, compare-and-swap append (RFC 15.4)', () => {
  it('given a free stream, when a command is executed, then its events are appended once', async () => {
    const log = new InMemoryEventLog<LogEvent>();
    const store = new ProposalStore(log, DEFAULT_DECIDER_CONFIG);
    const result = await store.execute(submit('01JBBBBBBBBBBBBBBBBBBBBBBB'));
    expect(result.events.map((e) => e.type)).toEqual(['ProposalSubmitted']);
    expect((await log.read('proposal-01JBBBBBBBBBBBBBBBBBBBBBBB')).events).toHaveLength(1);
  });

  it('given a version conflict on every attempt, then it decides again a bounded number of times and answers CONFLICT', async () => {
    const log = new AlwaysContendedLog();
    const store = new ProposalStore(log, DEFAULT_DECIDER_CONFIG, undefined, { maxAttempts: 3 });
    const error = await store.execute(submit('01JCCCCCCCCCCCCCCCCCCCCCCC')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AcpError);
    expect((error as AcpError).code).toBe('CONFLICT');
    expect(log.appends).toBe(3);
  });

  it('given two concurrent submissions of one id, then one wins and the other is told DUPLICATE_PROPOSAL_ID', async () => {
    const log = new InMemoryEventLog<LogEvent>();
    const a = new ProposalStore(log, DEFAULT_DECIDER_CONFIG);
    const b = new ProposalStore(log, DEFAULT_DECIDER_CONFIG);
    const id = '01JDDDDDDDDDDDDDDDDDDDDDDD';
    const results = await Promise.allSettled([
      a.execute(submit(id)),
      b.execute({ ...submit(id), command_id: '01JEEEEEEEEEEEEEEEEEEEEEEE', actor: 'bob' }),
    ]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const rejected = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect((rejected.reason as AcpError).code).toBe('DUPLICATE_PROPOSAL_ID');
    expect((await log.read(`proposal-${id}`)).events).toHaveLength(1);
  });
});

describe('ProposalStore.execute with a preloaded proposal', () => {
  it('given a stale preloaded state, when the append conflicts, then it reloads and decides again', async () => {
    const log = new InMemoryEventLog<LogEvent>();
    const store = new ProposalStore(log, DEFAULT_DECIDER_CONFIG);
    const id = '01JFFFFFFFFFFFFFFFFFFFFFFF';
    const stale = await store.load(id);
    await store.execute(submit(id));
    // Another proposal under the same id (an identical one would be a harmless retry).
    const other = submit(id);
    const error = await store
      .execute({ ...other, command_id: '01JGGGGGGGGGGGGGGGGGGGGGGG', data: { ...other.data, quorum: other.data.quorum + 1 } }, stale)
      .catch((e: unknown) => e);
    expect((error as AcpError).code).toBe('DUPLICATE_PROPOSAL_ID');
    expect((await log.read(`proposal-${id}`)).events).toHaveLength(1);
  });
});
