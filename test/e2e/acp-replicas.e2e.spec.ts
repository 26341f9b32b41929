import { isTerminalEvent, ProposalEvent, proposalStream } from '@conclave/acp-protocol';
import { JetStreamEventLog } from '@conclave/event-log';
import { NATS_CONNECTION } from '@conclave/service-kit';
import { NatsConnection } from 'nats';
import { ConclaveHarness } from '../support/conclave-harness';
import { DecisionCollector } from '../support/decisions';

const now = () => new Date().toISOString();
const vote = { domain_authority: 0.9, confidence: 0.9, trust_score: 0.9 };

async function inBatches<T>(items: T[], size: number, fn: (item: T) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < items.length; i += size) await Promise.all(items.slice(i, i + size).map(fn));
}

/** Terminal events of each proposal, read back from its stream in the event log. */
async function terminalEventsPerProposal(h: ConclaveHarness, ids: readonly string[]): Promise<Map<string, number>> {
  const log = await JetStreamEventLog.create<ProposalEvent>({
    connection: h.nc,
    streamName: h.env['CONCLAVE_EVENT_STREAM'],
    subjectPrefix: h.env['CONCLAVE_EVENT_SUBJECT_PREFIX'],
    createStream: false,
  });
  const counts = new Map<string, number>();
  await inBatches([...ids], 50, async (id) => {
    const { events } = await log.read(proposalStream(id));
    counts.set(id, events.filter((e) => isTerminalEvent(e.event)).length);
  });
  return counts;
}

describe('RFC 15.4 resolution races: replicas record exactly one resolution', () => {
  const h = new ConclaveHarness();
  afterAll(() => h.stop());

  it('given two resolvers and two sweepers, when 1,000 proposals resolve by quorum or expire, then each has exactly one terminal event and one decision event', async () => {
    await h.start('intake', 'intake', 'resolver', 'resolver', 'sweeper', 'sweeper');
    const decisions = new DecisionCollector(h.client);
    const ids: string[] = [];
    await inBatches(
      Array.from({ length: 1000 }, (_, i) => i),
      50,
      async (i) => {
        const byQuorum = i % 2 === 0;
        const p = await h.client.propose({
          domain: 'race.test',
          author: `author-${i}`,
          payload: { i },
          quorum: 1,
          created_at: now(),
          expires_at: byQuorum ? null : new Date(Date.now() + 500).toISOString(),
        });
        ids.push(p.proposal_id);
        if (byQuorum) await h.client.endorse(p.proposal_id, { participant_id: `voter-${i}`, ...vote });
      },
    );
    await decisions.until(() => new Set(decisions.received.map((d) => d.proposal_id)).size >= 1000, 60_000, '1,000 decisions');

    const terminal = await terminalEventsPerProposal(h, ids);
    expect(ids.filter((id) => terminal.get(id) !== 1).map((id) => `${id}: ${terminal.get(id)}`)).toEqual([]);
    const perProposal = new Map<string, number>();
    for (const d of decisions.received) perProposal.set(d.proposal_id, (perProposal.get(d.proposal_id) ?? 0) + 1);
    expect(ids.filter((id) => perProposal.get(id) !== 1)).toEqual([]);
    expect(decisions.received.filter((d) => d.outcome === 'approved' && d.trigger === 'quorum')).toHaveLength(500);
    expect(decisions.received.filter((d) => d.outcome === 'expired' && d.trigger === 'timeout')).toHaveLength(500);
  });
});

describe('resolver crash and restart: no decision lost, none published twice', () => {
  const h = new ConclaveHarness();
  afterAll(() => h.stop());

  it('given a resolver killed mid-stream, when a new one starts, then every proposal gets exactly one decision event', async () => {
    await h.start('intake');
    const first = await h.add('resolver');
    const decisions = new DecisionCollector(h.client);
    const post = async (i: number) => {
      const p = await h.client.propose({ domain: 'crash.test', author: `author-${i}`, payload: { i }, quorum: 1, created_at: now() });
      await h.client.endorse(p.proposal_id, { participant_id: `voter-${i}`, ...vote });
      return p.proposal_id;
    };
    const ids: string[] = [];
    for (let i = 0; i < 100; i++) ids.push(await post(i));
    await decisions.waitFor(ids[50]);

    // A crash, not a drain: the connection dies under the outbox, its checkpoint unsaved.
    await first.app.get<NatsConnection>(NATS_CONNECTION).close();
    await h.kill(first).catch(() => undefined);
    for (let i = 100; i < 200; i++) ids.push(await post(i));

    await h.add('resolver');
    await decisions.until(() => ids.every((id) => decisions.for(id).length >= 1), 30_000, 'a decision for each of 200 proposals');
    // Anything published twice would arrive as a second message; give the stream its last word.
    const marker = await post(999);
    await decisions.waitFor(marker);
    expect(ids.filter((id) => decisions.for(id).length !== 1)).toEqual([]);
    const marked = [...ids, marker];
    const terminal = await terminalEventsPerProposal(h, marked);
    expect(marked.filter((id) => terminal.get(id) !== 1)).toEqual([]);
  });
});
