import fc from 'fast-check';
import { COUNCIL_COMMAND_TYPES as C, COUNCIL_EVENT_TYPES as E, TERMINAL_STATES, councilRunStream } from './contracts';
import { controllerEvents, councilTaskId, decideNext, pendingTaskRequests } from './controller';
import { decide } from './decide';
import { CouncilError } from './errors';
import { CouncilEvent } from './events';
import { buildRunRecord } from './run-record';
import { EMPTY_RUN, foldRun } from './state';
import { validateRunRecord } from './single-agent-council';
import {
  Behaviour,
  T0,
  candidateArtifact,
  at,
  defaultBehaviour,
  drive,
  goalContract,
  highIssue,
  panel,
  startCommand,
} from '../testing/council-fixtures';

const types = (events: CouncilEvent[]) => events.map((e) => e.type);

describe('spec 9 protocol lifecycle: the run as a state machine over events', () => {
  it('given a well-behaved panel, when the run is driven, then it walks proposal → review → conflict map → revision → review → synthesis and terminates decided', () => {
    const d = drive(
      startCommand(),
      defaultBehaviour({ issues: (_r, round) => (round === 1 ? [highIssue()] : []), score: (_r, round) => 2 + round }),
    );
    expect(d.refusals).toEqual([]);
    const seq = types(d.events).filter(
      (t) => t !== E.TaskIssued && t !== E.CandidateSubmitted && t !== E.ReviewSubmitted && t !== E.RevisionSubmitted,
    );
    expect(seq).toEqual([
      E.RunStarted,
      E.PanelAssembled,
      E.ProposalStageClosed,
      E.CheckpointRecorded,
      E.StageClosed,
      E.ConflictMapRecorded,
      E.StageClosed,
      E.RoundClosed,
      E.RevisionRequested,
      E.StageClosed,
      E.CheckpointRecorded,
      E.StageClosed,
      E.ConflictMapRecorded,
      E.StageClosed,
      E.RoundClosed,
      E.ChairDecisionRecorded,
      E.RunTerminated,
    ]);
    expect(d.state.status === 'terminated' && d.state.terminal.terminal_state).toBe('decided');
  });

  it('given any event, then it carries the envelope: event_id, type, schema_version, occurred_at, actor, causation_id, correlation_id = run_id, data', () => {
    const d = drive(startCommand(), defaultBehaviour());
    for (const e of d.events) {
      expect(Object.keys(e).sort()).toEqual([
        'actor',
        'causation_id',
        'correlation_id',
        'data',
        'event_id',
        'occurred_at',
        'schema_version',
        'type',
      ]);
      expect(e.correlation_id).toBe('run-1');
    }
    expect(new Set(d.events.map((e) => e.event_id)).size).toBe(d.events.length);
    expect(councilRunStream('run-1')).toBe('council-run-run-1');
  });

  it('given a task, then its id is derived deterministically as run:round:stage:member and it is sent to council.v1.tasks.<member>', () => {
    const started = foldRun(decide(startCommand(), EMPTY_RUN));
    const actions = decideNext(started, T0);
    const issue = actions.find((a) => a.kind === 'IssueTask');
    expect(issue?.kind === 'IssueTask' && issue.subject).toBe('council.v1.tasks.member-builder-01');
    expect(issue?.kind === 'IssueTask' && issue.request).toMatchObject({
      run_id: 'run-1',
      task_id: councilTaskId('run-1', 1, 'proposal', 'member-builder-01'),
      stage: 'proposal',
      role: 'proposer',
      deadline: at(120_000),
    });
  });

  it('given the same state and now, when decideNext runs twice, then the actions and event ids are identical (determinism, DESIGN 2)', () => {
    const started = foldRun(decide(startCommand(), EMPTY_RUN));
    expect(decideNext(started, T0)).toEqual(decideNext(started, T0));
  });

  it('given a run already started, when StartRun is decided again, then RUN_ALREADY_STARTED', () => {
    const started = foldRun(decide(startCommand(), EMPTY_RUN));
    expect(() => decide(startCommand(), started)).toThrow(expect.objectContaining({ code: 'RUN_ALREADY_STARTED' }));
  });

  it('given a redelivered member reply with the same event id, when decided, then nothing new is appended (idempotent)', () => {
    let s = foldRun(decide(startCommand(), EMPTY_RUN));
    s = foldRun(controllerEvents(decideNext(s, T0)), s);
    const cmd = {
      type: C.SubmitTaskResult,
      task_id: 'run-1:1:proposal:member-builder-01',
      member_id: 'member-builder-01',
      artifact: candidateArtifact('member-builder-01'),
      now: T0,
    } as const;
    const first = decide(cmd, s);
    s = foldRun(first, s);
    expect(decide(cmd, s)).toEqual([]);
    expect(() => decide({ ...cmd, event_id: 'other' }, s)).toThrow(expect.objectContaining({ code: 'TASK_ALREADY_SETTLED' }));
  });

  it('given answers recorded before the run ended (the chair’s decision, a reported failure), when resent after the end, then nothing is appended and nothing refused; another member’s answer, or another event id, is still refused', () => {
    const failing = 'member-operator-01';
    const behaviour = defaultBehaviour();
    const d = drive(startCommand(), (req, id, st) =>
      id === failing && req.stage === 'proposal' ? { kind: 'fail' } : behaviour(req, id, st),
    );
    expect(d.state.status).toBe('terminated');
    const synthesis = d.requests.find((r) => r.stage === 'synthesis')!;
    const chair = synthesis.task_id.split(':').pop() as string;
    const resentDecision = {
      type: C.SubmitTaskResult,
      task_id: synthesis.task_id,
      member_id: chair,
      artifact: behaviour(synthesis, chair, d.state),
      now: d.now,
    } as const;
    expect(decide(resentDecision, d.state)).toEqual([]);
    const failed = d.requests.find((r) => r.stage === 'proposal' && r.task_id.endsWith(failing))!;
    expect(
      decide({ type: C.ReportTaskFailure, task_id: failed.task_id, member_id: failing, detail: 'provider error', now: d.now }, d.state),
    ).toEqual([]);
    // The resend is the same member's: another member, or another event id, is judged as before.
    expect(() => decide({ ...resentDecision, member_id: failing }, d.state)).toThrow(expect.objectContaining({ code: 'INVALID_STATE' }));
    expect(() => decide({ ...resentDecision, event_id: 'other' }, d.state)).toThrow(expect.objectContaining({ code: 'INVALID_STATE' }));
  });
});

