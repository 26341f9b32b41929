import fc from 'fast-check';
import { COUNCIL_COMMAND_TYPES as C, COUNCIL_EVENT_TYPES as E } from './contracts';
import { CouncilTaskRequest } from './controller';
import { decide, MAX_REFUSALS_PER_TASK } from './decide';
import { CouncilEvent, RoundClosed } from './events';
import { buildRunRecord, runReaderRole, runRecordFor } from './run-record';
import { validateAnswerMessage } from './member-answers';
import { foldRun, StartedRun } from './state';
import {
  Behaviour,
  Driven,
  candidateArtifact,
  decisionFor,
  defaultBehaviour,
  drive,
  goalContract,
  highIssue,
  panel,
  reviewsFor,
  startCommand,
} from '../testing/council-fixtures';

/*
 * Rules where a run used to end in a clean-looking record that was wrong: each test drives the
 * pure controller with the in-memory loop and checks the record the run ends with.
 */

const terminal = (d: Driven) => (d.state.status === 'terminated' ? d.state.terminal : undefined);
const run = (d: Driven) => d.state as StartedRun;
const ofType = <T extends CouncilEvent['type']>(d: Driven, t: T) =>
  d.events.filter((e): e is Extract<CouncilEvent, { type: T }> => e.type === t);
const rounds = (d: Driven) => ofType(d, E.RoundClosed).map((e) => (e as RoundClosed).data);
const letterOf = (st: StartedRun, author: string) => Object.values(st.lineages).find((l) => l.author_member_id === author)?.letter;

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

describe('spec 13 an accepted frame challenge with no round left to restart', () => {
  const start = () =>
    startCommand({ panel: panel({ frameObserver: true }), goal: goalContract({ budget: { max_rounds: 1, max_time: '15m' } }) });
  const atFrameDecision = () =>
    drive(start(), defaultBehaviour({ frame: (_r, id) => challenge(id) }), {
      stopWhen: (x) => x.state.status === 'running' && x.state.stage === 'frame-decision',
    });
  const accept = (d: Driven) => {
    const revised = goalContract({
      goal_contract_id: 'gc-002',
      success_criteria: ['no billing downtime', 'auditor sign-off'],
      budget: { max_rounds: 1, max_time: '15m' },
    });
    const ev = decide(
      { type: C.ReviseGoalContract, goal_contract: revised, frame_check_id: 'fc-1', actor: 'human-owner', now: d.now },
      d.state,
    );
    return { ...d, state: foldRun(ev, d.state), events: [...d.events, ...ev] };
  };

  it('given the revised contract is not comparable and no round is left, when the chair omits the challenge from dissent, then DISSENT_DROPPED', () => {
    const d = drive(start(), defaultBehaviour({ decision: (req) => decisionFor(req, { unresolved_dissent: [] }) }), {
      from: accept(atFrameDecision()),
    });
    expect(d.refusals.map((r) => r.error.code)).toContain('DISSENT_DROPPED');
    expect(terminal(d)?.terminal_state).not.toBe('decided');
  });

  it('given the same run, when the chair retains the challenge, then decided-with-dissent naming fc-1', () => {
    const d = drive(start(), defaultBehaviour(), { from: accept(atFrameDecision()) });
    expect(run(d).goal_contract_revisions.at(-1)).toMatchObject({ comparable: false, restarted: false });
    expect(terminal(d)?.terminal_state).toBe('decided-with-dissent');
    expect(JSON.stringify(run(d).decision?.decision_record.unresolved_dissent)).toContain('fc-1');
  });
});

