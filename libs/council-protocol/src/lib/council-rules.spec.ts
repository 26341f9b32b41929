import { COUNCIL_COMMAND_TYPES as C, COUNCIL_EVENT_TYPES as E } from './contracts';
import { decideNext } from './controller';
import { decide } from './decide';
import { CouncilEvent, RoundClosed } from './events';
import { independenceViolations, proposalsWereIndependent } from './independent-proposal';
import { assignAnonymousLabels, reviewOrderFor, scrubMemberIds } from './review-and-anonymity';
import { isDecisionRelevantIssue } from './targeted-revision';
import { artifactsRemainComparable } from './frame-challenge';
import { buildRunRecord } from './run-record';
import { foldRun, StartedRun } from './state';
import {
  Behaviour,
  Driven,
  at,
  candidateArtifact,
  conflictMapFor,
  decisionFor,
  defaultBehaviour,
  drive,
  goalContract,
  highIssue,
  member,
  panel,
  revisionFor,
  reviewsFor,
  startCommand,
  styleIssue,
} from '../testing/council-fixtures';
import { CouncilTaskRequest } from './controller';

const terminal = (d: Driven) => (d.state.status === 'terminated' ? d.state.terminal : undefined);
const run = (d: Driven) => d.state as StartedRun;
const ofType = <T extends CouncilEvent['type']>(d: Driven, t: T) =>
  d.events.filter((e): e is Extract<CouncilEvent, { type: T }> => e.type === t);
const rounds = (d: Driven) => ofType(d, E.RoundClosed).map((e) => (e as RoundClosed).data);
const oneIssueRound1 = { issues: (_r: string, round: number) => (round === 1 ? [highIssue()] : []) };

describe('spec 10 independent proposal (checklist 2)', () => {
  it('given the proposal stage, when tasks are issued, then their inputs contain only the goal contract', () => {
    const d = drive(startCommand(), defaultBehaviour());
    const proposals = d.requests.filter((r) => r.stage === 'proposal');
    expect(proposals).toHaveLength(3);
    for (const p of proposals) expect(Object.keys(p.inputs)).toEqual(['goal_contract']);
    expect(proposalsWereIndependent(run(d))).toBe(true);
  });
  it('given the proposal stage is open, when two of its three candidates arrived, then no other task is issued until it closes (no early cross-copying)', () => {
    const d = drive(
      startCommand(),
      (req, id, st) => (id === 'member-operator-01' && req.stage === 'proposal' ? { kind: 'silent' } : defaultBehaviour()(req, id, st)),
      {
        stopWhen: (x) => x.events.filter((e) => e.type === E.CandidateSubmitted).length === 2,
      },
    );
    expect(decideNext(d.state, d.now)).toEqual([]);
  });
  it('given inputs that quote another candidate, when checked, then the violation names it', () => {
    expect(independenceViolations({ goal_contract: {}, peer: 'see cand-B-v1' }, [{ candidate_id: 'cand-B-v1' }])).toEqual(['cand-B-v1']);
  });
});

