import { ConclaveError } from '@conclave/sdk';
import type { Proposal } from '@conclave/acp-protocol';
import { acpSubjects } from '@conclave/messaging';
import type { Subscription } from 'nats';
import { eventually, SecureConclaveHarness } from '../support/conclave-harness';

const PER_SECOND = 5;
const BURST = 20;
const PROPOSALS = 40;

/** One request as it reached the services: who signed it, with which nonce, and its exact body. */
interface Attempt {
  participant: string;
  nonce: string;
  body: string;
}

/**
 * The SDK waits out RATE_LIMITED refusals, against real NATS and the real intake with a low limit
 * (5 per second, bursts of 20): a refused request is sent again after the refusal's retry hint,
 * signed afresh, within the client's `rateLimitWaitMs` budget (10 s by default). A plain
 * subscriber beside the services' queue group sees a copy of every attempt, so the tests count
 * the resends and check their nonces and bodies.
 */
describe('SDK: requests refused RATE_LIMITED are sent again after the hinted wait', () => {
  const h = new SecureConclaveHarness({
    CONCLAVE_RATE_LIMIT_PER_SECOND: String(PER_SECOND),
    CONCLAVE_RATE_LIMIT_BURST: String(BURST),
  });
  const subjects = () => acpSubjects(h.prefix);
  const subscriptions: Subscription[] = [];
  const participants = ['agent-burst', 'agent-nobudget', 'agent-small', 'agent-reader'];
  const domainOf = (participant: string) => `sdk.${participant}`;

  /** Every attempt on `subject` from now on, as the services received it. */
  function attemptsOn(subject: string): Attempt[] {
    const seen: Attempt[] = [];
    const sub = h.nc.subscribe(subject, {
      callback: (_err, m) =>
        seen.push({
          participant: m.headers?.get('Conclave-Participant') ?? '',
          nonce: m.headers?.get('Conclave-Nonce') ?? '',
          body: new TextDecoder().decode(m.data),
        }),
    });
    subscriptions.push(sub);
    return seen;
  }
  const of = (participant: string, attempts: Attempt[]) => attempts.filter((a) => a.participant === participant);

  /**
   * Spends the participant's whole allowance (reads by a client that waits out nothing), and
   * returns once a refusal says the next token is at least 3/4 of a token's time away: the
   * caller's next request is then refused, however slow the drain itself was.
   */
  async function exhaust(participant: string): Promise<void> {
    const impatient = await h.clientFor(participant, undefined, { rateLimitWaitMs: 0 });
    await Promise.allSettled(Array.from({ length: BURST }, () => impatient.list({ limit: 1 })));
    for (let probe = 0; probe < 50; probe++) {
      const hint = await impatient.list({ limit: 1 }).then(
        () => 0,
        (e: ConclaveError) => {
          if (e.code !== 'RATE_LIMITED') throw e;
          return e.retryAfterMs ?? 0;
        },
      );
      if (hint >= (1000 / PER_SECOND) * 0.75) return;
      if (hint > 0) await new Promise((r) => setTimeout(r, hint));
    }
    throw new Error(`could not exhaust ${participant}'s allowance`);
  }

  const proposal = (author: string, i: number) => ({ domain: domainOf(author), author, payload: { i }, quorum: 3 });

  beforeAll(async () => {
    await h.start('intake', 'audit');
    await h.seed(
      participants.map((participant_id) => ({
        participant_id,
        grants: [{ domain: domainOf(participant_id), domain_authority: 0.8, trust_score: 0.8 }],
      })),
    );
    await h.nc.flush();
  });
  afterAll(async () => {
    for (const s of subscriptions) s.unsubscribe();
    await h.stop();
  });

  it(`given a participant limited to ${PER_SECOND}/s with bursts of ${BURST}, when its SDK client proposes ${PROPOSALS} proposals at once with the default options, then all succeed, the log holds each exactly once, and the refused ones were resent after waiting, each signed afresh with the same body`, async () => {
    // Given
    const author = 'agent-burst';
    const client = await h.clientFor(author);
    const attempts = attemptsOn(subjects().command('propose'));
    await h.nc.flush();

    // When
    const started = Date.now();
    const proposed = await Promise.all(Array.from({ length: PROPOSALS }, (_, i) => client.propose(proposal(author, i))));
    const elapsed = Date.now() - started;

    // Then: every proposal succeeded, and the log holds exactly these, once each
    const ids = proposed.map((p) => p.proposal_id);
    expect(new Set(ids).size).toBe(PROPOSALS);
    const listed = await client.list({ domain: domainOf(author), limit: 100 });
    const mine = listed.proposals.filter((p: Proposal) => p.author === author);
    expect(mine).toHaveLength(PROPOSALS);
    expect(new Set(mine.map((p) => p.proposal_id))).toEqual(new Set(ids));
    expect(mine.map((p) => (p.payload as { i: number }).i).sort((a, b) => a - b)).toEqual(Array.from({ length: PROPOSALS }, (_, i) => i));

    // The refused ones were sent again: more attempts than proposals, each with its own nonce,
    // and every attempt of one proposal carries the same body (the same proposal_id).
    const sent = of(author, attempts);
    expect(sent.length).toBeGreaterThan(PROPOSALS);
    expect(new Set(sent.map((a) => a.nonce)).size).toBe(sent.length);
    const bodiesById = new Map<string, Set<string>>();
    for (const a of sent) {
      const id = (JSON.parse(a.body) as { proposal_id: string }).proposal_id;
      bodiesById.set(id, (bodiesById.get(id) ?? new Set()).add(a.body));
    }
    expect(new Set(bodiesById.keys())).toEqual(new Set(ids));
    for (const bodies of bodiesById.values()) expect(bodies.size).toBe(1);

    // The bucket lets the 40th through no sooner than (40 - 20) / 5 s after its first.
    expect(elapsed).toBeGreaterThanOrEqual(((PROPOSALS - BURST) / PER_SECOND) * 1000);

    // And the services did refuse: the first refusal of the run is on the audit chain.
    const refused = await eventually(
      async () => {
        const entries = await h.auditEntries({ actor: author, outcome: 'rejected' });
        const limited = entries.filter((e) => e.error?.code === 'RATE_LIMITED');
        return limited.length > 0 ? limited : undefined;
      },
      10_000,
      `${author}'s refusals on the audit chain`,
    );
    expect(refused[0]).toMatchObject({ actor: author, authenticated: true });
  });

  it(`given the same limit, when the client's budget is 0 and it proposes ${PROPOSALS} at once, then the excess is thrown as RATE_LIMITED with retryAfterMs, each after one attempt, and the log holds only the accepted ones`, async () => {
    // Given
    const author = 'agent-nobudget';
    const impatient = await h.clientFor(author, undefined, { rateLimitWaitMs: 0 });
    const attempts = attemptsOn(subjects().command('propose'));
    await h.nc.flush();

    // When
    const settled = await Promise.allSettled(Array.from({ length: PROPOSALS }, (_, i) => impatient.propose(proposal(author, i))));

    // Then
    const accepted = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value.proposal_id] : []));
    const refusals = settled.flatMap((s) => (s.status === 'rejected' ? [s.reason as ConclaveError] : []));
    expect(accepted.length).toBeGreaterThanOrEqual(BURST);
    expect(refusals.length).toBeGreaterThan(0);
    expect(accepted.length + refusals.length).toBe(PROPOSALS);
    for (const err of refusals) {
      expect(err).toBeInstanceOf(ConclaveError);
      expect(err.code).toBe('RATE_LIMITED');
      expect(err.retryAfterMs).toBeGreaterThan(0);
      expect(err.retryAfterMs).toBeLessThanOrEqual(1000 / PER_SECOND);
    }
    expect(of(author, attempts)).toHaveLength(PROPOSALS);
    // Read by the participant's default client, which waits out the bucket it just emptied.
    const listed = await (await h.clientFor(author)).list({ domain: domainOf(author), limit: 100 });
    expect(new Set(listed.proposals.map((p) => p.proposal_id))).toEqual(new Set(accepted));
  });

  it('given a participant that spent its allowance, when a call has a budget smaller than the hint, then it throws RATE_LIMITED after its one attempt; with a budget the hint fits in, the same call is served after the wait', async () => {
    // Given
    const reader = 'agent-small';
    const small = await h.clientFor(reader, undefined, { rateLimitWaitMs: 5 });
    const patient = await h.clientFor(reader, undefined, { rateLimitWaitMs: 2_000 });
    const attempts = attemptsOn(subjects().command('list'));
    await h.nc.flush();
    await exhaust(reader);
    const marked = (marker: string) => of(reader, attempts).filter((a) => a.body.includes(marker));

    // When: the next token is at least 150 ms away, far more than the 5 ms budget
    const refusal = await small.list({ domain: `${domainOf(reader)}.small`, limit: 1 }).catch((e: ConclaveError) => e);

    // Then
    expect(refusal).toBeInstanceOf(ConclaveError);
    expect(refusal).toMatchObject({ code: 'RATE_LIMITED' });
    expect((refusal as ConclaveError).retryAfterMs).toBeGreaterThan(5);
    expect(marked('.small')).toHaveLength(1);

    // And a budget that holds the hint waits it out, then is served
    await expect(patient.list({ domain: `${domainOf(reader)}.patient`, limit: 1 })).resolves.toMatchObject({ proposals: [] });
    expect(marked('.patient').length).toBeGreaterThan(1);
  });

  it('given a participant that spent its allowance, when its default client reads (get, list), then each read is refused, waited out and sent again signed afresh, and answers', async () => {
    // Given
    const reader = 'agent-reader';
    const client = await h.clientFor(reader);
    const { proposal_id } = await client.propose(proposal(reader, 0));
    const gets = attemptsOn(subjects().command('get'));
    const lists = attemptsOn(subjects().command('list'));
    await h.nc.flush();
    await exhaust(reader);

    // When
    const got = await client.get(proposal_id);
    await exhaust(reader);
    const listed = await client.list({ domain: domainOf(reader), limit: 10 });

    // Then
    expect(got.proposal_id).toBe(proposal_id);
    expect(listed.proposals.map((p) => p.proposal_id)).toEqual([proposal_id]);
    const getAttempts = of(reader, gets);
    expect(getAttempts.length).toBeGreaterThan(1);
    expect(new Set(getAttempts.map((a) => a.nonce)).size).toBe(getAttempts.length);
    const listAttempts = of(reader, lists).filter((a) => a.body.includes('"limit":10'));
    expect(listAttempts.length).toBeGreaterThan(1);
    expect(new Set(listAttempts.map((a) => a.nonce)).size).toBe(listAttempts.length);
  });
});