describe('spec 17.3 consensus produced by participant failure', () => {
  /** Reviewers object to the skeptic's candidate only (round 1); the skeptic fails its review task. */
  const skepticFailsWithIssuesOnIt =
    (decision?: (req: CouncilTaskRequest) => Record<string, unknown>): Behaviour =>
    (req, id, st) => {
      if (id === 'member-skeptic-01' && req.stage === 'review') return { kind: 'fail' };
      const letter = letterOf(st as StartedRun, 'member-skeptic-01');
      return defaultBehaviour({
        issues: (ref, round) => (round === 1 && ref === `anon-${letter}-v1` ? [highIssue()] : []),
        ...(decision ? { decision } : {}),
      })(req, id, st);
    };

  it("given the only open issues are on a failed author's candidate, when the round is evaluated, then the stop reason says participant failure, not resolved", () => {
    const d = drive(startCommand(), skepticFailsWithIssuesOnIt());
    const r1 = rounds(d)[0];
    expect(r1.stop_reason).toBe('participant-failure');
    expect(r1.signals).toContainEqual(
      expect.objectContaining({ signal: 'consensus-by-participant-failure', member_ids: ['member-skeptic-01'] }),
    );
    expect(r1.signals.map((s) => s.signal)).not.toContain('all-material-issues-resolved-or-retained');
    expect(r1.open_issue_ids).toHaveLength(2);
  });

  it('given that run, when the chair drops the orphaned issues, then DISSENT_DROPPED; when it keeps them, then decided-with-dissent', () => {
    const dropped = drive(
      startCommand(),
      skepticFailsWithIssuesOnIt((req) => decisionFor(req, { unresolved_dissent: [] })),
    );
    expect(dropped.refusals.map((r) => r.error.code)).toContain('DISSENT_DROPPED');
    const kept = drive(startCommand(), skepticFailsWithIssuesOnIt());
    expect(kept.refusals).toEqual([]);
    expect(terminal(kept)?.terminal_state).toBe('decided-with-dissent');
    const synthesis = kept.requests.find((r) => r.stage === 'synthesis') as CouncilTaskRequest;
    // The chair sees the orphaned issues by blind refs only.
    expect(synthesis.inputs['required_dissent']).toEqual([
      expect.stringMatching(/^review-\d+#issue-1$/),
      expect.stringMatching(/^review-\d+#issue-1$/),
    ]);
  });
});

describe('spec 7.1 the chair cannot re-scope the run on its own say-so', () => {
  const atFrameDecision = () =>
    drive(startCommand({ panel: panel({ frameObserver: true }) }), defaultBehaviour({ frame: (_r, id) => challenge(id) }), {
      stopWhen: (x) => x.state.status === 'running' && x.state.stage === 'frame-decision',
    });
  const revise = (d: Driven, actor: string, overrides: Record<string, unknown>, frameCheckId?: string) => () =>
    decide(
      {
        type: C.ReviseGoalContract,
        goal_contract: goalContract({ goal_contract_id: 'gc-002', ...overrides }),
        ...(frameCheckId ? { frame_check_id: frameCheckId } : {}),
        actor,
        now: d.now,
      },
      d.state,
    );

  it('given no frame challenge is accepted, when the chair changes the question, then NOT_AUTHORIZED_ROLE', () => {
    const d = drive(startCommand(), defaultBehaviour(), { stopWhen: (x) => x.requests.some((r) => r.stage === 'review') });
    expect(revise(d, 'member-chair-01', { question: 'Should we rewrite billing?' })).toThrow(
      expect.objectContaining({ code: 'NOT_AUTHORIZED_ROLE', field: 'frame_check_id' }),
    );
  });

  it('given an open challenge, when the chair accepts it with a contract that forces a restart, then NOT_AUTHORIZED_ROLE (only the owner spends rounds)', () => {
    const d = atFrameDecision();
    expect(revise(d, 'member-chair-01', { success_criteria: ['auditor sign-off'] }, 'fc-1')).toThrow(
      expect.objectContaining({ code: 'NOT_AUTHORIZED_ROLE', field: 'goal_contract' }),
    );
  });

  it('given an open challenge, when the chair accepts it with a comparable refinement, or the owner revises anything, then it is recorded', () => {
    const d = atFrameDecision();
    expect(revise(d, 'member-chair-01', { constraints: ['team of four', 'auditor review'] }, 'fc-1')()[0]).toMatchObject({
      type: E.GoalContractRevised,
      data: { comparable: true, restart: false },
    });
    expect(revise(d, 'human-owner', { question: 'Should we rewrite billing?' })()[0]).toMatchObject({
      type: E.GoalContractRevised,
      data: { restart: true },
    });
  });
});

describe('a GoalContract revision keeps what the run was authorised for: its owner and its domain', () => {
  const midRun = () =>
    drive(startCommand({ goal: goalContract({ domain: 'billing', risk_level: 'high' }) }), defaultBehaviour(), {
      stopWhen: (x) => x.requests.some((r) => r.stage === 'review'),
    });
  const revise = (d: Driven, actor: string, overrides: Record<string, unknown>) => () =>
    decide(
      {
        type: C.ReviseGoalContract,
        goal_contract: goalContract({ goal_contract_id: 'gc-002', domain: 'billing', risk_level: 'high', ...overrides }),
        actor,
        now: d.now,
      },
      d.state,
    );

  it('given a running run, when its owner hands it to another owner (a stranger, or a panel member), then NOT_AUTHORIZED_ROLE at goal_contract.decision_owner: a run cannot be laundered to another owner before it is bridged', () => {
    const d = midRun();
    for (const owner of ['nobody-at-all', 'member-builder-01'])
      expect(revise(d, 'human-owner', { decision_owner: owner })).toThrow(
        expect.objectContaining({ code: 'NOT_AUTHORIZED_ROLE', field: 'goal_contract.decision_owner' }),
      );
  });

  it('given a running run in billing, when its owner moves it to risk, or drops its domain (general), then NOT_AUTHORIZED_ROLE at goal_contract.domain', () => {
    const d = midRun();
    expect(revise(d, 'human-owner', { domain: 'risk' })).toThrow(
      expect.objectContaining({ code: 'NOT_AUTHORIZED_ROLE', field: 'goal_contract.domain' }),
    );
    expect(revise(d, 'human-owner', { domain: undefined })).toThrow(
      expect.objectContaining({ code: 'NOT_AUTHORIZED_ROLE', field: 'goal_contract.domain' }),
    );
    expect(revise(d, 'human-owner', { question: 'Should we rewrite billing?' })()[0]).toMatchObject({ type: E.GoalContractRevised });
  });

  it('given an open frame challenge on a high-risk run, when the chair accepts it with a lower risk level, then NOT_AUTHORIZED_ROLE at goal_contract.risk_level; the owner may lower it', () => {
    const d = drive(
      startCommand({ goal: goalContract({ domain: 'billing', risk_level: 'high' }), panel: panel({ frameObserver: true }) }),
      defaultBehaviour({ frame: (_r, id) => challenge(id) }),
      { stopWhen: (x) => x.state.status === 'running' && x.state.stage === 'frame-decision' },
    );
    const lower = (actor: string) =>
      decide(
        {
          type: C.ReviseGoalContract,
          goal_contract: goalContract({ goal_contract_id: 'gc-002', domain: 'billing', risk_level: 'low' }),
          frame_check_id: 'fc-1',
          actor,
          now: d.now,
        },
        d.state,
      );
    expect(() => lower('member-chair-01')).toThrow(
      expect.objectContaining({ code: 'NOT_AUTHORIZED_ROLE', field: 'goal_contract.risk_level' }),
    );
    expect(lower('human-owner')[0]).toMatchObject({ type: E.GoalContractRevised });
  });

  it('given an open frame challenge on a run in billing, when the chair accepts it with a revision handing the run to another owner (itself, or a stranger), moving it to risk or dropping its domain, then NOT_AUTHORIZED_ROLE at that field; its revision keeping both is recorded, and the run keeps its owner and domain', () => {
    const d = drive(
      startCommand({ goal: goalContract({ domain: 'billing' }), panel: panel({ frameObserver: true }) }),
      defaultBehaviour({ frame: (_r, id) => challenge(id) }),
      { stopWhen: (x) => x.state.status === 'running' && x.state.stage === 'frame-decision' },
    );
    // A comparable refinement, as the chair may make to accept the challenge.
    const accept = (overrides: Record<string, unknown>) => () =>
      decide(
        {
          type: C.ReviseGoalContract,
          goal_contract: goalContract({
            goal_contract_id: 'gc-002',
            domain: 'billing',
            constraints: ['finance auditors sign off'],
            ...overrides,
          }),
          frame_check_id: 'fc-1',
          actor: 'member-chair-01',
          now: d.now,
        },
        d.state,
      );
    for (const owner of ['member-chair-01', 'nobody-at-all'])
      expect(accept({ decision_owner: owner })).toThrow(
        expect.objectContaining({ code: 'NOT_AUTHORIZED_ROLE', field: 'goal_contract.decision_owner' }),
      );
    for (const domain of ['risk', undefined])
      expect(accept({ domain })).toThrow(expect.objectContaining({ code: 'NOT_AUTHORIZED_ROLE', field: 'goal_contract.domain' }));

    const events = accept({})();
    expect(events[0]).toMatchObject({
      type: E.GoalContractRevised,
      data: { revised_by: 'member-chair-01', frame_check_id: 'fc-1', comparable: true },
    });
    const after = foldRun(events, d.state) as StartedRun;
    expect(after.goal_contract).toMatchObject({ goal_contract_id: 'gc-002', decision_owner: 'human-owner', domain: 'billing' });
    expect(after.goal_contract_revisions.map((g) => [g.goal_contract.decision_owner, g.goal_contract.domain])).toEqual([
      ['human-owner', 'billing'],
      ['human-owner', 'billing'],
    ]);
  });
});

describe('spec 17.3 the terminal record names the checkpoint the chair synthesised', () => {
  it("given regression_tolerance 0.5 and a slightly worse last round at max_rounds, when the run ends, then the chair got the best checkpoint's candidates and the record names it", () => {
    let n = 0;
    const d = drive(
      startCommand({ goal: goalContract({ budget: { max_rounds: 2, max_time: '15m' } }), policy: { regression_tolerance: 0.5 } }),
      defaultBehaviour({ issues: () => [highIssue(`objection ${n++}`)], score: (_r, round) => (round === 1 ? 4 : 3.8) }),
    );
    expect(rounds(d)[1].stop_reason).toBe('max-rounds');
    const synthesis = d.requests.find((r) => r.stage === 'synthesis') as CouncilTaskRequest;
    expect((synthesis.inputs['candidates'] as { version: number }[]).map((c) => c.version)).toEqual([1, 1, 1]);
    expect(terminal(d)?.best_checkpoint_id).toBe('run-1:checkpoint:1');
  });

  it("property: whatever the scores and tolerance, a recorded decision's terminal checkpoint holds exactly the candidates the chair was given", () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 8 }), { minLength: 4, maxLength: 4 }),
        fc.constantFrom(0, 0.25, 0.5, 1),
        fc.integer({ min: 1, max: 4 }),
        (scores, tolerance, maxRounds) => {
          let n = 0;
          const d = drive(
            startCommand({
              goal: goalContract({ budget: { max_rounds: maxRounds, max_time: '15m' } }),
              policy: { regression_tolerance: tolerance },
            }),
            defaultBehaviour({ issues: () => [highIssue(`objection ${n++}`)], score: (_r, round) => scores[round - 1] / 2 }),
          );
          const st = run(d);
          const t = terminal(d);
          if (!st.decision || !t) return;
          const cp = st.checkpoints.find((c) => c.checkpoint_id === t.best_checkpoint_id);
          const synthesis = st.tasks[st.decision.task_id];
          const shown = (synthesis.inputs['candidates'] as { candidate_ref: string }[]).map((c) => c.candidate_ref);
          const blind = (id: string) => `anon-${st.lineages[st.candidates[id].lineage_id].letter}-v${st.candidates[id].candidate.version}`;
          expect(cp?.candidate_ids.map(blind).sort()).toEqual([...shown].sort());
        },
      ),
      { numRuns: 40 },
    );
  });
});

