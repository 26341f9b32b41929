import { PROPOSAL_EVENT_TYPES, proposalStream } from '@conclave/acp-protocol';
import type { EventLog } from '@conclave/event-log';
import { requestJson } from '@conclave/messaging';
import { EVENT_LOG } from '@conclave/service-kit';
import { ulid } from 'ulid';
import { ConclaveHarness, eventually } from '../support/conclave-harness';

type Reply = {
  ok: boolean;
  error?: { code: string; message: string; field?: string };
  proposal?: { proposal_id: string; responses: unknown[]; status: string };
};

/**
 * DESIGN section 5: every failure replies `{ok: false, error: {code, message, field?}}` and
 * appends nothing. Each case below checks its code, then that the event log did not move.
 */
describe('NATS API error replies change nothing (DESIGN section 5, RFC 5.3, 10.2, 14.4, 18.4)', () => {
  const h = new ConclaveHarness({ CONCLAVE_MAX_PAYLOAD_BYTES: '4096' });
  let proposalId: string;

  beforeAll(async () => {
    await h.start('intake', 'resolver', 'escalation');
    const p = await h.client.propose({
      domain: 'risk.credit',
      author: 'alice',
      payload: { loan: 42 },
      quorum: 3,
      created_at: new Date().toISOString(),
    });
    proposalId = p.proposal_id;
    await h.client.endorse(proposalId, { participant_id: 'bob', domain_authority: 0.5, confidence: 0.5, trust_score: 0.5 });
  });
  afterAll(() => h.stop());

  const subject = (name: string) => `${h.prefix}.v1.${name}`;
  async function logHead(): Promise<number> {
    const jsm = await h.nc.jetstreamManager();
    return (await jsm.streams.info(h.env['CONCLAVE_EVENT_STREAM'])).state.last_seq;
  }

  /** When the request is sent, then it fails with `code` (and `field`), and the log is untouched. */
  async function expectRejected(name: string, body: unknown, code: string, field?: string): Promise<void> {
    const before = await logHead();
    const reply =
      typeof body === 'string'
        ? (JSON.parse(
            new TextDecoder().decode((await h.nc.request(subject(name), new TextEncoder().encode(body), { timeout: 5000 })).data),
          ) as Reply)
        : await requestJson<Reply>(h.nc, subject(name), body);
    expect(reply.ok).toBe(false);
    expect(reply.error?.code).toBe(code);
    if (field) expect(reply.error?.field).toBe(field);
    expect(typeof reply.error?.message).toBe('string');
    expect(await logHead()).toBe(before);
  }

  const proposal = (over: Record<string, unknown> = {}) => ({
    schema_version: '1.0',
    type: 'proposal',
    domain: 'risk.credit',
    author: 'carol',
    payload: { x: 1 },
    quorum: 1,
    created_at: new Date().toISOString(),
    expires_at: null,
    ...over,
  });
  const response = (over: Record<string, unknown> = {}) => ({
    schema_version: '1.0',
    proposal_id: proposalId,
    participant_id: 'dave',
    response_type: 'endorse',
    confidence: 0.9,
    domain_authority: 0.9,
    trust_score: 0.9,
    reason: null,
    ...over,
  });

  it('INVALID_JSON: a body that is not JSON', () => expectRejected('propose', '{"schema_version": "1.0",', 'INVALID_JSON'));
  it('SCHEMA_VIOLATION: a missing required field is named', () =>
    expectRejected('propose', proposal({ domain: undefined }), 'SCHEMA_VIOLATION', 'domain'));
  it('SCHEMA_VIOLATION: quorum below 1 (RFC 7.1)', () => expectRejected('propose', proposal({ quorum: 0 }), 'SCHEMA_VIOLATION', 'quorum'));
  it('SCHEMA_VIOLATION: a domain that is not NATS-token safe', () =>
    expectRejected('propose', proposal({ domain: 'risk credit' }), 'SCHEMA_VIOLATION', 'domain'));
  it('SCHEMA_VIOLATION: confidence outside [0, 1] on the wire', () =>
    expectRejected('respond', response({ confidence: 1.5 }), 'SCHEMA_VIOLATION', 'confidence'));
  it('SCHEMA_VIOLATION: a third response type (RFC 5.1)', () =>
    expectRejected('respond', response({ response_type: 'abstain' }), 'SCHEMA_VIOLATION', 'response_type'));
  it('UNSUPPORTED_SCHEMA_VERSION: "2.0" (RFC 18.4)', () =>
    expectRejected('propose', proposal({ schema_version: '2.0' }), 'UNSUPPORTED_SCHEMA_VERSION', 'schema_version'));
  it('INVALID_ID: a proposal_id that is not a ULID', () =>
    expectRejected('propose', proposal({ proposal_id: 'not-a-ulid' }), 'INVALID_ID', 'proposal_id'));
  it('DUPLICATE_PROPOSAL_ID: the same id twice (RFC 14.4)', () =>
    expectRejected('propose', proposal({ proposal_id: proposalId }), 'DUPLICATE_PROPOSAL_ID'));
  it('PROPOSAL_NOT_FOUND: respond to an unknown proposal', () =>
    expectRejected('respond', response({ proposal_id: '01ARZ3NDEKTSV4RRFFQ69G5FAV' }), 'PROPOSAL_NOT_FOUND'));
  it('PROPOSAL_NOT_FOUND: get an unknown proposal', () =>
    expectRejected('get', { proposal_id: '01ARZ3NDEKTSV4RRFFQ69G5FAV' }, 'PROPOSAL_NOT_FOUND'));
  it('DUPLICATE_RESPONSE: the same participant twice (RFC 5.3, 15.3); the first stands', async () => {
    await expectRejected('respond', response({ participant_id: 'bob', response_type: 'challenge' }), 'DUPLICATE_RESPONSE');
    const p = await h.client.get(proposalId);
    expect(p.responses).toHaveLength(1);
    expect(p.responses[0]).toMatchObject({ participant_id: 'bob', response_type: 'endorse' });
  });
  it('SELF_RESPONSE: the author responds to its own proposal (RFC 5.3)', () =>
    expectRejected('respond', response({ participant_id: 'alice' }), 'SELF_RESPONSE'));
  it('PAYLOAD_TOO_LARGE: a body over the configured limit', () =>
    expectRejected('propose', proposal({ payload: { blob: 'x'.repeat(5000) } }), 'PAYLOAD_TOO_LARGE'));
  /** A proposal whose quorum is met and whose resolution the resolver has appended. */
  /** A pending proposal in risk.credit. */
  const pendingProposal = (quorum: number, author = 'hank') =>
    h.client.propose({ domain: 'risk.credit', author, payload: {}, quorum, created_at: new Date().toISOString() });

  async function resolvedProposal(): Promise<string> {
    const p = await pendingProposal(1, 'erin');
    await h.client.endorse(p.proposal_id, { participant_id: 'frank', domain_authority: 1, confidence: 1, trust_score: 1 });
    await eventually(async () => ((await h.client.get(p.proposal_id)).status === 'resolved' ? true : undefined), 10_000, 'the resolution');
    return p.proposal_id;
  }

  it('PROPOSAL_NOT_PENDING: respond to a resolved proposal (RFC 4.1, 5.3)', async () => {
    const p = { proposal_id: await resolvedProposal() };
    await expectRejected('respond', response({ proposal_id: p.proposal_id, participant_id: 'gina' }), 'PROPOSAL_NOT_PENDING');
  });
  it('PROPOSAL_NOT_PENDING: escalate a proposal that is no longer pending', async () => {
    const p = { proposal_id: await resolvedProposal() };
    await expectRejected('escalate', { proposal_id: p.proposal_id, reason: 'too late', requested_by: 'gina' }, 'PROPOSAL_NOT_PENDING');
  });
  it('NOT_ESCALATED: resolve a proposal that is not escalated (RFC 10.2)', async () => {
    const p = await pendingProposal(5);
    await expectRejected('resolve', { proposal_id: p.proposal_id, outcome: 'approved', resolved_by: 'kim', note: 'n' }, 'NOT_ESCALATED');
    expect((await h.client.get(p.proposal_id)).status).toBe('pending');
  });
  it('CONFLICT: resolve an escalation naming another payload hash', async () => {
    const p = await pendingProposal(5);
    await h.client.escalate(p.proposal_id, { reason: 'a human decides', requested_by: 'hank' });
    // The desk's routing appends an event: wait for it before taking the log head.
    await eventually(
      async () => (await h.client.escalations({ status: 'all' })).find((e) => e.proposal_id === p.proposal_id && e.routed),
      10_000,
      'the escalation routed',
    );
    const { binding } = await h.client.escalation(p.proposal_id);
    await expectRejected(
      'resolve',
      { proposal_id: p.proposal_id, outcome: 'approved', resolved_by: 'kim', note: 'n', ...binding, payload_hash: '0'.repeat(64) },
      'CONFLICT',
      'payload_hash',
    );
    expect((await h.client.get(p.proposal_id)).status).toBe('escalated');
  });
  it('given two different proposals under one new id, when both are sent at the same time, then exactly one is ok, the other DUPLICATE_PROPOSAL_ID, and one proposal is recorded (RFC 14.4)', async () => {
    const id = ulid();
    const replies = await Promise.all(
      [1, 2].map((x) => requestJson<Reply>(h.nc, subject('propose'), proposal({ proposal_id: id, payload: { x } }))),
    );
    expect(replies.filter((r) => r.ok)).toHaveLength(1);
    expect(replies.filter((r) => !r.ok).map((r) => r.error?.code)).toEqual(['DUPLICATE_PROPOSAL_ID']);
    const winner = replies.findIndex((r) => r.ok) + 1;
    const { events } = await h.instances[0].app.get<EventLog>(EVENT_LOG).read(proposalStream(id));
    expect(events.map((e) => e.event.type)).toEqual([PROPOSAL_EVENT_TYPES.ProposalSubmitted]);
    expect((await h.client.get(id)).payload).toEqual({ x: winner });
  });
  it('a client-sent weight is never trusted (RFC 6.1, DESIGN section 2)', async () => {
    const p = await pendingProposal(5);
    const reply = await requestJson<Reply>(
      h.nc,
      subject('respond'),
      response({ proposal_id: p.proposal_id, participant_id: 'ivy', confidence: 0.5, domain_authority: 0.5, trust_score: 0.5, weight: 1 }),
    );
    expect(reply.ok).toBe(true);
    expect(reply.proposal?.responses).toEqual([expect.objectContaining({ participant_id: 'ivy', weight: 0.125 })]);
  });

  it('with authentication off, the factors a response declares are used and marked declared (DESIGN section 6)', async () => {
    const p = await pendingProposal(5);
    const reply = await requestJson<Reply & { factors?: unknown }>(
      h.nc,
      subject('respond'),
      response({ proposal_id: p.proposal_id, participant_id: 'jill', confidence: 0.5, domain_authority: 0.8, trust_score: 0.4 }),
    );
    expect(reply.factors).toEqual({ domain_authority: 0.8, trust_score: 0.4, source: 'declared' });
    expect(reply.proposal?.responses).toEqual([expect.objectContaining({ participant_id: 'jill', weight: 0.16 })]);
  });
});
