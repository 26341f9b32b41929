import type { ConclaveClient } from '@conclave/sdk';
import { eventually, SecureConclaveHarness } from '../support/conclave-harness';
import { DecisionCollector } from '../support/decisions';
import { checkRun, describeReport, noViolations, runNamesOf, violationCounts } from '../support/invariants';
import { pool } from '../support/load-agent';

/**
 * No decision lost or stale under a burst with authentication on: every command signed by its
 * participant (Ed25519), so each one also claims a nonce, loads its signer from the registry and
 * spends its rate allowance, on two intake and two resolver replicas. An author posts proposals
 * with quorum 3, 32 in flight, each followed at once by three concurrent signed responses. Each
 * participant stays under its burst allowance (500), so no refusal is expected: every command
 * must be accepted, every proposal decided exactly once, and the log must pass the invariant
 * checker.
 */
const PROPOSALS = 400;
const IN_FLIGHT = 32;
const DOMAIN = 'burst.signed';
const TEST_TIMEOUT_MS = 240_000;

describe('burst, signed: every proposal with its quorum of concurrent signed responses is decided exactly once', () => {
  const h = new SecureConclaveHarness();
  afterAll(() => h.stop());

  it(
    `given two intakes, two resolvers and a sweeper with authentication required, when ${PROPOSALS} signed proposals get 3 concurrent signed responses each, then every command is accepted, each proposal has exactly one decision and no invariant is violated`,
    async () => {
      // Given the services and four registered participants with a grant on the domain
      await h.start('intake', 'intake', 'resolver', 'resolver', 'sweeper');
      const grant = { domain: DOMAIN, domain_authority: 0.8, trust_score: 0.9 };
      await h.seed(['author', 'voter-a', 'voter-b', 'voter-c'].map((participant_id) => ({ participant_id, grants: [grant] })));
      const author = await h.clientFor('author');
      const voters: Array<[string, ConclaveClient, 'endorse' | 'challenge']> = [
        ['voter-a', await h.clientFor('voter-a'), 'endorse'],
        ['voter-b', await h.clientFor('voter-b'), 'endorse'],
        ['voter-c', await h.clientFor('voter-c'), 'challenge'],
      ];
      const decisions = new DecisionCollector(h.client);

      // When the author posts the burst, each proposal answered at once by three concurrent voters
      const refusals: string[] = [];
      const ids = await pool(Array.from({ length: PROPOSALS }), IN_FLIGHT, async (_, i) => {
        const p = await author.propose({ domain: DOMAIN, author: 'author', payload: { i }, quorum: 3 });
        await Promise.all(
          voters.map(([id, client, kind]) =>
            client[kind](p.proposal_id, { participant_id: id, confidence: 0.9 }).catch((e: Error) => refusals.push(`${id}: ${e.message}`)),
          ),
        );
        return p.proposal_id;
      });
      const decided = () => new Set(decisions.received.map((d) => d.proposal_id));
      // A decision follows quorum within milliseconds; the bound only ends a run whose proposals never decide.
      await eventually(async () => (ids.every((id) => decided().has(id)) ? true : undefined), 60_000, 'a decision for each').catch(
        () => undefined,
      );

      // Then every command was accepted, every proposal decided once, approved by quorum, and the log is sound
      const report = await checkRun(h.nc, runNamesOf(h.env));
      if (!report.ok) console.warn(describeReport(report));
      const perProposal = new Map<string, number>();
      for (const d of decisions.received) perProposal.set(d.proposal_id, (perProposal.get(d.proposal_id) ?? 0) + 1);
      expect(refusals).toEqual([]);
      expect(ids.filter((id) => perProposal.get(id) !== 1)).toEqual([]);
      expect(decisions.received.filter((d) => d.outcome !== 'approved' || d.trigger !== 'quorum')).toEqual([]);
      expect(violationCounts(report)).toEqual(noViolations());
      expect(report.counts).toMatchObject({ proposals: PROPOSALS, pending: 0, terminalEvents: PROPOSALS, decisionMessages: PROPOSALS });
    },
    TEST_TIMEOUT_MS,
  );
});