describe('spec 11 review and anonymity (checklist 4)', () => {
  it('given a seed, when labels are assigned, then they are stable for the seed and independent of arrival order', () => {
    const ls = [
      { lineage_id: 'c1', author_member_id: 'a' },
      { lineage_id: 'c2', author_member_id: 'b' },
      { lineage_id: 'c3', author_member_id: 'c' },
    ];
    const one = assignAnonymousLabels(ls, 's');
    expect(assignAnonymousLabels([...ls].reverse(), 's')).toEqual(one);
    expect(one.map((l) => l.label).sort()).toEqual(['Candidate A', 'Candidate B', 'Candidate C']);
  });
  it('given several reviewers, when orders are derived, then each is deterministic from seed + reviewer and they differ', () => {
    const items = ['A', 'B', 'C', 'D', 'E', 'F'];
    const orders = ['r1', 'r2', 'r3', 'r4'].map((r) => reviewOrderFor(items, 'seed', r, 1).join(''));
    expect(orders).toEqual(['r1', 'r2', 'r3', 'r4'].map((r) => reviewOrderFor(items, 'seed', r, 1).join('')));
    expect(new Set(orders).size).toBeGreaterThan(1);
  });
  it('given a run, when review tasks are issued, then no reviewer gets its own candidate and the inputs name no author (scan of the inputs)', () => {
    const leaky: Behaviour = (req, id, st) => {
      const r = defaultBehaviour()(req, id, st);
      // A candidate that names its author in free text must not leak it either.
      return req.stage === 'proposal' && r.kind === 'reply'
        ? { kind: 'reply', artifact: { ...(r.artifact as object), position: `As ${id} I propose phase one` } }
        : r;
    };
    const d = drive(startCommand(), leaky);
    const authors = run(d).panel.map((m) => m.member_id);
    const reviews = d.requests.filter((r) => r.stage === 'review');
    expect(reviews.length).toBeGreaterThan(0);
    for (const req of reviews) {
      const reviewer = req.task_id.split(':').pop();
      const text = JSON.stringify(req.inputs);
      for (const a of authors) expect(text).not.toContain(a);
      expect(text).not.toContain('author_member_id');
      expect(text).not.toContain('candidate_id"');
      const shown = (req.inputs['candidates'] as { candidate_ref: string }[]).map((c) => c.candidate_ref);
      const own = run(d).lineages[`cand-${reviewer}-ggc-001-v1`].letter;
      expect(shown.some((ref) => ref.startsWith(`anon-${own}-`))).toBe(false);
    }
  });
  it('given a run, then the label mapping is kept in the RunRecord audit surface (11.2)', () => {
    const d = drive(startCommand(), defaultBehaviour());
    const rec = buildRunRecord(run(d));
    expect(rec.anonymization.restricted).toBe(true);
    expect(rec.anonymization.mapping.map((m) => m.author_member_id).sort()).toEqual([
      'member-builder-01',
      'member-operator-01',
      'member-skeptic-01',
    ]);
  });
  it('given a reviewer, when it reviews its own candidate, then SELF_REVIEW', () => {
    const silentBuilder: Behaviour = (req, id, st) =>
      id === 'member-builder-01' && req.stage === 'review' ? { kind: 'silent' } : defaultBehaviour()(req, id, st);
    const d = drive(startCommand(), silentBuilder, { stopWhen: (x) => x.requests.some((r) => r.stage === 'review') });
    const st = run(d);
    const ownLetter = st.lineages['cand-member-builder-01-ggc-001-v1'].letter;
    const req = d.requests.find((r) => r.task_id.endsWith('review:member-builder-01')) as CouncilTaskRequest;
    const self = { ...reviewsFor(req, 'member-builder-01')[0], target_candidate_id: `anon-${ownLetter}-v1` };
    expect(() =>
      decide({ type: C.SubmitTaskResult, task_id: req.task_id, member_id: 'member-builder-01', artifact: [self], now: d.now }, d.state),
    ).toThrow(expect.objectContaining({ code: 'SELF_REVIEW', field: 'reviews[0].target_candidate_id' }));
  });
  it('given a string naming members, when scrubbed, then every member id is replaced', () => {
    expect(scrubMemberIds({ a: ['by m-1 and m-10'] }, ['m-1', 'm-10'])).toEqual({ a: ['by [member] and [member]'] });
  });
});