describe('spec 9 restart mid-run: a restarted controller folds the log and never re-issues an answered task', () => {
  it('given a log cut mid-review, when a new controller folds it, then decideNext issues no task already answered and pending ones are resent with the same task_id', () => {
    const behaviour = defaultBehaviour();
    let answered = 0;
    const slow: Behaviour = (req, id, st) => (req.stage === 'review' && ++answered > 1 ? { kind: 'silent' } : behaviour(req, id, st));
    const part = drive(startCommand(), slow, { stopWhen: (d) => d.events.some((e) => e.type === E.ReviewSubmitted) });
    // "Crash": only the log survives.
    const log = [...part.events];
    const restarted = foldRun(log);
    const answeredIds = Object.values(restarted.status === 'running' ? restarted.tasks : {})
      .filter((t) => t.status === 'answered')
      .map((t) => t.task_id);
    const actions = decideNext(restarted, part.now);
    const reissued = actions.filter((a) => a.kind === 'IssueTask').map((a) => (a.kind === 'IssueTask' ? a.request.task_id : ''));
    expect(answeredIds.length).toBeGreaterThan(3);
    expect(reissued.filter((id) => answeredIds.includes(id))).toEqual([]);
    expect(reissued).toEqual([]);
    const pending = pendingTaskRequests(restarted).map((p) => p.request.task_id);
    expect(pending).toEqual(['run-1:1:review:member-skeptic-01', 'run-1:1:review:member-operator-01']);
    // The restarted controller then finishes the run from the log.
    const done = drive(startCommand(), behaviour, { from: { state: restarted, events: log, requests: [], refusals: [], now: part.now } });
    expect(done.state.status).toBe('terminated');
  });
});

