import fc from 'fast-check';
import { parseCandidateArtifact } from './candidate-artifact';
import { CONFIDENCE_SCHEMES, LEVELS_OF_THREE, TASK_STAGES } from './contracts';
import { CouncilTaskRequest } from './controller';
import { parseDecisionRecord } from './decision-record';
import { CouncilError } from './errors';
import {
  CandidateContent,
  ConflictMapContent,
  DecisionContent,
  FrameCheckContent,
  MemberAnswerContent,
  MemberVerdict,
  RevisionContent,
  ReviewContent,
  STAMPED_FIELDS,
  acceptMemberAnswer,
  cancelledTasks,
  stampedReviewId,
  validateAnswerContent,
  validateTask,
  validateVerdict,
} from './member-answers';
import { ANSWER_SCHEMAS, REVIEW_SCHEMA, VERDICT_SCHEMA, memberApiSchemas } from './member-schemas';
import { CouncilRunState, EMPTY_RUN, evolveRun } from './state';
import {
  Behaviour,
  Driven,
  candidateArtifact,
  conflictMapFor,
  decisionFor,
  defaultBehaviour,
  drive,
  highIssue,
  panel,
  reviewsFor,
  revisionFor,
  startCommand,
  refusal,
} from '../testing/council-fixtures';

/* The types and the schemas describe the same fields (checked by the compiler). */
type AllKeys<T> = T extends unknown ? keyof T : never;
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const sameKeys = <A, B>(ok: Same<A, B>) => ok;
sameKeys<AllKeys<CandidateContent>, keyof (typeof ANSWER_SCHEMAS)['proposal']['properties']>(true);
sameKeys<AllKeys<RevisionContent>, keyof (typeof ANSWER_SCHEMAS)['revision']['properties']>(true);
sameKeys<AllKeys<ReviewContent>, keyof (typeof REVIEW_SCHEMA)['properties']>(true);
sameKeys<AllKeys<ConflictMapContent>, keyof (typeof ANSWER_SCHEMAS)['conflict-map']['properties']>(true);
sameKeys<AllKeys<FrameCheckContent>, keyof (typeof ANSWER_SCHEMAS)['frame-check']['properties']>(true);
sameKeys<AllKeys<DecisionContent>, keyof (typeof ANSWER_SCHEMAS)['synthesis']['properties']>(true);
sameKeys<keyof Extract<MemberVerdict, { ok: false }>['error'], keyof (typeof VERDICT_SCHEMA)['properties']['error']['properties']>(true);

/** What a member sends when it returns content only: the full artifact minus every stamped field. */
function contentOnly(stage: keyof MemberAnswerContent, artifact: unknown): unknown {
  const strip = (o: Record<string, unknown>, keys: readonly string[]) =>
    Object.fromEntries(Object.entries(o).filter(([k]) => !keys.includes(k)));
  if (stage === 'review') return (artifact as Record<string, unknown>[]).map((r) => strip(r, STAMPED_FIELDS.review));
  const keys: readonly string[] = STAMPED_FIELDS[stage];
  const extra = stage === 'conflict-map' ? ['conflict_map_id'] : stage === 'frame-check' ? ['frame_check_id'] : [];
  return strip(artifact as Record<string, unknown>, [...keys, ...extra]);
}

/** A behaviour whose members answer content only; the controller's stamping turns it into the artifact. */
function contentOnlyMembers(inner: Behaviour = defaultBehaviour()): Behaviour {
  return (req, memberId, state) => {
    const reply = inner(req, memberId, state);
    if (reply.kind !== 'reply') return reply;
    return { ...reply, artifact: acceptMemberAnswer(state, req.task_id, memberId, contentOnly(req.stage, reply.artifact)) };
  };
}

function running(d: Driven): CouncilRunState & { status: 'running' } {
  if (d.state.status !== 'running') throw new Error(`run is ${d.state.status}`);
  return d.state;
}

