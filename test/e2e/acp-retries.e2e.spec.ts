import { requestJson } from '@conclave/messaging';
import { ConclaveClient } from '@conclave/sdk';
import { Msg, Subscription } from 'nats';
import { ulid } from 'ulid';
import { ConclaveHarness, eventually } from '../support/conclave-harness';

type Reply = {
  ok: boolean;
  error?: { code: string; field?: string };
  proposal?: { proposal_id: string; status: string; responses: Array<{ participant_id: string }> };
};

const decoder = new TextDecoder();

/**
 * A lossy hop between an agent and intake: it forwards every request and the service handles it,
 * but the reply to the first request on each subject is dropped, as when a reply is lost after
 * the service recorded the command. Every reply the service gave is kept for the test to read.
 */
class ReplyDroppingProxy {
  readonly prefix = `p${ulid().toLowerCase()}`;
  readonly replies: Array<{ subject: string; reply: Reply }> = [];
  private readonly dropped = new Set<string>();
  private sub?: Subscription;

  constructor(private readonly h: ConclaveHarness) {}

  start(): void {
    this.sub = this.h.nc.subscribe(`${this.prefix}.v1.>`, { callback: (_err, msg) => void this.forward(msg) });
  }

  stop(): void {
    this.sub?.unsubscribe();
  }

  private async forward(msg: Msg): Promise<void> {
    const subject = `${this.h.prefix}${msg.subject.slice(this.prefix.length)}`;
    const answer = await this.h.nc.request(subject, msg.data, { timeout: 5_000 });
    this.replies.push({ subject, reply: JSON.parse(decoder.decode(answer.data)) as Reply });
    if (!this.dropped.has(subject)) {
      this.dropped.add(subject);
      return;
    }
    msg.respond(answer.data);
  }
}