describe('spec 18 chair failure on a high-risk run', () => {
  it('given a high-risk run whose chair fails, when an authorised fallback stands, then the fallback decides and the failure is labelled', () => {
    const d = drive(startCommand({ goal: goalContract({ risk_level: 'high' }), panel: panel({ fallbackChair: true }) }), (req, id, st) =>
      id === 'member-chair-01' && req.stage === 'synthesis' ? { kind: 'fail' } : defaultBehaviour()(req, id, st),
    );
    expect(run(d).decision?.chair_member_id).toBe('member-chair-02');
    expect(terminal(d)?.terminal_state).toBe('decided');
    expect(run(d).decision?.decision_record.member_failures).toEqual([
      expect.objectContaining({ member_id: 'member-chair-01', stage: 'synthesis' }),
    ]);
  });

  it('given a high-risk run whose proposer fails, then it still stops rather than synthesise from an incomplete panel', () => {
    const d = drive(startCommand({ goal: goalContract({ risk_level: 'high' }), panel: panel({ fallbackChair: true }) }), (req, id, st) =>
      id === 'member-skeptic-01' && req.stage === 'proposal' ? { kind: 'fail' } : defaultBehaviour()(req, id, st),
    );
    expect(terminal(d)).toMatchObject({ terminal_state: 'failed-below-quorum', reason: 'incomplete-panel-high-risk' });
  });
});

