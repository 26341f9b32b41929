import type { DecisionEvent } from '@conclave/acp-protocol';
import { ConclaveClient, VoteInput } from '@conclave/sdk';
import { formatDecision } from '../format';

interface Scenario {
  title: string;
  domain: string;
  quorum: number;
  expiresInMs?: number;
  votes: Array<{ kind: 'endorse' | 'challenge' } & VoteInput>;
  /** C.4: the human who resolves the tie. */
  humanResolution?: { outcome: 'approved' | 'rejected'; resolved_by: string; note: string };
}

/** RFC Appendix C, exactly as written (C.3's five minutes shortened to a few seconds). */
export const APPENDIX_C: Scenario[] = [
  {
    title: 'C.1 2-of-3 endorsement',
    domain: 'risk.credit',
    quorum: 2,
    votes: [
      { kind: 'endorse', participant_id: 'agent-a', domain_authority: 0.9, confidence: 0.85, trust_score: 0.9 },
      { kind: 'endorse', participant_id: 'agent-b', domain_authority: 0.8, confidence: 0.7, trust_score: 0.85 },
    ],
  },
  {
    title: 'C.2 weighted domain experts',
    domain: 'ops.deploy',
    quorum: 2,
    votes: [
      { kind: 'challenge', participant_id: 'senior-expert', domain_authority: 0.95, confidence: 0.9, trust_score: 0.95 },
      { kind: 'endorse', participant_id: 'junior-agent', domain_authority: 0.4, confidence: 0.6, trust_score: 0.7 },
    ],
  },
  {
    title: 'C.3 timeout with partial responses',
    domain: 'finance.budget',
    quorum: 3,
    expiresInMs: 3_000,
    votes: [{ kind: 'endorse', participant_id: 'agent-a', domain_authority: 0.8, confidence: 0.75, trust_score: 0.9 }],
  },
  {
    title: 'C.4 escalation from tie',
    domain: 'strategy.pricing',
    quorum: 2,
    votes: [
      { kind: 'endorse', participant_id: 'agent-a', domain_authority: 0.9, confidence: 0.8, trust_score: 0.9 },
      { kind: 'challenge', participant_id: 'agent-b', domain_authority: 0.9, confidence: 0.8, trust_score: 0.9 },
    ],
    humanResolution: { outcome: 'approved', resolved_by: 'human-pricing-lead', note: 'Pricing change approved after review' },
  },
];

/** Who posts the four scenarios. */
export const DEMO_PROPOSER = 'demo-proposer';

export interface DemoOptions {
  timeoutMs?: number;
  /**
   * The client that acts for a participant, signing as it (authentication required): the
   * proposer, each voter, the human of C.4. Absent, `client` sends everything, unsigned, with
   * the factors each vote declares (authentication off).
   */
  as?: (participantId: string) => ConclaveClient;
}

/**
 * Posts the four Appendix C scenarios through the SDK and prints every decision as it
 * arrives from the ACP_DECISIONS stream. Resolves when each scenario's final decision is in.
 */
export async function runDemo(client: ConclaveClient, print: (line: string) => void, options: DemoOptions = {}): Promise<DecisionEvent[]> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const as = options.as ?? (() => client);
  const seen: DecisionEvent[] = [];
  const ids = new Map<string, Scenario>();
  // Final decisions seen; a scenario can be decided before the next one is even posted.
  const decided = new Set<string>();
  // Everything decided from now on: the consumer may be created after the first decision.
  const decisions = client.decisions({ since: new Date(Date.now() - 1_000) });
  let finish!: () => void;
  let fail!: (e: Error) => void;
  const done = new Promise<void>((resolve, reject) => ((finish = resolve), (fail = reject)));
  const timer = setTimeout(() => fail(new Error(`demo: not every decision arrived within ${timeoutMs} ms`)), timeoutMs);

  const reader = (async () => {
    for await (const decision of decisions) {
      const scenario = ids.get(decision.proposal_id);
      if (!scenario) continue;
      seen.push(decision);
      print(formatDecision(decision, scenario.title));
      if (decision.outcome === 'escalated' && scenario.humanResolution) {
        print(`  -> a human (${scenario.humanResolution.resolved_by}) resolves the escalation: ${scenario.humanResolution.outcome}`);
        await as(scenario.humanResolution.resolved_by).resolve(decision.proposal_id, scenario.humanResolution);
        continue;
      }
      decided.add(decision.proposal_id);
      if (decided.size === APPENDIX_C.length) break;
    }
  })();

  try {
    for (const scenario of APPENDIX_C) {
      const now = Date.now();
      const proposal = await as(DEMO_PROPOSER).propose({
        domain: scenario.domain,
        author: DEMO_PROPOSER,
        payload: { scenario: scenario.title },
        quorum: scenario.quorum,
        created_at: new Date(now).toISOString(),
        expires_at: scenario.expiresInMs ? new Date(now + scenario.expiresInMs).toISOString() : null,
      });
      ids.set(proposal.proposal_id, scenario);
      print(`posted ${scenario.title}: proposal ${proposal.proposal_id} in ${scenario.domain}, quorum ${scenario.quorum}`);
      for (const { kind, domain_authority, trust_score, ...vote } of scenario.votes) {
        // Signed, the factors are left out: the service stamps them from the voter's grant.
        const cast = options.as ? vote : { ...vote, domain_authority, trust_score };
        const voter = as(vote.participant_id);
        await (kind === 'endorse' ? voter.endorse(proposal.proposal_id, cast) : voter.challenge(proposal.proposal_id, cast));
      }
    }
    await Promise.race([reader.then(() => finish()), done]);
    return seen;
  } finally {
    clearTimeout(timer);
  }
}

/** After the ACP scenarios, the demo runs a small council (scripted members) and prints its DecisionRecord with dissent. */
export { runCouncilDemo } from './council-demo.command';