/** Drives to the first task of a stage and returns the state and that task. */
function atStage(stage: CouncilTaskRequest['stage'], behaviour: Behaviour = contentOnlyMembers()): { d: Driven; req: CouncilTaskRequest } {
  let found: CouncilTaskRequest | undefined;
  // Members leave that stage's tasks unanswered, so the run waits there.
  const waiting: Behaviour = (req, id, s) => (req.stage === stage ? { kind: 'silent' } : behaviour(req, id, s));
  const d = drive(startCommand({ panel: panel({ frameObserver: true }) }), waiting, {
    stopWhen: (x) => {
      found = x.requests.find((r) => r.stage === stage && x.state.status === 'running' && x.state.tasks[r.task_id]?.status === 'issued');
      return found !== undefined;
    },
  });
  if (!found) throw new Error(`no ${stage} task`);
  return { d, req: found };
}

describe('member API: members return content only, the controller stamps the bookkeeping', () => {
  it('given members that send no ids, versions or owners, when a whole run is driven, then it decides and every id follows its task', () => {
    const issues = (_r: string, round: number) => (round === 1 ? [highIssue()] : []);
    const d = drive(startCommand({ panel: panel({ frameObserver: true }) }), contentOnlyMembers(defaultBehaviour({ issues })));
    expect(d.state.status).toBe('terminated');
    if (d.state.status !== 'terminated') return;
    expect(d.state.terminal.terminal_state).toBe('decided');
    for (const id of d.state.candidate_order) {
      const { candidate, task_id } = d.state.candidates[id];
      expect(candidate.candidate_id).toBe(task_id);
      expect(task_id.endsWith(`:${candidate.author_member_id}`)).toBe(true);
      expect(candidate.confidence_scheme).toBe(CONFIDENCE_SCHEMES[0]);
    }
    const state = d.state;
    const revisions = state.candidate_order.map((id) => state.candidates[id].candidate).filter((c) => c.version > 1);
    expect(revisions.length).toBeGreaterThan(0);
    for (const r of revisions) expect(state.candidates[r.parent_candidate_id as string].candidate.version).toBe(r.version - 1);
    for (const id of d.state.review_order) {
      expect(id).toMatch(/:review:[^:]+:\d+$/);
      expect(id.startsWith(`${d.state.reviews[id].task_id}:`)).toBe(true);
      expect(d.state.reviews[id].task_id.endsWith(`:${d.state.reviews[id].review.reviewer_member_id}`)).toBe(true);
    }
    expect(d.state.frame_checks.length).toBeGreaterThan(0);
    for (const f of d.state.frame_checks) expect(f.frame_check.observer_member_id).toBe('member-outsider-01');
    const decision = d.state.decision?.decision_record;
    expect(decision?.decision_id).toBe(d.state.decision?.task_id);
    expect(decision?.decision_owner).toBe('human-owner');
    expect(decision?.goal_contract_id).toBe('gc-001');
  });

  it('given a member that sends a stamped field with the stamped value, when accepted, then it is accepted as if it had not', () => {
    const { d, req } = atStage('proposal');
    const content = contentOnly('proposal', candidateArtifact('member-builder-01')) as Record<string, unknown>;
    const state = running(d);
    const plain = acceptMemberAnswer(state, req.task_id, 'member-builder-01', content);
    const same = acceptMemberAnswer(state, req.task_id, 'member-builder-01', {
      ...content,
      author_member_id: 'member-builder-01',
      version: 1,
      parent_candidate_id: null,
      candidate_id: req.task_id,
    });
    expect(same).toEqual(plain);
  });

  it.each([
    ['author_member_id', 'member-skeptic-01'],
    ['candidate_id', 'cand-mine'],
    ['version', 2],
    ['parent_candidate_id', 'cand-other'],
  ])(
    'given a proposal that sends %s = %j (not the stamped value), when accepted, then STAMPED_FIELD_MISMATCH names the field',
    (field, value) => {
      const { d, req } = atStage('proposal');
      const content = contentOnly('proposal', candidateArtifact('member-builder-01')) as Record<string, unknown>;
      const e = refusal(() => acceptMemberAnswer(running(d), req.task_id, 'member-builder-01', { ...content, [field]: value }));
      expect(e.toJSON()).toMatchObject({ code: 'STAMPED_FIELD_MISMATCH', field });
    },
  );

  it('given a review that names another reviewer, when accepted, then STAMPED_FIELD_MISMATCH at reviews[1].reviewer_member_id', () => {
    const { d, req } = atStage('review');
    const member = req.task_id.split(':').pop() as string;
    const reviews = contentOnly('review', reviewsFor(req, member)) as Record<string, unknown>[];
    const sent = reviews.map((r, i) => (i === 1 ? { ...r, reviewer_member_id: 'member-chair-01' } : r));
    expect(sent.length).toBeGreaterThan(1);
    const e = refusal(() => acceptMemberAnswer(running(d), req.task_id, member, sent));
    expect(e.toJSON()).toMatchObject({ code: 'STAMPED_FIELD_MISMATCH', field: 'reviews[1].reviewer_member_id' });
  });

  it('given a review answer, when stamped, then each review gets the task id and its place, and the reviewer', () => {
    const { d, req } = atStage('review');
    const member = req.task_id.split(':').pop() as string;
    const out = acceptMemberAnswer(running(d), req.task_id, member, contentOnly('review', reviewsFor(req, member))) as {
      reviews: Record<string, unknown>[];
    };
    out.reviews.forEach((r, i) => expect(r).toMatchObject({ review_id: stampedReviewId(req.task_id, i), reviewer_member_id: member }));
  });

  it('given a revision that names its parent by the blind ref, when accepted, then the parent is stamped as the real id and the version is the next', () => {
    const behaviour = defaultBehaviour({ issues: (_r, round) => (round === 1 ? [highIssue()] : []) });
    const { d, req } = atStage('revision', contentOnlyMembers(behaviour));
    const member = req.task_id.split(':').pop() as string;
    const state = running(d);
    const own = req.inputs['candidate'] as { candidate_id: string; version: number };
    const letter = state.lineages[state.candidates[own.candidate_id].lineage_id].letter;
    const content = { ...(contentOnly('revision', revisionFor(req)) as object), parent_candidate_id: `anon-${letter}-v${own.version}` };
    expect(acceptMemberAnswer(state, req.task_id, member, content)).toMatchObject({
      candidate_id: req.task_id,
      parent_candidate_id: own.candidate_id,
      version: own.version + 1,
      author_member_id: member,
    });
  });

  it("given a chair answer without ids, when stamped, then decision_id, goal_contract_id, decision_owner and the scheme are the controller's", () => {
    const { d, req } = atStage('synthesis');
    const state = running(d);
    const out = acceptMemberAnswer(state, req.task_id, 'member-chair-01', contentOnly('synthesis', decisionFor(req)));
    expect(out).toMatchObject({
      decision_id: req.task_id,
      goal_contract_id: 'gc-001',
      decision_owner: 'human-owner',
      confidence_scheme: 'ordinal-confidence-v1',
    });
    const e = refusal(() =>
      acceptMemberAnswer(state, req.task_id, 'member-chair-01', {
        ...(contentOnly('synthesis', decisionFor(req)) as object),
        decision_owner: 'member-chair-01',
      }),
    );
    expect(e.toJSON()).toMatchObject({ code: 'STAMPED_FIELD_MISMATCH', field: 'decision_owner' });
  });

  it('given a conflict map or frame check without its own id, when accepted, then the id defaults to the task id; a chosen id is kept', () => {
    const { d, req } = atStage('conflict-map');
    const member = req.task_id.split(':').pop() as string;
    const map = conflictMapFor(req, 1);
    expect(acceptMemberAnswer(running(d), req.task_id, member, contentOnly('conflict-map', map))).toMatchObject({
      conflict_map_id: req.task_id,
    });
    expect(acceptMemberAnswer(running(d), req.task_id, member, map)).toMatchObject({ conflict_map_id: 'cm-1' });
  });

  it('given a task of another member, when answered, then NOT_TASK_ASSIGNEE', () => {
    const { d, req } = atStage('proposal');
    const e = refusal(() => acceptMemberAnswer(running(d), req.task_id, 'member-chair-01', {}));
    expect(e.code).toBe('NOT_TASK_ASSIGNEE');
  });
});