describe('spec 14 the decision text cites only artifacts of the run', () => {
  it.each([
    ['decision', { decision: 'Adopt anon-Z-v1 as is' }],
    ['decision', { decision: 'Candidate Q is the safest' }],
    ['decision', { decision: 'As review-99#issue-1 showed, migrate' }],
    ['actions[0]', { actions: ['apply the fix from anon-A-v7'] }],
    ['stop_loss_conditions[0]', { stop_loss_conditions: ['stop if Candidate Q regresses'] }],
    ['reversal_signals[0]', { reversal_signals: ['review-42#issue-3 comes true'] }],
  ])('given a decision that cites something the run does not hold (%s), when recorded, then UNREFERENCED_CLAIM', (field, patch) => {
    const d = drive(startCommand(), defaultBehaviour({ decision: (req) => decisionFor(req, patch) }));
    expect(d.refusals[0]?.error).toMatchObject({ code: 'UNREFERENCED_CLAIM', field });
  });

  it('given a decision whose text cites blind refs of the run, when recorded, then it is accepted', () => {
    const d = drive(
      startCommand(),
      defaultBehaviour({ decision: (req) => decisionFor(req, { decision: 'Adopt anon-A-v1 (Candidate A); review-1 agrees' }) }),
    );
    expect(d.refusals).toEqual([]);
    expect(terminal(d)?.terminal_state).toBe('decided');
  });
});

