import {
  decide,
  foldProposal,
  initialProposalState,
  PROPOSAL_COMMAND_TYPES,
  ProposalCommand,
  ProposalEvent,
  ProposalState,
  toDecisionEvent,
  isTerminalEvent,
} from '@conclave/acp-protocol';
import { chainEntry, AuditEntry } from '@conclave/registry-protocol';
import { createHash } from 'node:crypto';
import { ulid } from 'ulid';
import { checkInvariants, CheckReport, CommandAttempt, noViolations, RunRecord, StreamMessage, violationCounts } from './invariants';

/**
 * The checker on hand-built runs: a clean run passes, and each kind of violation is counted
 * under its own invariant (and nowhere else), with an example naming the proposal.
 */

const T = Date.parse('2025-01-15T10:00:00Z');
const at = (s: number) => new Date(T + s * 1000).toISOString();
const vote = { confidence: 0.9, domain_authority: 0.9, trust_score: 0.9 };

/** One proposal's events, produced by the real decider (so a clean log is one it could write). */
class Proposal {
  readonly id = ulid();
  events: ProposalEvent[] = [];
  state: ProposalState = initialProposalState;

  constructor(data: { quorum?: number; expires_at?: string | null } = {}, now = at(0)) {
    this.apply(PROPOSAL_COMMAND_TYPES.SubmitProposal, now, 'author', {
      proposal_id: this.id,
      type: 'proposal',
      domain: 'test.check',
      author: 'author',
      payload: { x: 1 },
      quorum: data.quorum ?? 3,
      created_at: now,
      expires_at: data.expires_at ?? null,
    });
  }

  apply(type: ProposalCommand['type'], now: string, actor: string, data: Record<string, unknown>): ProposalEvent[] {
    const events = decide({ type, command_id: ulid(), now, actor, data } as ProposalCommand, this.state);
    this.events.push(...events);
    this.state = foldProposal(events, this.state);
    return events;
  }

  respond(participant: string, type: 'endorse' | 'challenge', now = at(1)): this {
    this.apply(PROPOSAL_COMMAND_TYPES.RecordResponse, now, participant, {
      proposal_id: this.id,
      participant_id: participant,
      response_type: type,
      ...vote,
    });
    return this;
  }

  resolve(now = at(2)): this {
    this.apply(PROPOSAL_COMMAND_TYPES.ResolveProposal, now, 'resolver', { proposal_id: this.id });
    return this;
  }

  expire(now: string): this {
    this.apply(PROPOSAL_COMMAND_TYPES.ExpireProposal, now, 'sweeper', { proposal_id: this.id });
    return this;
  }

  /** Two endorsements and a challenge, then the resolver: the burst test's proposal. */
  static decided(): Proposal {
    return new Proposal().respond('a', 'endorse').respond('b', 'endorse').respond('c', 'challenge').resolve();
  }
}

/** A run made of these proposals, with the decision and escalation messages a correct outbox publishes. */
function runOf(proposals: Proposal[]): RunRecord {
  let seq = 0;
  const run: RunRecord = { events: [], decisions: [], escalations: [] };
  for (const p of proposals) {
    for (const event of p.events) {
      run.events.push({ seq: ++seq, category: 'proposal', id: p.id, event: event as unknown as RunRecord['events'][number]['event'] });
      if (!isTerminalEvent(event)) continue;
      const decision = toDecisionEvent(event, p.state)!;
      run.decisions.push(message(decision.event_id, decision as unknown as Record<string, unknown>));
      if (decision.outcome === 'escalated') run.escalations.push(message(decision.event_id, { decision, proposal: { proposal_id: p.id } }));
    }
  }
  return run;
}

let msgSeq = 0;
function message(msgId: string, body: Record<string, unknown>): StreamMessage {
  return { seq: ++msgSeq, msgId, subject: 'acp.v1.decisions.test.check', body };
}

const sha256Hex = (s: string) => createHash('sha256').update(s).digest('hex');