describe('member API: JSON Schemas, unknown fields refused by name', () => {
  it.each([
    ['proposal', { ...(contentOnly('proposal', candidateArtifact('m')) as object), sentiment: 'upbeat' }, 'sentiment'],
    [
      'synthesis',
      { selected_path: 'anon-A-v1', decision: 'x', grounded_in: [], unresolved_dissent: [], confidence: 'low', member_failures: [] },
      'member_failures',
    ],
    [
      'review',
      [{ target_candidate_id: 'anon-A-v1', rubric_scores: { e: 1 }, material_issues: [{ ...highIssue(), mood: 'sad' }] }],
      'reviews[0].material_issues[0].mood',
    ],
    ['frame-check', { result: 'frame-holds', verdict: 'ok' }, 'verdict'],
    ['conflict-map', { conflicts: [], summary: 'none' }, 'summary'],
  ] as const)('given a %s answer with an unknown field, when validated, then SCHEMA_VIOLATION names %#', (stage, answer, field) => {
    const e = refusal(() => validateAnswerContent(stage, answer));
    expect(e.toJSON()).toMatchObject({ code: 'SCHEMA_VIOLATION', field });
    expect(e.message).toMatch(/unknown field/);
  });

  it.each([
    [
      'proposal',
      { position: 'p', evidence_refs: ['e'], assumptions: [], risks: ['r'], reversal_signals: ['s'], actions: ['a'] },
      'confidence',
    ],
    [
      'frame-check',
      { result: 'frame-challenge', assumed_frame: 'f', reversal_signal: 'r', re_entry_action: 'a', inference: 'i' },
      'excluded',
    ],
    ['revision', { ...(contentOnly('proposal', candidateArtifact('m')) as object) }, 'responses'],
  ] as const)('given a %s answer missing a required field, when validated, then SCHEMA_VIOLATION names it', (stage, answer, field) => {
    expect(refusal(() => validateAnswerContent(stage, answer)).toJSON()).toMatchObject({ code: 'SCHEMA_VIOLATION', field });
  });

  it('given every task a run issues, when validated against its stage schema, then each passes; a task with an extra envelope field does not', () => {
    const issues = (_r: string, round: number) => (round === 1 ? [highIssue()] : []);
    const d = drive(
      startCommand({ panel: panel({ frameObserver: true, moderator: true }) }),
      contentOnlyMembers(defaultBehaviour({ issues })),
    );
    expect(new Set(d.requests.map((r) => r.stage))).toEqual(new Set(TASK_STAGES));
    for (const req of d.requests) validateTask(JSON.parse(JSON.stringify(req)));
    expect(refusal(() => validateTask({ ...d.requests[0], priority: 1 })).toJSON()).toMatchObject({ field: 'priority' });
  });

  it('given the served schemas, then every task and answer stage has one', () => {
    const s = memberApiSchemas();
    expect(Object.keys(s.tasks).sort()).toEqual([...TASK_STAGES].sort());
    expect(Object.keys(s.answers).sort()).toEqual([...TASK_STAGES].sort());
    expect(JSON.parse(JSON.stringify(s))).toEqual(s);
  });

  const text = fc.string({ minLength: 1, maxLength: 12 }).filter((s) => s.trim() !== '');
  const texts = (min = 0) => fc.array(text, { minLength: min, maxLength: 3 });
  const candidateContent: fc.Arbitrary<CandidateContent> = fc.record(
    {
      position: text,
      claims: fc.array(fc.oneof(text, fc.record({ claim: text, evidence_refs: texts() })), { maxLength: 2 }),
      evidence_refs: texts(1),
      assumptions: texts(),
      expected_outcomes: texts(),
      risks: texts(1),
      reversal_signals: texts(1),
      actions: texts(1),
      confidence: fc.constantFrom(...LEVELS_OF_THREE),
    },
    { requiredKeys: ['position', 'evidence_refs', 'assumptions', 'risks', 'reversal_signals', 'actions', 'confidence'] },
  );

  it('property: a type-correct proposal answer validates, and once stamped the library parser accepts it', () => {
    fc.assert(
      fc.property(candidateContent, (content) => {
        validateAnswerContent('proposal', content);
        const stamped = {
          ...content,
          candidate_id: 't',
          author_member_id: 'm',
          version: 1,
          parent_candidate_id: null,
          confidence_scheme: 'ordinal-confidence-v1',
        };
        expect(parseCandidateArtifact(stamped).position).toBe(content.position);
      }),
    );
  });

  it('property: a type-correct answer with any extra key is refused, naming that key', () => {
    const extraKey = fc
      .string({ minLength: 1, maxLength: 10 })
      .filter((k) => /^[a-z_]+$/.test(k) && !(k in ANSWER_SCHEMAS.proposal.properties));
    fc.assert(
      fc.property(candidateContent, extraKey, fc.jsonValue(), (content, key, value) => {
        const e = refusal(() => validateAnswerContent('proposal', { ...content, [key]: value }));
        expect(e.field).toBe(key);
      }),
    );
  });

  it('property: any JSON the synthesis schema accepts, once stamped, is accepted by the DecisionRecord parser or refused with a typed error', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        let ok = true;
        try {
          validateAnswerContent('synthesis', value);
        } catch (e) {
          expect(e).toBeInstanceOf(CouncilError);
          ok = false;
        }
        if (!ok) return;
        const stamped = {
          ...(value as object),
          decision_id: 'd',
          goal_contract_id: 'g',
          decision_owner: 'o',
          confidence_scheme: 'ordinal-confidence-v1',
        };
        try {
          parseDecisionRecord(stamped);
        } catch (e) {
          expect(e).toBeInstanceOf(CouncilError);
        }
      }),
    );
  });
});