describe('spec 8.3 review ranking and blind_spot_candidate are stored as real ids', () => {
  it('given a review ranking blind refs and naming a blind spot candidate, when accepted, then the stored review holds the real candidate ids', () => {
    const d = drive(startCommand(), (req, id, st) => {
      if (req.stage !== 'review') return defaultBehaviour()(req, id, st);
      const refs = (req.inputs['candidates'] as { candidate_ref: string }[]).map((c) => c.candidate_ref);
      return {
        kind: 'reply',
        artifact: reviewsFor(req, id).map((r) => ({ ...r, ranking: [...refs].reverse(), blind_spot_candidate: refs[0] })),
      };
    });
    expect(d.refusals).toEqual([]);
    const st = run(d);
    for (const id of st.review_order) {
      const r = st.reviews[id].review;
      expect(r.ranking?.every((x) => st.candidates[x] !== undefined)).toBe(true);
      expect(st.candidates[r.blind_spot_candidate as string]).toBeDefined();
    }
  });

  it('given a ranking that names a candidate the reviewer was not given, when submitted, then UNKNOWN_REFERENCE at the entry', () => {
    const d = drive(startCommand(), (req, id, st) =>
      req.stage === 'review'
        ? { kind: 'reply', artifact: reviewsFor(req, id).map((r) => ({ ...r, ranking: [r['target_candidate_id'], 'anon-Q-v1'] })) }
        : defaultBehaviour()(req, id, st),
    );
    expect(d.refusals[0]?.error).toMatchObject({ code: 'UNKNOWN_REFERENCE', field: 'reviews[0].ranking[1]' });
  });
});