function withAudit(run: RunRecord): RunRecord {
  const entries: AuditEntry[] = [];
  for (const e of run.events) {
    entries.push(
      chainEntry(
        entries[entries.length - 1],
        {
          actor: 'x',
          action: e.event.type,
          outcome: 'recorded',
          proposal_id: e.id,
          timestamp: at(0),
          payload_hash: null,
          stream: `proposal-${e.id}`,
          source_id: e.event.event_id,
        },
        sha256Hex,
      ),
    );
  }
  return { ...run, audit: { entries, rejections: [], rejectionsStream: 'EVT_REJECTIONS' } };
}

function only(report: CheckReport, expected: Partial<ReturnType<typeof noViolations>>): void {
  expect(violationCounts(report)).toEqual({ ...noViolations(), ...expected });
  expect(report.ok).toBe(Object.values(expected).every((n) => n === 0));
}

describe('invariant checker on hand-built runs', () => {
  it('given proposals decided by quorum, by timeout and by a tie, when checked, then no invariant is violated', () => {
    const tie = new Proposal({ quorum: 2 }).respond('a', 'endorse').respond('b', 'challenge').resolve();
    const expired = new Proposal({ expires_at: at(10) }).expire(at(10));
    const report = checkInvariants(withAudit(runOf([Proposal.decided(), tie, expired])), { now: new Date(T + 60_000) });
    only(report, {});
    expect(report.counts).toMatchObject({ proposals: 3, pending: 0, terminalEvents: 3, decisionMessages: 3 });
  });

  it('given a proposal with 3 responses on quorum 3 and no resolution, then it is reported stuck', () => {
    const stuck = new Proposal().respond('a', 'endorse').respond('b', 'endorse').respond('c', 'challenge');
    const report = checkInvariants(runOf([Proposal.decided(), stuck]));
    only(report, { 'quorum-met-resolved-once': 1 });
    expect(report.stuck).toEqual([stuck.id]);
    expect(report.invariants['quorum-met-resolved-once'].examples[0]).toContain(stuck.id);
  });

  it('given a proposal resolved twice (each published), then the second resolution is reported, unjustified, and the log does not fold', () => {
    const p = Proposal.decided();
    p.events.push({ ...p.events[p.events.length - 1], event_id: ulid(), causation_id: ulid() });
    only(checkInvariants(runOf([p])), { 'quorum-met-resolved-once': 1, 'log-folds': 1, 'resolution-justified': 1 });
  });

  it('given a resolution whose vote totals come from a stale state, then it is not justified', () => {
    const p = Proposal.decided();
    const last = p.events[p.events.length - 1] as ProposalEvent & { data: { resolution: { votes_for: number } } };
    last.data.resolution.votes_for = 0.729; // one endorsement's weight: as if made from 2 of the 3 responses
    only(checkInvariants(runOf([p])), { 'resolution-justified': 1 });
  });

  it('given a resolution by quorum before the quorum was met, then the decider refuses it and it is reported', () => {
    const early = Proposal.decided();
    // move the third response after the resolution
    const [third] = early.events.splice(3, 1);
    early.events.push(third);
    const report = checkInvariants(runOf([early]));
    expect(report.invariants['resolution-justified'].violations).toBe(1);
    expect(report.invariants['resolution-justified'].examples[0]).toMatch(/refused by the decider/);
  });

  it('given a terminal event published twice or never, then each is one violation of one decision per terminal event', () => {
    const twice = Proposal.decided();
    const never = Proposal.decided();
    const run = runOf([twice, never]);
    const [d1, d2] = run.decisions;
    run.decisions = [d1, { ...d1, seq: 99 }];
    only(checkInvariants(run), { 'one-decision-per-terminal-event': 2 });
    expect(d2.body['proposal_id']).toBe(never.id);
  });

  it('given a decision message whose outcome disagrees with its event, then it is reported', () => {
    const run = runOf([Proposal.decided()]);
    run.decisions[0] = { ...run.decisions[0], body: { ...run.decisions[0].body, outcome: 'rejected' } };
    only(checkInvariants(run), { 'one-decision-per-terminal-event': 1 });
  });

  it('given a decision message without a terminal event in the log, then it is reported', () => {
    const run = runOf([Proposal.decided()]);
    run.decisions.push(message(ulid(), { event_id: 'X', proposal_id: ulid(), outcome: 'approved', trigger: 'quorum' }));
    only(checkInvariants(run), { 'decision-has-terminal-event': 1 });
  });

  it('given an escalation with no ACP_ESCALATIONS message, and a message with no escalation, then both are reported', () => {
    const tie = new Proposal({ quorum: 2 }).respond('a', 'endorse').respond('b', 'challenge').resolve();
    const run = runOf([tie]);
    run.escalations = [message(ulid(), { decision: { event_id: ulid() } })];
    only(checkInvariants(run), { 'escalation-messages-match-log': 2 });
  });

  it('given a proposal still pending long after expires_at, and one expired late, then both miss their deadline; one checked before its deadline does not', () => {
    const pending = new Proposal({ expires_at: at(10) });
    const late = new Proposal({ expires_at: at(10) }).expire(at(15));
    const notYet = new Proposal({ expires_at: at(100) });
    const report = checkInvariants(runOf([pending, late, notYet]), { now: new Date(T + 60_000) });
    only(report, { 'expired-in-time': 2 });
    expect(report.invariants['expired-in-time'].examples.join('\n')).toContain(pending.id);
    expect(report.invariants['expired-in-time'].examples.join('\n')).toContain(late.id);
  });

  it('given a response recorded after expires_at, then it is reported', () => {
    const p = new Proposal({ expires_at: at(10) }).respond('a', 'endorse', at(5));
    p.events[1] = { ...p.events[1], occurred_at: at(11) };
    only(checkInvariants(runOf([p]), { now: new Date(T + 5_000) }), { 'no-response-after-expiry': 1 });
  });

  it('given replies that disagree with the log, then each is reported; a refusal after an unanswered attempt is not', () => {
    const p = new Proposal({ quorum: 5 }).respond('a', 'endorse');
    const ghost = ulid();
    const attempts: CommandAttempt[] = [
      { command: 'propose', proposal_id: p.id, reply: { ok: true } },
      { command: 'propose', proposal_id: ghost, reply: { ok: true } }, // ok, yet not in the log
      { command: 'respond', proposal_id: p.id, participant_id: 'a', reply: { ok: false, error: { code: 'INTERNAL' } } }, // refused, yet recorded
      { command: 'respond', proposal_id: p.id, participant_id: 'b', reply: { ok: true } }, // ok, yet not recorded
    ];
    const report = checkInvariants(runOf([p]), { attempts });
    only(report, { 'replies-agree-with-log': 3 });

    const retried: CommandAttempt[] = [
      { command: 'respond', proposal_id: p.id, participant_id: 'a', reply: undefined },
      { command: 'respond', proposal_id: p.id, participant_id: 'a', reply: { ok: false, error: { code: 'DUPLICATE_RESPONSE' } } },
      { command: 'propose', proposal_id: ulid(), reply: { ok: false, error: { code: 'SCHEMA_VIOLATION' } } },
    ];
    only(checkInvariants(runOf([p]), { attempts: retried }), {});
  });

  it('given an audit chain missing an event, holding one twice, or tampered with, then each is reported', () => {
    const run = withAudit(runOf([Proposal.decided()]));
    const entries = run.audit!.entries;

    const missing = { ...run, audit: { ...run.audit!, entries: entries.slice(0, -1) } };
    only(checkInvariants(missing), { 'every-event-audited': 1 });

    const tampered = { ...run, audit: { ...run.audit!, entries: entries.map((e, i) => (i === 1 ? { ...e, actor: 'forged' } : e)) } };
    only(checkInvariants(tampered), { 'every-event-audited': 1 });

    const doubled = [...entries, chainEntry(entries[entries.length - 1], { ...entries[0] }, sha256Hex)];
    only(checkInvariants({ ...run, audit: { ...run.audit!, entries: doubled } }), { 'every-event-audited': 1 });
  });
});