describe('spec 7.1 Controller is not Chair: authorities and their records are separate (checklist 9)', () => {
  it('given a whole run, then every controller-authored event is process only and every semantic artifact is authored by a member', () => {
    const d = drive(startCommand(), defaultBehaviour({ issues: (_r, round) => (round === 1 ? [highIssue()] : []) }));
    const semantic = [
      E.CandidateSubmitted,
      E.ReviewSubmitted,
      E.ConflictMapRecorded,
      E.FrameCheckRecorded,
      E.RevisionSubmitted,
      E.ChairDecisionRecorded,
    ] as string[];
    for (const e of d.events) {
      if (e.actor === 'council-controller') expect(semantic).not.toContain(e.type);
      if (semantic.includes(e.type)) expect(d.state.status !== 'empty' && d.state.panel.map((m) => m.member_id)).toContain(e.actor);
    }
    const chairEvent = d.events.find((e) => e.type === E.ChairDecisionRecorded);
    expect(chairEvent?.actor).toBe('member-chair-01');
    expect(d.events.find((e) => e.type === E.RunTerminated)?.actor).toBe('council-controller');
  });

  it('given the controller id is a panel member, when the run starts, then NOT_AUTHORIZED_ROLE (distinct actors, council:L3)', () => {
    expect(() => decide(startCommand({ policy: { controller_id: 'member-chair-01' } }), EMPTY_RUN)).toThrow(
      expect.objectContaining({ code: 'NOT_AUTHORIZED_ROLE', field: 'policy.controller_id' }),
    );
  });

  it('given the chair, when it revises the GoalContract with a larger budget, then NOT_AUTHORIZED_ROLE: the chair cannot extend the run (7.1)', () => {
    const s = foldRun(decide(startCommand(), EMPTY_RUN));
    const bigger = goalContract({ goal_contract_id: 'gc-002', budget: { max_rounds: 9, max_time: '1h' } });
    expect(() => decide({ type: C.ReviseGoalContract, goal_contract: bigger, actor: 'member-chair-01', now: T0 }, s)).toThrow(
      expect.objectContaining({ code: 'NOT_AUTHORIZED_ROLE', field: 'goal_contract.budget' }),
    );
    expect(() => decide({ type: C.ReviseGoalContract, goal_contract: bigger, actor: 'member-builder-01', now: T0 }, s)).toThrow(
      expect.objectContaining({ code: 'NOT_AUTHORIZED_ROLE', field: 'actor' }),
    );
  });

  it('given a non-chair member, when it answers a synthesis task it does not hold, then NOT_TASK_ASSIGNEE', () => {
    const d = drive(startCommand(), defaultBehaviour(), {
      stopWhen: (x) =>
        x.state.status === 'running' && x.state.stage === 'synthesis' && Object.values(x.state.tasks).some((t) => t.stage === 'synthesis'),
    });
    const task = Object.values(d.state.status === 'running' ? d.state.tasks : {}).find((t) => t.stage === 'synthesis');
    expect(() =>
      decide({ type: C.SubmitTaskResult, task_id: task?.task_id ?? '', member_id: 'member-builder-01', artifact: {}, now: d.now }, d.state),
    ).toThrow(expect.objectContaining({ code: 'NOT_TASK_ASSIGNEE' }));
  });
});