/** Retries are safe: the SDK reuses its proposal_id, and the service answers a retry from what it recorded. */
describe('idempotent retries of propose and respond (intake + resolver over NATS)', () => {
  const h = new ConclaveHarness();
  const proxy = new ReplyDroppingProxy(h);
  let agent: ConclaveClient;

  beforeAll(async () => {
    await h.start('intake', 'resolver');
    proxy.start();
    agent = await ConclaveClient.connect({ nc: h.nc, prefix: proxy.prefix, timeoutMs: 1_000, retries: 2 });
  });
  afterAll(async () => {
    proxy.stop();
    await h.stop();
  });

  const subject = (name: string) => `${h.prefix}.v1.${name}`;
  const logHead = async () => (await (await h.nc.jetstreamManager()).streams.info(h.env['CONCLAVE_EVENT_STREAM'])).state.last_seq;
  const body = (over: Record<string, unknown> = {}) => ({
    schema_version: '1.0',
    proposal_id: ulid(),
    type: 'proposal',
    domain: 'ops.retry',
    author: 'alice',
    payload: { v: 1 },
    quorum: 5,
    created_at: new Date().toISOString(),
    expires_at: null,
    ...over,
  });
  const response = (proposal_id: string, over: Record<string, unknown> = {}) => ({
    schema_version: '1.0',
    proposal_id,
    participant_id: 'bob',
    response_type: 'endorse',
    confidence: 0.9,
    domain_authority: 0.8,
    trust_score: 0.7,
    reason: 'ok',
    ...over,
  });

  it('given a lost reply, when the SDK retries propose, then the service answers the retry with the same proposal and only one exists', async () => {
    const p = await agent.propose({ domain: 'ops.retry-sdk', author: 'alice', payload: { release: 1 }, quorum: 2 });
    const attempts = proxy.replies.filter((r) => r.subject === subject('propose'));
    expect(attempts).toHaveLength(2);
    expect(attempts.map((a) => [a.reply.ok, a.reply.proposal?.proposal_id])).toEqual([
      [true, p.proposal_id],
      [true, p.proposal_id],
    ]);
    const listed = await eventually(
      async () => {
        const page = await h.client.list({ domain: 'ops.retry-sdk' });
        return page.proposals.length > 0 ? page.proposals : undefined;
      },
      10_000,
      'the proposal listed',
    );
    expect(listed.map((x) => x.proposal_id)).toEqual([p.proposal_id]);
  });

  it('given a lost reply, when the SDK retries an endorsement, then the retry is the same success and one response is recorded', async () => {
    const p = await h.client.propose({ domain: 'ops.retry-sdk', author: 'alice', payload: { release: 2 }, quorum: 3 });
    const after = await agent.endorse(p.proposal_id, { participant_id: 'bob', confidence: 0.9, domain_authority: 0.8, trust_score: 0.7 });
    const attempts = proxy.replies.filter((r) => r.subject === subject('respond'));
    expect(attempts.map((a) => a.reply.ok)).toEqual([true, true]);
    expect(after.responses.map((r) => r.participant_id)).toEqual(['bob']);
    expect((await h.client.get(p.proposal_id)).responses).toHaveLength(1);
  });

  it('given a recorded proposal, when the identical request is sent again, then ok with the same proposal and nothing is appended', async () => {
    const first = body();
    const a = await requestJson<Reply>(h.nc, subject('propose'), first);
    const head = await logHead();
    const b = await requestJson<Reply>(h.nc, subject('propose'), first);
    expect(a.ok && b.ok).toBe(true);
    expect(b.proposal).toEqual(a.proposal);
    expect(await logHead()).toBe(head);
  });

  it('given a recorded proposal, when another proposal comes under its id, then DUPLICATE_PROPOSAL_ID and nothing is appended', async () => {
    const first = body();
    expect((await requestJson<Reply>(h.nc, subject('propose'), first)).ok).toBe(true);
    const head = await logHead();
    const other = await requestJson<Reply>(h.nc, subject('propose'), { ...first, payload: { v: 2 } });
    expect(other.error).toMatchObject({ code: 'DUPLICATE_PROPOSAL_ID', field: 'proposal_id' });
    const byAnother = await requestJson<Reply>(h.nc, subject('propose'), { ...first, author: 'mallory' });
    expect(byAnother.error?.code).toBe('DUPLICATE_PROPOSAL_ID');
    expect(await logHead()).toBe(head);
  });

  it('given a recorded response, when it is sent again, then ok and nothing is appended; another response by the same participant is DUPLICATE_RESPONSE', async () => {
    const p = body();
    await requestJson<Reply>(h.nc, subject('propose'), p);
    const first = await requestJson<Reply>(h.nc, subject('respond'), response(p.proposal_id));
    const head = await logHead();
    const again = await requestJson<Reply>(h.nc, subject('respond'), response(p.proposal_id));
    expect(first.ok && again.ok).toBe(true);
    expect(again.proposal?.responses).toHaveLength(1);
    expect(await logHead()).toBe(head);
    const changed = await requestJson<Reply>(h.nc, subject('respond'), response(p.proposal_id, { confidence: 0.4 }));
    expect(changed.error).toMatchObject({ code: 'DUPLICATE_RESPONSE', field: 'participant_id' });
    expect(await logHead()).toBe(head);
  });

  it('given the response that met the quorum and the resolution that followed, when it is retried, then it is the same success, not PROPOSAL_NOT_PENDING', async () => {
    const p = body({ quorum: 1 });
    await requestJson<Reply>(h.nc, subject('propose'), p);
    expect((await requestJson<Reply>(h.nc, subject('respond'), response(p.proposal_id))).ok).toBe(true);
    await eventually(async () => ((await h.client.get(p.proposal_id)).status === 'resolved' ? true : undefined), 10_000, 'the resolution');
    const retry = await requestJson<Reply>(h.nc, subject('respond'), response(p.proposal_id));
    expect(retry).toMatchObject({ ok: true, proposal: { proposal_id: p.proposal_id, status: 'resolved' } });
  });
});
