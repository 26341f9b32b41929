import { COUNCIL_COMMAND_TYPES as C } from './contracts';
import { decide, isSameStart } from './decide';
import { dissentMentions } from './decision-record';
import { scrubMemberIds } from './review-and-anonymity';
import { foldRun } from './state';
import {
  candidateArtifact,
  decisionFor,
  defaultBehaviour,
  drive,
  goalContract,
  panel,
  refusal,
  startCommand,
} from '../testing/council-fixtures';
import type { Behaviour } from '../testing/council-fixtures';
import type { RunStarted } from './events';

/** Members who play the controller's own references and records against it (spec 11, 13, 14, 17.2). */
describe('adversarial members: ids shaped like blind refs, ids in keys, an earlier frame, near-miss dissent', () => {
  it('given a proposer that names its candidate anon-B-v1 (the blind ref of another lineage), when it answers, then SCHEMA_VIOLATION at candidate_id: the ref keeps naming the candidate it labels (11.1)', () => {
    const base = defaultBehaviour();
    const impostor: Behaviour = (req, memberId, state) =>
      req.stage === 'proposal' && memberId === 'member-builder-01'
        ? { kind: 'reply', artifact: candidateArtifact(memberId, { candidate_id: 'anon-B-v1' }) }
        : base(req, memberId, state);
    const d = drive(startCommand(), impostor, { stopWhen: (x) => x.requests.some((r) => r.stage === 'review') });
    expect(d.refusals.map((r) => [r.req.stage, r.error.code, r.error.field])).toContainEqual([
      'proposal',
      'SCHEMA_VIOLATION',
      expect.stringMatching(/candidate_id$/),
    ]);
    const ids = d.state.status === 'empty' ? [] : Object.keys(d.state.candidates);
    expect(ids).not.toContain('anon-B-v1');
  });

  it('given a review whose rubric score names its author in a key, when it is put on the blind surface, then the key is scrubbed like any text (11.1)', () => {
    const scrubbed = scrubMemberIds({ rubric_scores: { 'member-builder-01': 2, 'by member-builder-01': 3, clarity: 4 } }, [
      'member-builder-01',
    ]);
    expect(Object.keys(scrubbed.rubric_scores)).toEqual(['[member]', 'by [member]', 'clarity']);
  });

  it('given a panel member whose id is a word of a blind-surface field name (candidate, label) or fixed value (high), when the run starts, then SCHEMA_VIOLATION at its member_id and nothing is recorded (11.1)', () => {
    // Scrubbed, such an id would rewrite the surface's own keys: `candidate_ref` to `[member]_ref`.
    expect(Object.keys(scrubMemberIds({ candidate_ref: 'anon-A-v1', label: 'Candidate A' }, ['candidate']))).toEqual([
      '[member]_ref',
      'label',
    ]);
    for (const id of ['candidate', 'label', 'HIGH']) {
      const members = panel();
      members[1] = { ...members[1], member_id: id };
      const e = refusal(() => decide(startCommand({ panel: members }), { status: 'empty' }));
      expect([id, e.code, e.field]).toEqual([id, 'SCHEMA_VIOLATION', 'panel[1].member_id']);
    }
    // An id that only contains such a word as part of a longer word part is fine.
    const members = panel();
    members[1] = { ...members[1], member_id: 'candidates-bot' };
    expect(decide(startCommand({ panel: members }), { status: 'empty' }).map((e) => e.type)).toContain('RunStarted');
  });

  it('given a run restarted from a revised GoalContract, when the chair selects a candidate of the earlier frame, then UNKNOWN_REFERENCE at selected_path, and the run does not decide on it (13, 14)', () => {
    const toReview = drive(startCommand(), defaultBehaviour(), { stopWhen: (x) => x.requests.some((r) => r.stage === 'review') });
    const earlier = 'cand-member-builder-01-ggc-001-v1';
    expect(toReview.state.status !== 'empty' && toReview.state.candidates[earlier]).toBeTruthy();
    const revised = foldRun(
      decide(
        {
          type: C.ReviseGoalContract,
          goal_contract: goalContract({ goal_contract_id: 'gc-002', question: 'Should we rewrite billing instead?' }),
          actor: 'human-owner',
          now: toReview.now,
        },
        toReview.state,
      ),
      toReview.state,
    );
    expect(revised.status === 'running' && revised.generation).toBe(2);
    const d = drive(
      startCommand(),
      defaultBehaviour({ decision: (req) => decisionFor(req, { selected_path: earlier, grounded_in: [earlier] }) }),
      { from: { ...toReview, state: revised } },
    );
    expect(d.refusals.map((r) => [r.req.stage, r.error.code, r.error.field])).toContainEqual([
      'synthesis',
      'UNKNOWN_REFERENCE',
      'selected_path',
    ]);
    const decided = d.state.status === 'terminated' ? d.state.decision?.decision_record : undefined;
    expect(decided?.selected_path).not.toBe(earlier);
  });

  it('given a started run, when the same start comes again with another seed, then it is the same start (a retry); with another contract, panel, policy or actor, then it is not', () => {
    const state = foldRun(decide(startCommand(), foldRun([])));
    const startedBy = (cmd: ReturnType<typeof startCommand>) => decide(cmd, foldRun([]))[0] as RunStarted;
    expect(isSameStart(state, startedBy({ ...startCommand(), seed: 'seed-2' } as never))).toBe(true);
    expect(isSameStart(state, startedBy(startCommand({ goal: goalContract({ question: 'Another question?' }) })))).toBe(false);
    expect(isSameStart(state, startedBy(startCommand({ policy: { stage_timeout_ms: 1234 } })))).toBe(false);
    expect(isSameStart(state, startedBy(startCommand({ panel: panel({ moderator: true }) })))).toBe(false);
    const otherOwner = goalContract({ decision_owner: 'other-owner' });
    expect(isSameStart(state, startedBy({ ...startCommand({ goal: otherOwner }), actor: 'other-owner' } as never))).toBe(false);
  });

  it('given a started run, when a start comes again that differs from it only in its ACP origin, or only in its actor, then it is not the same start (the service answers RUN_ALREADY_STARTED)', () => {
    const startedBy = (cmd: ReturnType<typeof startCommand>) => decide(cmd, foldRun([]))[0] as RunStarted;
    const origin = { proposal_id: 'prop-1', domain: 'general', author: 'human-owner', bridge: { quorum: 2 } };
    const fromAcp = (acp_origin: typeof origin, seed = 'seed-1') => ({ ...startCommand({ seed }), acp_origin }) as never;

    // Only the ACP origin differs: none against one, one against none, or another proposal.
    const plain = foldRun(decide(startCommand(), foldRun([])));
    expect(isSameStart(plain, startedBy(startCommand({ seed: 'seed-2' })))).toBe(true);
    expect(isSameStart(plain, startedBy(fromAcp(origin)))).toBe(false);
    const asked = foldRun(decide(fromAcp(origin), foldRun([])));
    expect(asked.status === 'running' && asked.acp_origin).toEqual(origin);
    expect(isSameStart(asked, startedBy(fromAcp(origin, 'seed-2')))).toBe(true);
    expect(isSameStart(asked, startedBy(startCommand()))).toBe(false);
    expect(isSameStart(asked, startedBy(fromAcp({ ...origin, proposal_id: 'prop-2' })))).toBe(false);

    // Only the actor differs: the same RunStarted, signed for by someone else.
    const same = startedBy(startCommand({ seed: 'seed-2' }));
    expect(isSameStart(plain, { ...same, actor: 'other-owner' })).toBe(false);
    expect(isSameStart(plain, same)).toBe(true);
  });

  it('given dissent that retains review-1#issue-10, when asked whether it retains review-1#issue-1 (or c10 retains c1), then no: a mention is the whole id (17.2)', () => {
    expect(dissentMentions({ description: 'retained: review-1#issue-10' } as never, 'review-1#issue-1')).toBe(false);
    expect(dissentMentions('conflict c10 stays open', 'c1')).toBe(false);
    expect(dissentMentions({ description: 'retained: review-1#issue-1.' } as never, 'review-1#issue-1')).toBe(true);
    expect(dissentMentions('conflict c1 stays open', 'c1')).toBe(true);
    expect(dissentMentions({ description: 'see refs', refs: ['review-1#issue-1'] } as never, 'review-1#issue-1')).toBe(true);
  });
});