describe('spec 12 targeted revision (checklist 6)', () => {
  it('given issues, when classified, then only decision-relevant ones are selected; style never justifies a round', () => {
    expect(isDecisionRelevantIssue(highIssue() as never)).toBe(true);
    expect(isDecisionRelevantIssue(styleIssue() as never)).toBe(false);
    expect(isDecisionRelevantIssue({ claim: 'x', evidence_refs: [], severity: 'medium', revision_request: 'y' })).toBe(false);
    expect(
      isDecisionRelevantIssue({ claim: 'x', evidence_refs: [], severity: 'medium', revision_request: 'y', could_change: ['confidence'] }),
    ).toBe(true);
  });
  it('given only low-impact style issues, when the round is evaluated, then no revision round is started', () => {
    const d = drive(startCommand(), defaultBehaviour({ issues: () => [styleIssue()] }));
    expect(ofType(d, E.RevisionRequested)).toHaveLength(0);
    expect(rounds(d)[0].stop_reason).toBe('all-material-issues-resolved-or-retained');
  });
  it('given two reviewers each raising a material issue and a style issue on one candidate, when revision is requested, then only its author is asked, with the two material issues and no style issue, and the revision points to its parent', () => {
    const d = drive(
      startCommand(),
      defaultBehaviour({ issues: (ref, round) => (round === 1 && ref === 'anon-A-v1' ? [highIssue(), styleIssue()] : []) }),
    );
    const req = ofType(d, E.RevisionRequested)[0].data.requests;
    const lineageA = Object.values(run(d).lineages).find((l) => l.letter === 'A');
    expect(req.map((r) => r.author_member_id)).toEqual([lineageA?.author_member_id]);
    expect(req[0].issues).toHaveLength(2);
    expect(req[0].issues.every((i) => i.severity === 'high' && i.target_candidate_id === lineageA?.versions[0])).toBe(true);
    expect(new Set(req[0].issues.map((i) => i.review_id)).size).toBe(2);
    const rev = ofType(d, E.RevisionSubmitted)[0].data.revision;
    expect(rev.parent_candidate_id).toBe(lineageA?.versions[0]);
    expect(rev.responses[0].review_issue).toMatch(/^rev-.*#issue-1$/);
  });
  const refusedRevision = (mutate: (rev: Record<string, unknown>) => Record<string, unknown>) => {
    const silentReviser: Behaviour = (req, id, st) =>
      req.stage === 'revision' ? { kind: 'silent' } : defaultBehaviour(oneIssueRound1)(req, id, st);
    const d = drive(startCommand(), silentReviser, { stopWhen: (x) => x.requests.some((r) => r.stage === 'revision') });
    const req = d.requests.find((r) => r.stage === 'revision') as CouncilTaskRequest;
    const memberId = req.task_id.split(':').pop() as string;
    return () =>
      decide(
        { type: C.SubmitTaskResult, task_id: req.task_id, member_id: memberId, artifact: mutate(revisionFor(req)), now: d.now },
        d.state,
      );
  };
  it('given a revision that leaves a selected issue unanswered, when submitted, then UNANSWERED_ISSUE', () => {
    expect(refusedRevision((r) => ({ ...r, responses: [] }))).toThrow(
      expect.objectContaining({ code: 'UNANSWERED_ISSUE', field: 'responses' }),
    );
  });
  it('given a revision pointing at the wrong parent, when submitted, then LINEAGE_MISMATCH', () => {
    expect(refusedRevision((r) => ({ ...r, parent_candidate_id: 'cand-someone-else' }))).toThrow(
      expect.objectContaining({ code: 'LINEAGE_MISMATCH', field: 'parent_candidate_id' }),
    );
  });
  it('given a rejection without a reason, when submitted, then SCHEMA_VIOLATION on the reason', () => {
    expect(
      refusedRevision((r) => ({ ...r, responses: (r['responses'] as object[]).map((x) => ({ ...x, disposition: 'rejected' })) })),
    ).toThrow(expect.objectContaining({ code: 'SCHEMA_VIOLATION', field: 'responses[0].reason' }));
  });
  it('given an issue rejected with reason, when the same objection returns without new evidence, then it is retained as dissent, not re-asked (17.3)', () => {
    const reject: Behaviour = (req, id, st) =>
      req.stage === 'revision'
        ? {
            kind: 'reply',
            artifact: {
              ...revisionFor(req),
              responses: (req.inputs['selected_issues'] as { issue_id: string }[]).map((i) => ({
                review_issue: i.issue_id,
                disposition: 'rejected',
                reason: 'load test ev-load-test shows no drift',
              })),
            },
          }
        : defaultBehaviour({ issues: () => [highIssue()] })(req, id, st);
    const d = drive(startCommand(), reject);
    expect(ofType(d, E.RevisionRequested)).toHaveLength(1);
    expect(rounds(d)[1].stop_reason).toBe('all-material-issues-resolved-or-retained');
  });
});

describe('spec 13 frame challenge: Inside-Outsider (checklist 8)', () => {
  const challenge = (id: string) => ({
    frame_check_id: 'fc-1',
    observer_member_id: id,
    result: 'frame-challenge',
    assumed_frame: 'billing is an engineering question',
    excluded: { kind: 'stakeholder', description: 'finance auditors' },
    evidence_refs: ['ev-incident-2026-07'],
    reversal_signal: 'auditors accept the ledger',
    re_entry_action: 'add auditor sign-off to success criteria',
  });
  const start = () => startCommand({ panel: panel({ frameObserver: true }) });
  const challenged = (extra = {}) => defaultBehaviour({ frame: (_req, id) => challenge(id), ...extra });

  it('given a frame observer, when it returns frame-holds, then the run proceeds with no restart', () => {
    const d = drive(start(), defaultBehaviour());
    expect(ofType(d, E.FrameCheckRecorded)[0].data.frame_check.result).toBe('frame-holds');
    expect(ofType(d, E.GoalContractRevised)).toHaveLength(0);
    expect(d.requests.filter((r) => r.stage === 'proposal')).toHaveLength(3);
    expect(terminal(d)?.terminal_state).toBe('decided');
  });
  it('given an accepted challenge that changes the question, when the owner revises the GoalContract, then the proposal stage restarts from the revised contract', () => {
    const d = drive(start(), challenged(), { stopWhen: (x) => x.state.status === 'running' && x.state.stage === 'frame-decision' });
    const revised = goalContract({ goal_contract_id: 'gc-002', success_criteria: ['no billing downtime', 'auditor sign-off'] });
    const ev = decide(
      { type: C.ReviseGoalContract, goal_contract: revised, frame_check_id: 'fc-1', actor: 'human-owner', now: d.now },
      d.state,
    );
    expect(ev[0].type === E.GoalContractRevised && ev[0].data).toMatchObject({ comparable: false, restart: true, frame_check_id: 'fc-1' });
    const after = drive(start(), defaultBehaviour(), { from: { ...d, state: foldRun(ev, d.state), events: [...d.events, ...ev] } });
    const proposals = after.requests.filter((r) => r.stage === 'proposal');
    expect(proposals.map((p) => p.goal_contract.goal_contract_id)).toEqual(['gc-001', 'gc-001', 'gc-001', 'gc-002', 'gc-002', 'gc-002']);
    expect(
      proposals.slice(3).every((p) => JSON.stringify(p.inputs).includes('auditor sign-off') && !JSON.stringify(p.inputs).includes('cand-')),
    ).toBe(true);
    expect(terminal(after)?.terminal_state).toBe('decided');
    expect(run(after).decision?.decision_record.goal_contract_id).toBe('gc-002');
    // Labels stay stable per run: the new frame's candidates take new letters.
    expect(run(after).anonymization.map((a) => a.letter)).toEqual(['A', 'B', 'C', 'D', 'E', 'F']);
  });
  it('given a revision that only refines constraints, when judged, then artifacts remain comparable and nothing restarts', () => {
    expect(artifactsRemainComparable(goalContract(), goalContract({ goal_contract_id: 'gc-002', constraints: ['team of five'] }))).toBe(
      true,
    );
  });
  it('given a challenge nobody accepts, when the frame-decision stage times out, then the run goes on and the decision must retain the challenge as dissent', () => {
    const noDissent = challenged({ decision: (req: CouncilTaskRequest) => decisionFor(req, { unresolved_dissent: [] }) });
    const dropped = drive(start(), noDissent);
    expect(dropped.refusals.map((r) => r.error.code)).toContain('DISSENT_DROPPED');
    const kept = drive(start(), challenged());
    expect(terminal(kept)?.terminal_state).toBe('decided-with-dissent');
    expect(JSON.stringify(run(kept).decision?.decision_record.unresolved_dissent)).toContain('fc-1');
  });
  it('given a challenge, when the owner declines it with a reason, then the run proceeds to evaluation', () => {
    const d = drive(start(), challenged(), { stopWhen: (x) => x.state.status === 'running' && x.state.stage === 'frame-decision' });
    const ev = decide(
      {
        type: C.DeclineFrameChallenge,
        frame_check_id: 'fc-1',
        reason: 'auditors are out of scope this quarter',
        actor: 'human-owner',
        now: d.now,
      },
      d.state,
    );
    expect(foldRun(ev, d.state)).toMatchObject({ stage: 'evaluate' });
  });
});

describe('spec 14 chair and synthesis', () => {
  it.each([
    ['select', (req: CouncilTaskRequest) => decisionFor(req)],
    [
      'bounded-synthesis',
      (req: CouncilTaskRequest) =>
        decisionFor(req, {
          selected_path: 'synthesis',
          chair_mode: 'bounded-synthesis',
          incorporated: (req.inputs['candidates'] as { candidate_ref: string }[]).map((c) => c.candidate_ref),
        }),
    ],
    [
      'grounded-reframing',
      (req: CouncilTaskRequest) =>
        decisionFor(req, {
          selected_path: 'synthesis',
          chair_mode: 'grounded-reframing',
          grounded_in: ['ev-load-test', 'conflict-1-01'],
          speculation: [{ claim: 'a staged rollout may be cheaper', label: 'speculation' }],
        }),
    ],
  ])(
    'given the chair mode %s, when the chair decides with grounded references, then the decision is recorded with real artifact ids',
    (mode, decisionFn) => {
      const d = drive(startCommand(), defaultBehaviour({ decision: decisionFn }));
      expect(d.refusals).toEqual([]);
      const rec = run(d).decision?.decision_record;
      expect(rec?.chair_mode).toBe(mode);
      for (const ref of [...(rec?.grounded_in ?? []), ...(rec?.incorporated ?? [])]) expect(ref).not.toMatch(/^anon-/);
    },
  );
  it.each([
    ['grounded_in[1]', { grounded_in: ['anon-A-v1', 'a-new-fact-from-nowhere'] }],
    ['incorporated[0]', { incorporated: ['unknown-artifact'] }],
    ['selected_path', { selected_path: 'cand-invented' }],
    ['decision', { selected_path: 'synthesis', chair_mode: 'grounded-reframing', grounded_in: [] }],
  ])('given a decision claim that references no artifact of the run (%s), when recorded, then UNREFERENCED_CLAIM', (field, patch) => {
    const d = drive(startCommand(), defaultBehaviour({ decision: (req) => decisionFor(req, patch) }));
    expect(d.refusals[0]?.error).toMatchObject({ code: 'UNREFERENCED_CLAIM', field });
  });
  it('given the chair fails, when an authorised fallback exists, then the fallback decides and the failure is in the DecisionRecord (18)', () => {
    const d = drive(startCommand({ panel: panel({ fallbackChair: true }) }), (req, id, st) =>
      id === 'member-chair-01' && req.stage === 'synthesis' ? { kind: 'fail' } : defaultBehaviour()(req, id, st),
    );
    expect(run(d).decision?.chair_member_id).toBe('member-chair-02');
    expect(run(d).decision?.decision_record.member_failures).toEqual([
      { member_id: 'member-chair-01', role: 'chair', stage: 'synthesis', round: 1, reason: 'reported-failure' },
    ]);
    expect(buildRunRecord(run(d)).degraded_modes.join(' ')).toContain('chair fallback used');
  });
  it('given the chair fails with no fallback, when the controller steps, then it returns the artifacts without a false synthesis (failed-below-quorum, chair-failed-without-fallback)', () => {
    const d = drive(startCommand(), (req, id, st) => (req.stage === 'synthesis' ? { kind: 'silent' } : defaultBehaviour()(req, id, st)));
    expect(terminal(d)).toMatchObject({ terminal_state: 'failed-below-quorum', reason: 'chair-failed-without-fallback' });
    expect(run(d).decision).toBeNull();
    expect(buildRunRecord(run(d)).artifacts.candidates).toHaveLength(3);
  });
});

describe('spec 17.1 hard limits need no member consent (checklist 10)', () => {
  it('given max_rounds 2 and reviewers that always find a new issue, when driven, then the run stops after round 2: budget-exhausted-best-checkpoint', () => {
    let n = 0;
    const d = drive(
      startCommand({ goal: goalContract({ budget: { max_rounds: 2, max_time: '15m' } }) }),
      defaultBehaviour({ issues: () => [highIssue(`new objection ${n++}`)], score: (_r, round) => 2 + round }),
    );
    expect(run(d).round).toBe(2);
    expect(rounds(d).map((r) => r.decision)).toEqual(['revise', 'synthesize']);
    expect(rounds(d)[1].stop_reason).toBe('max-rounds');
    expect(terminal(d)?.terminal_state).toBe('budget-exhausted-best-checkpoint');
  });
  it('given max_time elapses mid-run, when decideNext runs, then it terminates budget-exhausted-best-checkpoint (max-time) without asking anyone', () => {
    const d = drive(startCommand(), (req, id, st) => (req.stage === 'review' ? { kind: 'silent' } : defaultBehaviour()(req, id, st)), {
      stopWhen: (x) => x.requests.some((r) => r.stage === 'review'),
    });
    const actions = decideNext(d.state, at(15 * 60_000));
    expect(actions.map((a) => a.kind)).toEqual(['Terminate']);
    expect(actions[0].event).toMatchObject({
      type: E.RunTerminated,
      data: { terminal_state: 'budget-exhausted-best-checkpoint', reason: 'max-time' },
    });
  });
  it.each([
    ['max-cost', { max_cost: 5 }, { cost: 2 }],
    ['max-tokens', { max_tokens: 1000 }, { tokens: 400 }],
  ])('given usage reaching the %s budget, when decideNext runs, then it terminates', (reason, budget, usage) => {
    const d = drive(
      startCommand({ goal: goalContract({ budget: { max_rounds: 3, max_time: '15m', ...budget } }) }),
      defaultBehaviour({ usage }),
    );
    expect(terminal(d)).toMatchObject({ terminal_state: 'budget-exhausted-best-checkpoint', reason });
  });
  it('given a human interrupt, when decided, then the run terminates at once with the best checkpoint and the reason', () => {
    const d = drive(startCommand(), defaultBehaviour(oneIssueRound1), { stopWhen: (x) => x.requests.some((r) => r.stage === 'revision') });
    const ev = decide({ type: C.InterruptRun, reason: 'owner stopped the run', actor: 'human-owner', now: d.now }, d.state);
    const s = foldRun(ev, d.state);
    expect(s.status === 'terminated' && s.terminal).toMatchObject({
      reason: 'human-interrupt',
      best_checkpoint_id: 'run-1:checkpoint:1',
      note: 'owner stopped the run',
    });
    expect(decideNext(s, d.now)).toEqual([]);
  });
  it('given a member silent past its per-stage deadline, when decideNext runs, then a timeout failure is recorded and the stage closes without it', () => {
    const d = drive(startCommand(), (req, id, st) =>
      id === 'member-operator-01' && req.stage === 'proposal' ? { kind: 'silent' } : defaultBehaviour()(req, id, st),
    );
    const failed = ofType(d, E.MemberFailed)[0].data;
    expect(failed).toMatchObject({ member_id: 'member-operator-01', stage: 'proposal', reason: 'timeout' });
    expect(ofType(d, E.ProposalStageClosed)[0].data.candidate_ids).toHaveLength(2);
    expect(ofType(d, E.MemberFailed)[0].occurred_at).toBe(at(120_000));
  });
  it('given a late reply after the deadline, when decided, then INVALID_STATE (outcome is a function of events, not timing)', () => {
    const d = drive(startCommand(), (req) => (req.stage === 'proposal' ? { kind: 'silent' } : { kind: 'silent' }), {
      stopWhen: (x) => x.requests.length === 3,
    });
    expect(() =>
      decide(
        {
          type: C.SubmitTaskResult,
          task_id: 'run-1:1:proposal:member-builder-01',
          member_id: 'member-builder-01',
          artifact: candidateArtifact('member-builder-01'),
          now: at(200_000),
        },
        d.state,
      ),
    ).toThrow(expect.objectContaining({ code: 'INVALID_STATE' }));
  });
});

describe('spec 17.2 quality signals', () => {
  it('given all material issues resolved after one revision, when evaluated, then the run stops early (all-material-issues-resolved-or-retained)', () => {
    const d = drive(startCommand(), defaultBehaviour({ ...oneIssueRound1, score: (_r, round) => 2 + round }));
    expect(rounds(d).map((r) => r.stop_reason ?? r.decision)).toEqual(['revise', 'all-material-issues-resolved-or-retained']);
  });
  it('given marginal gain below the threshold for N consecutive rounds, when evaluated, then the run stops (marginal-gain-plateau)', () => {
    let n = 0;
    const d = drive(
      startCommand({
        goal: goalContract({ budget: { max_rounds: 6, max_time: '15m' } }),
        policy: { plateau_rounds: 2, marginal_gain_threshold: 0.1 },
      }),
      defaultBehaviour({ issues: () => [highIssue(`objection ${n++}`)], score: (_r, round) => (round === 1 ? 2 : 3 + round * 0.01) }),
    );
    expect(rounds(d).map((r) => r.stop_reason ?? r.decision)).toEqual(['revise', 'revise', 'revise', 'marginal-gain-plateau']);
  });
  it('given revisions that change no decision-relevant field, when evaluated, then the run stops (candidates-stable)', () => {
    let n = 0;
    const d = drive(
      startCommand(),
      defaultBehaviour({
        issues: () => [highIssue(`objection ${n++}`)],
        score: (_r, round) => round,
        revise: (req) => revisionFor(req, false),
      }),
    );
    expect(rounds(d).map((r) => r.stop_reason ?? r.decision)).toEqual(['revise', 'candidates-stable']);
  });
});

describe('spec 17.3 regression and oscillation (checklist 11)', () => {
  it('given round 2 scores worse than round 1, when evaluated, then the run returns to the best checkpoint, which precedes the last round', () => {
    let n = 0;
    const d = drive(
      startCommand(),
      defaultBehaviour({ issues: () => [highIssue(`objection ${n++}`)], score: (_r, round) => (round === 1 ? 4 : 2) }),
    );
    const last = rounds(d)[1];
    expect(last.stop_reason).toBe('regression-to-best-checkpoint');
    expect(last.best_checkpoint_id).toBe('run-1:checkpoint:1');
    expect(last.basis_candidate_ids.every((id) => id.endsWith('-v1'))).toBe(true);
    const synthesis = d.requests.find((r) => r.stage === 'synthesis') as CouncilTaskRequest;
    expect((synthesis.inputs['candidates'] as { version: number }[]).every((c) => c.version === 1)).toBe(true);
    expect(terminal(d)?.best_checkpoint_id).toBe('run-1:checkpoint:1');
    expect(buildRunRecord(run(d)).best_checkpoint_id).toBe('run-1:checkpoint:1');
  });
  it('given a lineage that goes A→B→A, when evaluated, then oscillation stops the run and both positions and the discriminating evidence are exposed', () => {
    let n = 0;
    const positions = ['Position B: big-bang cutover', 'Position A: two phases'];
    const d = drive(
      startCommand({ goal: goalContract({ budget: { max_rounds: 5, max_time: '15m' } }) }),
      defaultBehaviour({
        issues: () => [highIssue(`objection ${n++}`)],
        score: (_r, round) => round,
        revise: (req) =>
          revisionFor(
            req,
            true,
            positions[(Number(req.inputs['candidate'] && (req.inputs['candidate'] as { version: number }).version) + 1) % 2],
          ),
        conflicts: (req, round) => conflictMapFor(req, round),
      }),
    );
    const osc = rounds(d)
      .flatMap((r) => r.signals)
      .find((s) => s.signal === 'oscillation');
    expect(rounds(d).at(-1)?.stop_reason).toBe('oscillation');
    expect(osc && osc.signal === 'oscillation' && osc.positions).toHaveLength(2);
    expect(osc && osc.signal === 'oscillation' && osc.discriminating_evidence).toContain('a replay of last month of traffic');
  });
});

describe('spec 17.4 terminal states', () => {
  it('given a clean decision, then decided', () => {
    expect(terminal(drive(startCommand(), defaultBehaviour()))?.terminal_state).toBe('decided');
  });
  it('given retained dissent, then decided-with-dissent', () => {
    const d = drive(
      startCommand(),
      defaultBehaviour({ decision: (req) => decisionFor(req, { unresolved_dissent: ['conflict-1-01 remains open'] }) }),
    );
    expect(terminal(d)?.terminal_state).toBe('decided-with-dissent');
  });
  it('given the chair abstains for lack of evidence, then abstained-insufficient-evidence', () => {
    const d = drive(
      startCommand(),
      defaultBehaviour({
        decision: (req) =>
          decisionFor(req, {
            selected_path: 'no-decision',
            chair_mode: undefined,
            actions: [],
            decision: 'Insufficient evidence: run the load replay first',
          }),
      }),
    );
    expect(terminal(d)?.terminal_state).toBe('abstained-insufficient-evidence');
  });
  it('given an unresolved value conflict, then needs-human-value-choice, whatever the chair wrote (8.5)', () => {
    const value = {
      conflict_id: 'conflict-v',
      type: 'value',
      positions: ['anon-A-v1'],
      description: 'speed vs auditability',
      value_owner: 'human-owner',
      decision_impact: 'high',
      status: 'unresolved',
    };
    const d = drive(
      startCommand(),
      defaultBehaviour({ ...oneIssueRound1, conflicts: (req, round) => conflictMapFor(req, round, [value]) }),
    );
    expect(ofType(d, E.RevisionRequested)).toHaveLength(0);
    expect(rounds(d)[0].stop_reason).toBe('value-choice-required');
    expect(terminal(d)?.terminal_state).toBe('needs-human-value-choice');
  });
  it('given the round budget is spent with issues open, then budget-exhausted-best-checkpoint', () => {
    const d = drive(
      startCommand({ goal: goalContract({ budget: { max_rounds: 1, max_time: '15m' } }) }),
      defaultBehaviour({ issues: () => [highIssue()] }),
    );
    expect(terminal(d)?.terminal_state).toBe('budget-exhausted-best-checkpoint');
  });
  it('given all proposers fail, then failed-below-quorum', () => {
    const d = drive(startCommand(), (req, id, st) => (req.stage === 'proposal' ? { kind: 'fail' } : defaultBehaviour()(req, id, st)));
    expect(terminal(d)).toMatchObject({ terminal_state: 'failed-below-quorum', reason: 'below-quorum' });
  });
});

describe('spec 18 failure and degraded operation (checklist 14)', () => {
  const skepticFails: Behaviour = (req, id, st) =>
    id === 'member-skeptic-01' && req.stage === 'review' ? { kind: 'fail' } : defaultBehaviour()(req, id, st);
  it('given one role fails and quorum holds, when driven, then the run continues and the missing perspective is labelled in the DecisionRecord', () => {
    const d = drive(startCommand(), skepticFails);
    expect(terminal(d)?.terminal_state).toBe('decided');
    const rec = run(d).decision?.decision_record;
    expect(rec?.missing_perspectives).toEqual(['skeptic (member-skeptic-01)']);
    expect(rec?.member_failures?.[0]).toMatchObject({ member_id: 'member-skeptic-01', stage: 'review', reason: 'reported-failure' });
    expect(buildRunRecord(run(d)).failures).toHaveLength(1);
  });
  it('given one role fails on a high-risk question, when driven, then the run stops rather than synthesise from an incomplete panel', () => {
    const d = drive(startCommand({ goal: goalContract({ risk_level: 'high' }) }), skepticFails);
    expect(terminal(d)).toMatchObject({ terminal_state: 'failed-below-quorum', reason: 'incomplete-panel-high-risk' });
  });
  it('given two of three proposers fail (quorum 2), when driven, then failed-below-quorum', () => {
    const d = drive(startCommand(), (req, id, st) =>
      id !== 'member-builder-01' && req.stage === 'proposal' ? { kind: 'fail' } : defaultBehaviour()(req, id, st),
    );
    expect(terminal(d)?.terminal_state).toBe('failed-below-quorum');
  });
  it('given every member is silent, when driven, then the run stops and reports failure (all fail)', () => {
    const d = drive(startCommand(), () => ({ kind: 'silent' }));
    expect(terminal(d)?.terminal_state).toBe('failed-below-quorum');
    expect(run(d).failures.map((f) => f.reason)).toEqual(['timeout', 'timeout', 'timeout']);
  });
  it('given a member descriptor with a lens and roles, then a run started with a single-model panel records the shared independence group (19.2)', () => {
    const d = drive(
      startCommand({ panel: [member('a'), member('b'), member('c'), member('chair-1', 'chair', ['chair'])] }),
      defaultBehaviour(),
    );
    expect(run(d).diversity_profile?.correlated).toBe(true);
    expect(d.refusals).toEqual([]);
    expect(terminal(d)?.terminal_state).toBe('decided');
  });
});

describe('spec 12 consensus is not external evidence (checklist 12)', () => {
  it('given every reviewer agrees, when the chair cites only the agreement, then grounding requires artifacts, and outcomes are a separate record', () => {
    const d = drive(startCommand(), defaultBehaviour({ decision: (req) => decisionFor(req, { grounded_in: ['consensus-of-reviewers'] }) }));
    expect(d.refusals[0]?.error.code).toBe('UNREFERENCED_CLAIM');
    const done = drive(startCommand(), defaultBehaviour());
    const ev = decide(
      {
        type: C.RecordOutcome,
        outcome: {
          outcome_id: 'o-1',
          observed_at: at(86_400_000),
          summary: 'migration finished; no downtime',
          source: 'ops-dashboard',
          evidence_refs: [],
        },
        actor: 'human-owner',
        now: at(86_400_000),
      },
      done.state,
    );
    expect(foldRun(ev, done.state)).toMatchObject({ outcomes: [{ outcome_id: 'o-1', source: 'ops-dashboard' }] });
  });
});
