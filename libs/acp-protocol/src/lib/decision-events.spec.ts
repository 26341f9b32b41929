/** Spec section 11 decision events (12.6 + 11.3 caused_by, payload_summary). */
import { P1, at, challenge, endorse, escalate, expire, min, resolveByQuorum, resolveEscalation, submit } from '../testing/fixtures';
import { history } from '../testing/given-when-then';
import { toDecisionEvent, summarizePayload } from './decision-events';
import { handleProposalCommand } from './proposal.handler';
import { foldProposal, initialProposalState, evolveProposal } from './proposal.state';
import type { ProposalCommand } from './proposal.commands';

const F = { domain_authority: 0.9, confidence: 0.9, trust_score: 0.9 };

function decisionsOf(commands: ProposalCommand[]) {
  let state = foldProposal([]);
  const out = [];
  for (const c of commands) {
    const r = handleProposalCommand(state, c);
    state = r.state;
    out.push(...r.decisions.map((d) => ({ d, events: r.events })));
  }
  return out;
}

describe('11 decision events', () => {
  it('11.1 one decision event per terminal transition: approved, rejected, escalated, expired, and again after human resolution', () => {
    expect(decisionsOf([submit({ quorum: 1 }), endorse('a', F), resolveByQuorum()]).map((x) => x.d.outcome)).toEqual(['approved']);
    expect(decisionsOf([submit({ quorum: 1 }), challenge('a', F), resolveByQuorum()]).map((x) => x.d.outcome)).toEqual(['rejected']);
    expect(decisionsOf([submit(), expire(min(5))]).map((x) => x.d.outcome)).toEqual(['expired']);
    const resolved = decisionsOf([submit(), escalate(), resolveEscalation('rejected')]);
    expect(resolved.map((x) => [x.d.outcome, x.d.trigger, x.d.proposal_id])).toEqual([
      ['escalated', 'manual', P1],
      ['rejected', 'manual', P1],
    ]);
    // Two events of one proposal: a consumer deduplicating by event_id keeps both.
    expect(resolved[0].d.event_id).not.toBe(resolved[1].d.event_id);
  });

  it('11.2 / 12.6 fields, 11.3 causal lineage (caused_by = proposal_id, payload_summary), event_id = the log event id', () => {
    const [{ d, events }] = decisionsOf([
      submit({ quorum: 1 }, { correlation_id: 'trace-1' }),
      endorse('a', F, { correlation_id: 'trace-1' }),
      resolveByQuorum({ now: at(60), correlation_id: 'trace-1' }),
    ]);
    expect(d).toEqual({
      schema_version: '1.0',
      event_id: events[0].event_id,
      event_type: 'decision',
      proposal_id: P1,
      domain: 'risk.credit',
      outcome: 'approved',
      trigger: 'quorum',
      votes_for: 0.729,
      votes_against: 0,
      decided_at: at(60),
      caused_by: P1,
      payload_summary: '{"action":"approve_loan","amount_usd":250000,"loan_id":"LOAN-42"}',
      correlation_id: 'trace-1',
    });
  });

  it('11.3 given a proposal that named its causes, then each of its decision events carries them as proposal_caused_by', () => {
    const cause = P1.replace(/.$/, 'Z');
    const [esc, human] = decisionsOf([submit({ caused_by: [cause] }), escalate('x'), resolveEscalation('approved')]).map((x) => x.d);
    expect(esc).toMatchObject({ caused_by: P1, proposal_caused_by: [cause] });
    expect(human).toMatchObject({ caused_by: P1, proposal_caused_by: [cause] });
    const [plain] = decisionsOf([submit({ quorum: 1 }), endorse('a', F), resolveByQuorum()]).map((x) => x.d);
    expect(plain).not.toHaveProperty('proposal_caused_by');
  });

  it('11.3 payload_hash is carried when the edge stamped one; escalation metadata and resolver are included', () => {
    const [esc, human] = decisionsOf([
      submit({ payload_hash: 'sha256:abc' }),
      escalate('x'),
      resolveEscalation('approved', { resolved_by: 'human:eve', note: null }),
    ]).map((x) => x.d);
    expect(esc).toMatchObject({ payload_hash: 'sha256:abc', escalation: { reason: 'manual' } });
    expect(human).toMatchObject({ payload_hash: 'sha256:abc', resolved_by: 'human:eve', note: null, escalation: { reason: 'manual' } });
  });

  it('11.1 non-terminal events have no decision event; the builder is deterministic', () => {
    const events = history([submit(), endorse('a', F)]);
    let s = initialProposalState as ReturnType<typeof foldProposal>;
    for (const e of events) {
      s = evolveProposal(s, e);
      expect(toDecisionEvent(e, s)).toBeUndefined();
    }
    const long = { blob: 'x'.repeat(1000) };
    expect(summarizePayload({ payload: long })).toHaveLength(256);
    expect(summarizePayload({ payload: { b: 1, a: 2 } })).toBe(summarizePayload({ payload: { a: 2, b: 1 } }));
  });

  it('a custom payload summarizer can be supplied', () => {
    const r = handleProposalCommand(initialProposalState, submit({ type: 'observation' }), undefined, {
      summarizePayload: (p) => String(p.payload['action']),
    });
    expect(r.decisions[0].payload_summary).toBe('approve_loan');
  });

  it('the builder refuses a state of another proposal (INTERNAL)', () => {
    const events = history([submit({ type: 'observation' })]);
    expect(() => toDecisionEvent(events[1], initialProposalState)).toThrow(expect.objectContaining({ code: 'INTERNAL' }));
  });
});
