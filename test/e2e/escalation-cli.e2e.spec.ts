import { listEscalations, showEscalation } from '../../apps/cli/src/commands/escalations.command';
import { UsageError, resolveEscalation, waitForOutcome } from '../../apps/cli/src/commands/resolve.command';
import { OUTCOME_EXIT_CODES } from '../../apps/cli/src/format';
import { ConclaveHarness, eventually } from '../support/conclave-harness';
import { DecisionCollector } from '../support/decisions';

const now = () => new Date().toISOString();
const F = { domain_authority: 0.9, confidence: 0.8, trust_score: 0.9 };

/**
 * Appendix C.4 end to end through the CLI: the command functions `conclave escalations list`,
 * `conclave resolve` and `conclave wait` run in-process against the real services (the same
 * functions main.ts registers), with their output captured and their exit codes checked.
 */
describe('conclave CLI: escalations list|show, resolve, wait (exit codes a CI pipeline can gate on)', () => {
  const h = new ConclaveHarness();
  let decisions: DecisionCollector;

  beforeAll(async () => {
    await h.start('intake', 'resolver', 'sweeper', 'escalation');
    decisions = new DecisionCollector(h.client);
  });
  afterAll(() => h.stop());

  function capture() {
    const lines: string[] = [];
    return { lines, print: (line: string) => lines.push(line) };
  }

  async function tie(domain = 'strategy.pricing') {
    const p = await h.client.propose({ domain, author: 'agent-pricing', payload: { action: 'raise_price' }, quorum: 2, created_at: now() });
    await h.client.endorse(p.proposal_id, { participant_id: 'agent-a', ...F });
    await h.client.challenge(p.proposal_id, { participant_id: 'agent-b', ...F });
    await decisions.waitFor(p.proposal_id);
    await eventually(async () =>
      (await h.client.escalations()).some((e) => e.proposal_id === p.proposal_id && e.routed) ? true : undefined,
    );
    return p.proposal_id;
  }

  it('C.4 given a tie, when a human runs escalations list, then resolve --approve --note, then the list shows it, the decision follows and wait exits 0', async () => {
    const id = await tie();
    const list = capture();
    expect(await listEscalations(h.client, {}, false, list.print)).toBe(0);
    expect(list.lines.find((l) => l.startsWith(id))).toMatch(/open\s+tie\s+strategy\.pricing/);

    const show = capture();
    await showEscalation(h.client, id, false, show.print);
    expect(show.lines.join('\n')).toMatch(/votes for 0\.648 \/ against 0\.648 \(2 responses\)/);

    const json = capture();
    await listEscalations(h.client, { domain: 'strategy' }, true, json.print);
    expect(json.lines.map((l) => JSON.parse(l).proposal_id)).toContain(id);

    const out = capture();
    const code = await resolveEscalation(
      h.client,
      id,
      { approve: true, note: 'Pricing change approved after review', as: 'human-pricing-lead' },
      false,
      out.print,
    );
    expect(code).toBe(OUTCOME_EXIT_CODES.approved);
    expect(out.lines).toEqual([`${id} APPROVED (trigger MANUAL by human-pricing-lead)`]);
    const [, d] = await decisions.waitFor(id, 2);
    expect(d).toMatchObject({ outcome: 'approved', trigger: 'manual', resolved_by: 'human-pricing-lead' });

    expect(await waitForOutcome(h.client, id, {}, false, capture().print)).toBe(0);
    const gone = capture();
    await listEscalations(h.client, {}, false, gone.print);
    await eventually(async () => {
      const again = capture();
      await listEscalations(h.client, {}, false, again.print);
      return again.lines.some((l) => l.startsWith(id)) ? undefined : true;
    });
  });

  it('given a rejection, then resolve exits 10; a second resolve is NOT_ESCALATED (the CLI exits 2 on it)', async () => {
    const id = await tie();
    expect(await resolveEscalation(h.client, id, { reject: true, note: 'no', as: 'human-x' }, true, capture().print)).toBe(
      OUTCOME_EXIT_CODES.rejected,
    );
    await expect(
      resolveEscalation(h.client, id, { approve: true, note: 'yes', as: 'human-x' }, false, capture().print),
    ).rejects.toMatchObject({ code: 'NOT_ESCALATED' });
    await expect(
      resolveEscalation(h.client, id, { approve: true, reject: true, note: 'both' }, false, capture().print),
    ).rejects.toBeInstanceOf(UsageError);
    await expect(resolveEscalation(h.client, id, { approve: true }, false, capture().print)).rejects.toBeInstanceOf(UsageError);
  });

  it('wait exits by outcome: 0 approved by quorum, 11 escalated, 12 expired, and with --final it waits through the escalation for the human', async () => {
    const approved = await h.client.propose({
      domain: 'ci.release',
      author: 'agent-ci',
      payload: { build: 1 },
      quorum: 1,
      created_at: now(),
    });
    const waiting = waitForOutcome(h.client, approved.proposal_id, {}, false, capture().print);
    await h.client.endorse(approved.proposal_id, { participant_id: 'agent-qa', ...F });
    expect(await waiting).toBe(OUTCOME_EXIT_CODES.approved);

    const expiring = await h.client.propose({
      domain: 'ci.release',
      author: 'agent-ci',
      payload: { build: 2 },
      quorum: 3,
      created_at: now(),
      expires_at: new Date(Date.now() + 500).toISOString(),
    });
    expect(await waitForOutcome(h.client, expiring.proposal_id, {}, false, capture().print)).toBe(OUTCOME_EXIT_CODES.expired);

    const id = await tie('ci.release');
    expect(await waitForOutcome(h.client, id, {}, false, capture().print)).toBe(OUTCOME_EXIT_CODES.escalated);
    const final = capture();
    const gate = waitForOutcome(h.client, id, { final: true }, true, final.print);
    await resolveEscalation(h.client, id, { reject: true, note: 'release blocked', as: 'human-release-manager' }, false, capture().print);
    expect(await gate).toBe(OUTCOME_EXIT_CODES.rejected);
    expect(JSON.parse(final.lines[0])).toMatchObject({ proposal_id: id, outcome: 'rejected', resolved_by: 'human-release-manager' });
  });

  it('wait --timeout on a pending proposal exits 13', async () => {
    const p = await h.client.propose({ domain: 'ci.release', author: 'agent-ci', payload: { build: 3 }, quorum: 3, created_at: now() });
    expect(await waitForOutcome(h.client, p.proposal_id, { timeoutMs: 300 }, false, capture().print)).toBe(OUTCOME_EXIT_CODES.pending);
  });
});