describe('spec 17.1 budgets count every spend, and tasks say what is left', () => {
  const badCandidate = (id: string) => ({ candidate_id: `cand-${id}`, author_member_id: id, version: 1 });

  it('given a member whose answer is refused, when it reported usage, then the spend counts against the budget and the refusal is in the RunRecord', () => {
    const d = drive(startCommand(), (req, id, st) =>
      id === 'member-operator-01' && req.stage === 'proposal'
        ? { kind: 'reply', artifact: badCandidate(id), usage: { cost: 7, tokens: 700 } }
        : defaultBehaviour()(req, id, st),
    );
    expect(run(d).usage).toEqual({ cost: 7, tokens: 700 });
    const rec = buildRunRecord(run(d));
    expect(rec.refusals).toEqual([
      expect.objectContaining({
        task_id: 'run-1:1:proposal:member-operator-01',
        member_id: 'member-operator-01',
        error: expect.objectContaining({ code: 'SCHEMA_VIOLATION' }),
      }),
    ]);
  });

  it('given a refused artifact never corrected, when the deadline passes, then the timeout failure names the refusal', () => {
    const d = drive(startCommand(), (req, id, st) =>
      id === 'member-operator-01' && req.stage === 'proposal'
        ? { kind: 'reply', artifact: badCandidate(id) }
        : defaultBehaviour()(req, id, st),
    );
    expect(run(d).failures[0]).toMatchObject({
      member_id: 'member-operator-01',
      reason: 'timeout',
      detail: expect.stringMatching(/1 refused answer.*SCHEMA_VIOLATION/),
    });
  });

  describe('refused answers past the cap of 5 per task', () => {
    const task = 'run-1:1:proposal:member-operator-01';
    const refusedError = { code: 'SCHEMA_VIOLATION' as const, message: 'position: must be a non-empty string', field: 'position' };
    const open = () =>
      drive(startCommand(), (req, id, st) => (id === 'member-operator-01' ? { kind: 'silent' } : defaultBehaviour()(req, id, st)), {
        stopWhen: (x) => x.state.status === 'running' && x.state.candidate_order.length === 2,
      });
    const refuse = (d: Driven, usage?: { cost?: number; tokens?: number }) => {
      const events = decide(
        {
          type: C.RecordRefusedAnswer,
          task_id: task,
          member_id: 'member-operator-01',
          error: refusedError,
          usage,
          now: d.now,
        },
        d.state,
      );
      d.state = foldRun(events, d.state);
      d.events.push(...events);
      return events;
    };

    it('given a task with 5 refused answers, when a 6th is refused, then the cap holds: no sixth refusal is recorded', () => {
      expect(MAX_REFUSALS_PER_TASK).toBe(5);
      const d = open();
      for (let i = 0; i < 5; i++) expect(refuse(d, { cost: 1 }).map((e) => e.type)).toEqual([E.TaskAnswerRefused]);
      expect(() => refuse(d)).toThrow(expect.objectContaining({ code: 'INVALID_STATE', field: 'task_id' }));
      refuse(d, { cost: 1 });
      expect(run(d).refusals.filter((r) => r.task_id === task)).toHaveLength(MAX_REFUSALS_PER_TASK);
      expect(buildRunRecord(run(d)).refusals).toHaveLength(MAX_REFUSALS_PER_TASK);
    });

    it('given a task with 5 refused answers, when a 6th, 7th and 8th report usage, then each appends a RefusedAnswerSpendRecorded with the usage and no error text, and every spend counts against the budget', () => {
      const d = open();
      const before = run(d).usage;
      const appended = Array.from({ length: 8 }, () => refuse(d, { cost: 2, tokens: 100 }));
      for (const events of appended.slice(0, MAX_REFUSALS_PER_TASK)) {
        expect(events.map((e) => e.type)).toEqual([E.TaskAnswerRefused]);
        expect(events[0].data).toMatchObject({ error: refusedError });
      }
      appended.slice(MAX_REFUSALS_PER_TASK).forEach((events, i) => {
        expect(events.map((e) => e.type)).toEqual(['RefusedAnswerSpendRecorded']);
        // The spend and where it was made, nothing of the refused answer.
        expect(events[0].data).toEqual({
          task_id: task,
          member_id: 'member-operator-01',
          round: 1,
          stage: 'proposal',
          past_cap: i + 1,
          usage: { cost: 2, tokens: 100 },
        });
        const written = JSON.stringify(events[0]);
        for (const text of [refusedError.code, refusedError.message, '"error"']) expect(written).not.toContain(text);
      });
      expect(run(d).usage).toEqual({ cost: before.cost + 16, tokens: before.tokens + 800 });
      expect(buildRunRecord(run(d)).budgets.usage).toMatchObject({ cost: before.cost + 16, tokens: before.tokens + 800 });
      expect(run(d).refusals.filter((r) => r.task_id === task)).toHaveLength(MAX_REFUSALS_PER_TASK);
    });

    it('given a task past its refusal cap, when refused answers spend the rest of the cost budget, then the run ends max-cost', () => {
      const d = open();
      const left = 100 - run(d).usage.cost;
      for (let i = 0; i < 5; i++) refuse(d);
      for (let i = 0; i < 4; i++) refuse(d, { cost: left / 4 });
      const next = drive(startCommand(), () => ({ kind: 'silent' }), { from: d });
      expect(terminal(next)).toMatchObject({ terminal_state: 'budget-exhausted-best-checkpoint', reason: 'max-cost' });
    });
  });

  it('given an answer that reports a fractional token count, when submitted or refused, then SCHEMA_VIOLATION at usage.tokens and nothing is recorded', () => {
    const d = drive(startCommand(), (req, id, st) => (id === 'member-operator-01' ? { kind: 'silent' } : defaultBehaviour()(req, id, st)), {
      stopWhen: (x) => x.state.status === 'running' && x.state.candidate_order.length === 2,
    });
    const task = 'run-1:1:proposal:member-operator-01';
    const base = { task_id: task, member_id: 'member-operator-01', usage: { cost: 1, tokens: 1.5 }, now: d.now };
    const commands = [
      { ...base, type: C.SubmitTaskResult, artifact: candidateArtifact('member-operator-01') },
      { ...base, type: C.ReportTaskFailure, detail: 'UNAVAILABLE: model down' },
      { ...base, type: C.RecordRefusedAnswer, error: { code: 'SCHEMA_VIOLATION', message: 'position: required' } },
    ] as const;
    for (const command of commands)
      expect(() => decide(command, d.state)).toThrow(expect.objectContaining({ code: 'SCHEMA_VIOLATION', field: 'usage.tokens' }));
    expect(validateAnswerMessage({ run_id: 'run-1', task_id: task, ok: true, artifact: {}, usage: { tokens: 2 } })).toBeDefined();
    expect(() => validateAnswerMessage({ run_id: 'run-1', task_id: task, ok: true, artifact: {}, usage: { tokens: 1.5 } })).toThrow(
      expect.objectContaining({ code: 'SCHEMA_VIOLATION', field: 'usage.tokens' }),
    );
  });

  it('given a member that reports a failure with usage, when recorded, then the spend counts', () => {
    const d = drive(startCommand(), (req, id, st) =>
      id === 'member-operator-01' && req.stage === 'proposal' ? { kind: 'fail', usage: { cost: 3 } } : defaultBehaviour()(req, id, st),
    );
    expect(run(d).usage.cost).toBe(3);
  });

  it('given refused answers that spend the whole cost budget, when the controller steps, then the run ends max-cost', () => {
    const d = drive(startCommand({ goal: goalContract({ budget: { max_rounds: 3, max_time: '15m', max_cost: 10 } }) }), (req, id, st) =>
      req.stage === 'proposal' ? { kind: 'reply', artifact: badCandidate(id), usage: { cost: 4 } } : defaultBehaviour()(req, id, st),
    );
    expect(terminal(d)).toMatchObject({ terminal_state: 'budget-exhausted-best-checkpoint', reason: 'max-cost' });
  });

  it('given a run that has spent part of its budget, when a task is issued, then the request tells the member what is left', () => {
    const d = drive(
      startCommand({ goal: goalContract({ budget: { max_rounds: 3, max_time: '15m', max_cost: 100, max_tokens: 1000 } }) }),
      defaultBehaviour({ usage: { cost: 10, tokens: 100 } }),
    );
    const review = d.requests.find((r) => r.stage === 'review') as CouncilTaskRequest;
    expect(review.budget_remaining).toEqual({ rounds: 3, time_ms: 15 * 60_000, cost: 70, tokens: 700 });
    const proposal = d.requests.find((r) => r.stage === 'proposal') as CouncilTaskRequest;
    expect(proposal.budget_remaining).toEqual({ rounds: 3, time_ms: 15 * 60_000, cost: 100, tokens: 1000 });
    expect(d.requests.length).toBeGreaterThan(0);
    for (const r of d.requests) expect(Object.keys(r.budget_remaining ?? {}).sort()).toEqual(['cost', 'rounds', 'time_ms', 'tokens']);
  });
});