describe('properties (fast-check; the seed is printed on failure)', () => {
  type Act = 'ok' | 'silent' | 'fail' | 'garbage' | 'issue';
  const behaviourFrom = (plan: Act[]): Behaviour => {
    let i = 0;
    const good = defaultBehaviour({ issues: () => [highIssue()], score: () => 3 });
    return (req, id, st) => {
      const act = plan[i++ % plan.length];
      if (act === 'silent') return { kind: 'silent' };
      if (act === 'fail') return { kind: 'fail' };
      if (act === 'garbage') return { kind: 'reply', artifact: { nonsense: true } };
      return good(req, id, st);
    };
  };

  it('property (spec 17): for any member behaviour the run terminates within max_rounds in one of the 17.4 terminal states', () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom<Act>('ok', 'ok', 'ok', 'silent', 'fail', 'garbage', 'issue'), { minLength: 1, maxLength: 12 }),
        fc.integer({ min: 1, max: 4 }),
        fc.string({ minLength: 1, maxLength: 8 }),
        (plan, maxRounds, seed) => {
          const d = drive(
            startCommand({ seed, goal: goalContract({ budget: { max_rounds: maxRounds, max_time: '15m' } }) }),
            behaviourFrom(plan),
          );
          if (d.state.status !== 'terminated') return false;
          const rounds = Math.max(...Object.values(d.state.tasks).map((t) => t.round), 1);
          return (
            (TERMINAL_STATES as readonly string[]).includes(d.state.terminal.terminal_state) &&
            rounds <= maxRounds &&
            d.state.round <= maxRounds
          );
        },
      ),
      { numRuns: 60 },
    );
  });

  it('property (spec 11): reviewers never see their own candidate nor any author id, and the mapping stays in the RunRecord', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 10 }), fc.integer({ min: 1, max: 3 }), (seed, maxRounds) => {
        const d = drive(
          startCommand({ seed, goal: goalContract({ budget: { max_rounds: maxRounds, max_time: '15m' } }) }),
          defaultBehaviour({ issues: () => [highIssue()] }),
        );
        if (d.state.status === 'empty') return false;
        const st = d.state;
        const authors = st.panel.map((m) => m.member_id);
        for (const req of d.requests.filter((r) => r.stage === 'review')) {
          const reviewer = req.task_id.split(':').pop() as string;
          const text = JSON.stringify(req.inputs);
          if (authors.some((a) => text.includes(a))) return false;
          for (const c of req.inputs['candidates'] as { candidate_ref: string }[]) {
            const real = Object.values(st.lineages).find((l) => c.candidate_ref.startsWith(`anon-${l.letter}-`));
            if (!real || real.author_member_id === reviewer) return false;
          }
        }
        return buildRunRecord(st).anonymization.mapping.length === Object.keys(st.lineages).length;
      }),
      { numRuns: 40 },
    );
  });

  it('property (DESIGN 2): folding the same events gives the same state, and a replayed duplicate changes nothing', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom<Act>('ok', 'silent', 'issue', 'fail'), { minLength: 1, maxLength: 6 }), (plan) => {
        const d = drive(startCommand(), behaviourFrom(plan));
        const a = JSON.stringify(foldRun(d.events));
        const b = JSON.stringify(foldRun(JSON.parse(JSON.stringify(d.events))));
        const withDuplicates = JSON.stringify(foldRun([...d.events, ...d.events]));
        return a === b && a === withDuplicates;
      }),
      { numRuns: 40 },
    );
  });

  it('property (spec 19.1): every run the controller produces passes validateRunRecord', () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom<Act>('ok', 'ok', 'issue', 'silent', 'fail', 'garbage'), { minLength: 1, maxLength: 8 }),
        (plan) => {
          const d = drive(startCommand(), behaviourFrom(plan));
          if (d.state.status !== 'terminated') return false;
          const report = validateRunRecord(JSON.parse(JSON.stringify(buildRunRecord(d.state))));
          return report.valid || (console.log(JSON.stringify(report.problems)), false);
        },
      ),
      { numRuns: 40 },
    );
  });
});

describe('typed errors', () => {
  it('given no run, when a member answers, then RUN_NOT_FOUND; given an unknown task, then TASK_NOT_FOUND', () => {
    const cmd = { type: C.SubmitTaskResult, task_id: 'x', member_id: 'm', artifact: {}, now: T0 } as const;
    expect(() => decide(cmd, EMPTY_RUN)).toThrow(CouncilError);
    expect(() => decide(cmd, foldRun(decide(startCommand(), EMPTY_RUN)))).toThrow(expect.objectContaining({ code: 'TASK_NOT_FOUND' }));
  });
  it('given a panel with fewer proposers than the quorum, when started, then BELOW_QUORUM', () => {
    expect(() => decide(startCommand({ panel: panel().slice(0, 1).concat(panel().slice(3)) }), EMPTY_RUN)).toThrow(
      expect.objectContaining({ code: 'BELOW_QUORUM' }),
    );
  });
});
