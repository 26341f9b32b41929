import { deriveEventId } from './ids';
import { isExpired } from './timeout-and-expiration';
import { expiryDeadlineMs, reactionCommandId, resolverReactions } from './proposal.workflows';
import { evolveProposal, initialProposalState, type ProposalState } from './proposal.state';
import { decide } from './proposal.decider';
import type { ProposalCommand } from './proposal.commands';
import { ulid } from 'ulid';

const NOW = '2026-11-30T10:00:00.000Z';
function run(commands: ProposalCommand[]): ProposalState {
  let state: ProposalState = initialProposalState;
  for (const c of commands) for (const e of decide(c, state)) state = evolveProposal(state, e);
  return state;
}
const submit = (id: string, extra: Record<string, unknown> = {}): ProposalCommand =>
  ({
    type: 'SubmitProposal',
    command_id: ulid(),
    now: NOW,
    actor: 'a',
    data: {
      proposal_id: id,
      proposal_type: 'action',
      domain: 'ops',
      author: 'author',
      summary: 's',
      payload: {},
      quorum: 2,
      created_at: NOW,
      expires_at: null,
      depends_on: [],
      ...extra,
    },
  }) as unknown as ProposalCommand;
const respond = (id: string, who: string, type: 'endorse' | 'challenge'): ProposalCommand =>
  ({
    type: 'RecordResponse',
    command_id: ulid(),
    now: NOW,
    actor: who,
    data: { proposal_id: id, participant_id: who, response_type: type, confidence: 0.9, domain_authority: 0.9, trust_score: 0.9 },
  }) as unknown as ProposalCommand;

describe('resolver reactions', () => {
  const id = ulid();
  it('given a pending proposal below quorum, then nothing is due', () => {
    expect(resolverReactions(run([submit(id), respond(id, 'p1', 'endorse')]), [])).toEqual([]);
  });
  it('given a proposal whose quorum is met, then it is due for resolution', () => {
    const state = run([submit(id), respond(id, 'p1', 'endorse'), respond(id, 'p2', 'challenge')]);
    expect(resolverReactions(state, [])).toEqual([{ kind: 'resolve', proposal_id: id }]);
  });
  it('given a decided child with two parents waiting, then each parent is told its outcome', () => {
    const decided = run([
      submit(id),
      respond(id, 'p1', 'endorse'),
      respond(id, 'p2', 'endorse'),
      { type: 'ResolveProposal', command_id: ulid(), now: NOW, actor: 'r', data: { proposal_id: id } } as unknown as ProposalCommand,
    ]);
    expect(decided.status).toBe('resolved');
    expect(resolverReactions(decided, ['P1', 'P2'])).toEqual([
      { kind: 'record-child-outcome', proposal_id: 'P1', child_proposal_id: id, outcome: 'approved' },
      { kind: 'record-child-outcome', proposal_id: 'P2', child_proposal_id: id, outcome: 'approved' },
    ]);
  });
  it("given an escalated child, then its parent waits; when the ladder's default ends the escalation without a human, then the parent is told that outcome", () => {
    const child = ulid();
    let state = run([submit(child)]);
    const escalated = decide(
      { type: 'EscalateProposal', command_id: ulid(), now: NOW, actor: 'a', data: { proposal_id: child, reason: 'r', requested_by: 'a' } },
      state,
    );
    for (const e of escalated) state = evolveProposal(state, e);
    expect(state.status).toBe('escalated');
    expect(resolverReactions(state, ['P1'])).toEqual([]);
    // The escalation's id is its ProposalEscalated event's.
    const escalationId = escalated[0].event_id;
    const desk = { now: NOW, actor: 'conclave-escalation' };
    for (const c of [
      {
        type: 'RouteEscalation',
        command_id: ulid(),
        ...desk,
        data: {
          proposal_id: child,
          escalation_id: escalationId,
          payload_hash: 'sha256:abc',
          routing: {
            route_id: 'r',
            assignees: ['human:lead'],
            ladder: [{ action: 'default', after_ms: 0, outcome: 'rejected' }],
            sign_off: null,
          },
        },
      },
      { type: 'AdvanceEscalationLadder', command_id: ulid(), ...desk, data: { proposal_id: child } },
    ] as ProposalCommand[])
      for (const e of decide(c, state)) state = evolveProposal(state, e);
    expect(state).toMatchObject({ status: 'resolved', resolution: { outcome: 'rejected', trigger: 'timeout', ladder_default: true } });
    expect(resolverReactions(state, ['P1'])).toEqual([
      { kind: 'record-child-outcome', proposal_id: 'P1', child_proposal_id: child, outcome: 'rejected' },
    ]);
  });
});

describe('expiry deadline in milliseconds', () => {
  it('given sub-millisecond digits, then the deadline rounds up so the decider agrees it has expired', () => {
    const expiresAt = '2026-11-30T10:00:00.123456Z';
    const ms = expiryDeadlineMs(expiresAt, 0)!;
    expect(ms).toBe(Date.parse('2026-11-30T10:00:00.124Z'));
    expect(isExpired(expiresAt, new Date(ms).toISOString())).toBe(true);
    expect(isExpired(expiresAt, new Date(ms - 1).toISOString())).toBe(false);
  });
  it('given a grace, then it is added; given no expiry, then there is no deadline', () => {
    expect(expiryDeadlineMs('2026-11-30T10:00:00.000Z', 250)).toBe(Date.parse('2026-11-30T10:00:00.250Z'));
    expect(expiryDeadlineMs(null, 250)).toBeUndefined();
  });
});

describe('reaction command ids', () => {
  it('given the same trigger, then the same id; given another slot, then another id, clear of the trigger command events', () => {
    const command = ulid();
    const trigger = deriveEventId(command, 1);
    expect(reactionCommandId(trigger, 0)).toBe(reactionCommandId(trigger, 0));
    expect(reactionCommandId(trigger, 1)).not.toBe(reactionCommandId(trigger, 0));
    const own = [1, 2, 3].map((k) => deriveEventId(command, k));
    const derived = [1, 2, 3].map((k) => deriveEventId(reactionCommandId(trigger, 0), k));
    expect(derived.filter((d) => own.includes(d))).toEqual([]);
  });
});