describe('member API: verdicts', () => {
  it('given a RATE_LIMITED refusal with its hint, when validated, then the verdict schema takes retry_after_ms; a negative hint or an unknown field is refused', () => {
    const limited = { ok: false, retry: true, error: { code: 'RATE_LIMITED', message: 'too many commands', retry_after_ms: 250 } };
    expect(validateVerdict(limited)).toEqual(limited);
    expect(refusal(() => validateVerdict({ ...limited, error: { ...limited.error, retry_after_ms: -1 } })).code).toBe('SCHEMA_VIOLATION');
    expect(refusal(() => validateVerdict({ ...limited, wait: 1 })).code).toBe('SCHEMA_VIOLATION');
  });
});

describe('member API: cancel notices', () => {
  it('given a task past its deadline, when the controller times it out, then a deadline-passed notice goes to its member', () => {
    const silent: Behaviour = (req, id, s) =>
      id === 'member-operator-01' && req.stage === 'review' ? { kind: 'silent' } : contentOnlyMembers()(req, id, s);
    const d = drive(startCommand(), silent);
    const timeout = d.events.findIndex((e) => e.type === 'MemberFailed' && e.data.reason === 'timeout');
    expect(timeout).toBeGreaterThan(0);
    const before = d.events.slice(0, timeout).reduce<CouncilRunState>((s, e) => evolveRun(s, e), EMPTY_RUN);
    const notices = cancelledTasks(before, evolveRun(before, d.events[timeout]));
    expect(notices).toEqual([
      {
        member_id: 'member-operator-01',
        notice: expect.objectContaining({ notice: 'cancel', reason: 'deadline-passed', run_id: 'run-1' }),
      },
    ]);
  });

  it('given open tasks, when the run terminates, then each open task gets a run-terminated notice, and an answered one none', () => {
    const { d } = atStage('review');
    const state = running(d);
    const open = state.task_order.filter((id) => state.tasks[id].status === 'issued');
    expect(open.length).toBeGreaterThan(0);
    const terminated = {
      event_id: 'run-1:terminated',
      type: 'RunTerminated',
      schema_version: '1',
      occurred_at: d.now,
      actor: 'human-owner',
      causation_id: null,
      correlation_id: 'run-1',
      data: { terminal_state: 'budget-exhausted-best-checkpoint', reason: 'human-interrupt', best_checkpoint_id: null, decision_id: null },
    } as const;
    const notices = cancelledTasks(state, evolveRun(state, terminated));
    expect(notices.map((n) => n.notice.task_id).sort()).toEqual([...open].sort());
    expect(notices.every((n) => n.notice.reason === 'run-terminated')).toBe(true);
  });
});