describe('spec 7.1 and 11.2 who may do what to a run', () => {
  const midRun = () =>
    drive(startCommand({ policy: { observers: ['auditor-1'] } }), defaultBehaviour(), {
      stopWhen: (x) => x.requests.some((r) => r.stage === 'review'),
    });

  it('given a GoalContract owned by human-owner, when someone else starts the run, then NOT_AUTHORIZED_ROLE', () => {
    expect(() => decide({ ...startCommand(), actor: 'member-chair-01' } as never, { status: 'empty' })).toThrow(
      expect.objectContaining({ code: 'NOT_AUTHORIZED_ROLE', field: 'goal_contract.decision_owner' }),
    );
  });

  it('given a running run, when a member interrupts it or records an outcome, then NOT_AUTHORIZED_ROLE; the owner may', () => {
    const d = midRun();
    expect(() => decide({ type: C.InterruptRun, reason: 'stop', actor: 'member-chair-01', now: d.now }, d.state)).toThrow(
      expect.objectContaining({ code: 'NOT_AUTHORIZED_ROLE', field: 'actor' }),
    );
    const outcome = { outcome_id: 'o-1', observed_at: d.now, summary: 'x', source: 'y' };
    expect(() => decide({ type: C.RecordOutcome, outcome, actor: 'member-skeptic-01', now: d.now }, d.state)).toThrow(
      expect.objectContaining({ code: 'NOT_AUTHORIZED_ROLE', field: 'actor' }),
    );
    expect(decide({ type: C.RecordOutcome, outcome, actor: 'human-owner', now: d.now }, d.state)).toHaveLength(1);
    const byOwner = foldRun(decide({ type: C.InterruptRun, reason: 'stop', actor: 'human-owner', now: d.now }, d.state), d.state);
    expect(byOwner.status === 'terminated' && byOwner.terminal).toMatchObject({ reason: 'human-interrupt' });
  });

  it("given an ended run, when someone without the role interrupts it, declines its frame challenge or revises its GoalContract, then NOT_AUTHORIZED_ROLE, not the run's state; the owner is told it ended", () => {
    const done = drive(startCommand(), defaultBehaviour());
    expect(done.state.status).toBe('terminated');
    const revised = { ...goalContract(), goal_contract_id: 'gc-2' };
    const commands = (actor: string) => [
      { type: C.InterruptRun, reason: 'stop', actor, now: done.now },
      { type: C.DeclineFrameChallenge, frame_check_id: 'fc-1', reason: 'no', actor, now: done.now },
      { type: C.ReviseGoalContract, goal_contract: revised, actor, now: done.now },
    ];
    for (const stranger of ['mallory', 'member-skeptic-01'])
      for (const command of commands(stranger))
        expect(() => decide(command as never, done.state)).toThrow(
          expect.objectContaining({ code: 'NOT_AUTHORIZED_ROLE', field: 'actor' }),
        );
    for (const command of commands('human-owner'))
      expect(() => decide(command as never, done.state)).toThrow(expect.objectContaining({ code: 'INVALID_STATE' }));
  });

  it('given a running run, when a panel member reads it, then NOT_AUTHORIZED_ROLE; the owner and an observer read it without the mapping', () => {
    const st = run(midRun());
    expect(runReaderRole(st, 'member-skeptic-01')).toBe('member');
    expect(runReaderRole(st, 'stranger')).toBeNull();
    expect(() => runRecordFor(st, 'member')).toThrow(expect.objectContaining({ code: 'NOT_AUTHORIZED_ROLE' }));
    for (const reader of ['owner', 'observer'] as const) {
      const rec = runRecordFor(st, reader);
      expect(rec.anonymization).toEqual({ restricted: true, withheld: true, mapping: [] });
      expect(rec.lineage.every((l) => !('label' in l))).toBe(true);
    }
  });

  it("given an ended run, then only the owner's copy carries the mapping", () => {
    const done = run(drive(startCommand({ policy: { observers: ['auditor-1'] } }), defaultBehaviour()));
    expect(runRecordFor(done, 'owner').anonymization.mapping).toHaveLength(3);
    for (const reader of ['chair', 'member', 'observer'] as const) expect(runRecordFor(done, reader).anonymization.mapping).toEqual([]);
  });
});
