/* Test fixtures and a small in-memory driver: the loop a service runs, without NATS. */
import { COUNCIL_COMMAND_TYPES as C } from '../lib/contracts';
import { CouncilTaskRequest, decideNext, nextWakeAt } from '../lib/controller';
import { CouncilCommand, decide } from '../lib/decide';
import { CouncilEvent } from '../lib/events';
import { GoalContract } from '../lib/goal-contract';
import { MemberDescriptor } from '../lib/member-descriptor';
import { CouncilRunState, EMPTY_RUN, evolveRun } from '../lib/state';
import { CouncilError } from '../lib/errors';

export const T0 = '2026-08-03T10:00:00.000Z';
export const at = (ms: number) => new Date(Date.parse(T0) + ms).toISOString();

export function goalContract(overrides: Partial<GoalContract> = {}): GoalContract {
  return {
    goal_contract_id: 'gc-001',
    question: 'Should we migrate the billing service to event sourcing this quarter?',
    goal: 'A migration decision with a rollback plan',
    success_criteria: ['no billing downtime', 'auditable ledger'],
    constraints: ['team of four', 'one quarter'],
    non_goals: ['rewrite the UI'],
    decision_owner: 'human-owner',
    risk_level: 'medium',
    time_horizon: '6 months',
    evidence_set: ['ev-incident-2026-07', 'ev-load-test'],
    unknowns: ['peak load next quarter'],
    budget: { max_rounds: 3, max_time: '15m', max_cost: 100, max_tokens: 1_000_000 },
    ...overrides,
  };
}

export function member(member_id: string, role = 'builder', council_roles?: string[], group = 'shared-model-a'): MemberDescriptor {
  const m: MemberDescriptor = {
    member_id,
    model_family: 'model-x',
    provider_runtime: 'local',
    role,
    role_contract: `Argue as ${role}`,
    context_scope: 'full',
    memory_scope: 'none',
    tools: [],
    independence_group: group,
  };
  if (council_roles) m.council_roles = council_roles as MemberDescriptor['council_roles'];
  return m;
}

/** Three proposers (builder, skeptic, operator) and a separate chair. */
export function panel(opts: { frameObserver?: boolean; moderator?: boolean; fallbackChair?: boolean } = {}): MemberDescriptor[] {
  const p = [
    member('member-builder-01', 'builder'),
    member('member-skeptic-01', 'skeptic', undefined, 'shared-model-b'),
    member('member-operator-01', 'operator'),
    member('member-chair-01', 'chair', ['chair'], 'chair-model'),
  ];
  if (opts.fallbackChair) p.push(member('member-chair-02', 'chair', ['chair'], 'chair-model'));
  if (opts.moderator) p.push(member('member-moderator-01', 'moderator', ['moderator'], 'mod-model'));
  if (opts.frameObserver) p.push(member('member-outsider-01', 'outsider', ['frame-observer'], 'outsider-model'));
  return p;
}

export function candidateArtifact(author: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    candidate_id: `cand-${author}-v1`,
    author_member_id: author,
    version: 1,
    position: `Migrate in two phases (${author} view)`,
    claims: ['Phase one covers the ledger'],
    evidence_refs: ['ev-incident-2026-07'],
    assumptions: ['load stays flat'],
    expected_outcomes: ['auditable ledger by Q4'],
    risks: ['dual-write drift'],
    reversal_signals: ['reconciliation errors above 0.1%'],
    actions: ['build the ledger projection'],
    confidence_scheme: 'ordinal-confidence-v1',
    confidence: 'medium',
    parent_candidate_id: null,
    ...overrides,
  };
}

type Blind = { candidate_ref: string; label: string; version: number; position: string };

export interface ReviewBehaviourOptions {
  score?: (ref: string, round: number) => number;
  issues?: (ref: string, round: number) => Record<string, unknown>[];
}

export function reviewsFor(
  req: CouncilTaskRequest,
  reviewer: string,
  opts: ReviewBehaviourOptions = {},
  round = 1,
): Record<string, unknown>[] {
  const cands = req.inputs['candidates'] as Blind[];
  return cands.map((c) => ({
    review_id: `rev-${reviewer}-on-${c.candidate_ref}`,
    reviewer_member_id: reviewer,
    target_candidate_id: c.candidate_ref,
    rubric_scores: { evidence: opts.score ? opts.score(c.candidate_ref, round) : 3, correctness: 3 },
    strengths: ['clear plan'],
    material_issues: opts.issues ? opts.issues(c.candidate_ref, round) : [],
  }));
}

export const highIssue = (claim = 'No rollback plan for the ledger cutover') => ({
  claim,
  evidence_refs: ['ev-incident-2026-07'],
  severity: 'high',
  revision_request: 'Add a tested rollback step',
  could_change: ['risk_controls'],
});

export const styleIssue = () => ({
  claim: 'Wording is verbose',
  evidence_refs: [],
  severity: 'low',
  revision_request: 'Shorten',
  could_change: [],
});

export function conflictMapFor(req: CouncilTaskRequest, round: number, extra: Record<string, unknown>[] = []): Record<string, unknown> {
  const cands = req.inputs['candidates'] as Blind[];
  return {
    conflict_map_id: `cm-${round}`,
    conflicts: [
      {
        conflict_id: `conflict-${round}-01`,
        type: 'causal-model',
        positions: cands.slice(0, 2).map((c) => c.candidate_ref),
        description: 'Whether dual writes drift under load',
        discriminating_evidence: 'a replay of last month of traffic',
        decision_impact: 'medium',
        status: 'unresolved',
      },
      ...extra,
    ],
  };
}

export function revisionFor(req: CouncilTaskRequest, changePosition = true, positionOverride?: string): Record<string, unknown> {
  const own = req.inputs['candidate'] as Record<string, unknown>;
  const issues = req.inputs['selected_issues'] as { issue_id: string }[];
  return {
    ...own,
    candidate_id: `${String(own['candidate_id']).replace(/-v\d+$/, '')}-v${Number(own['version']) + 1}`,
    version: Number(own['version']) + 1,
    parent_candidate_id: own['candidate_id'],
    position: positionOverride ?? (changePosition ? `${own['position']} + rollback v${Number(own['version']) + 1}` : own['position']),
    responses: issues.map((i) => ({ review_issue: i.issue_id, disposition: 'accepted', change: 'added a rollback step' })),
  };
}

export function decisionFor(req: CouncilTaskRequest, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const cands = req.inputs['candidates'] as Blind[];
  const required = req.inputs['required_dissent'] as string[];
  return {
    decision_id: 'decision-001',
    goal_contract_id: req.goal_contract.goal_contract_id,
    selected_path: cands[0].candidate_ref,
    chair_mode: 'select',
    decision: 'Migrate in two phases with a rehearsed rollback',
    grounded_in: [cands[0].candidate_ref],
    incorporated: [],
    rejected: [],
    unresolved_dissent: required.map((id) => ({ description: `retained: ${id}`, refs: [id] })),
    actions: ['build the ledger projection'],
    stop_loss_conditions: ['reconciliation errors above 0.1%'],
    reversal_signals: ['p99 latency doubles'],
    confidence_scheme: 'ordinal-confidence-v1',
    confidence: 'medium',
    decision_owner: req.goal_contract.decision_owner,
    ...overrides,
  };
}

export type Reply =
  | { kind: 'reply'; artifact: unknown; usage?: { cost?: number; tokens?: number } }
  | { kind: 'fail'; usage?: { cost?: number; tokens?: number } }
  | { kind: 'silent' };
export type Behaviour = (req: CouncilTaskRequest, memberId: string, state: CouncilRunState) => Reply;

export interface DefaultBehaviourOptions extends ReviewBehaviourOptions {
  frame?: (req: CouncilTaskRequest, memberId: string) => Record<string, unknown>;
  conflicts?: (req: CouncilTaskRequest, round: number) => Record<string, unknown>;
  revise?: (req: CouncilTaskRequest, memberId: string) => Record<string, unknown>;
  decision?: (req: CouncilTaskRequest) => Record<string, unknown>;
  usage?: { cost?: number; tokens?: number };
}

export function roundOf(req: CouncilTaskRequest): number {
  return Number(req.task_id.split(':').slice(-3)[0]);
}

/** A well-behaved member for every stage, each part overridable. */
export function defaultBehaviour(opts: DefaultBehaviourOptions = {}): Behaviour {
  return (req, memberId) => {
    const round = roundOf(req);
    const reply = (artifact: unknown): Reply => ({ kind: 'reply', artifact, ...(opts.usage ? { usage: opts.usage } : {}) });
    switch (req.stage) {
      case 'proposal':
        return reply(candidateArtifact(memberId, { candidate_id: `cand-${memberId}-g${req.goal_contract.goal_contract_id}-v1` }));
      case 'review':
        return reply(reviewsFor(req, memberId, opts, round));
      case 'conflict-map':
        return reply(opts.conflicts ? opts.conflicts(req, round) : conflictMapFor(req, round));
      case 'frame-check':
        return reply(
          opts.frame ? opts.frame(req, memberId) : { frame_check_id: `fc-${round}`, observer_member_id: memberId, result: 'frame-holds' },
        );
      case 'revision':
        return reply(opts.revise ? opts.revise(req, memberId) : revisionFor(req));
      case 'synthesis':
        return reply(opts.decision ? opts.decision(req) : decisionFor(req));
    }
  };
}

export interface Driven {
  state: CouncilRunState;
  events: CouncilEvent[];
  requests: CouncilTaskRequest[];
  refusals: { req: CouncilTaskRequest; error: CouncilError }[];
  now: string;
}

export function startCommand(
  opts: { run_id?: string; goal?: GoalContract; panel?: MemberDescriptor[]; policy?: Record<string, unknown>; seed?: string } = {},
): CouncilCommand {
  return {
    type: C.StartRun,
    run_id: opts.run_id ?? 'run-1',
    goal_contract: opts.goal ?? goalContract(),
    panel: opts.panel ?? panel(),
    policy: opts.policy ?? {},
    seed: opts.seed ?? 'seed-1',
    actor: 'human-owner',
    now: T0,
  };
}

/**
 * Drive a run the way the service will: decideNext, append, send tasks, append replies via
 * decide, advance the clock to the next deadline when nobody answers. `stopWhen` lets a test
 * pause mid-run (e.g. to simulate a controller restart).
 */
export function drive(
  start: CouncilCommand,
  behaviour: Behaviour,
  opts: { from?: Driven; stopWhen?: (d: Driven) => boolean; replyDelayMs?: number; maxIterations?: number } = {},
): Driven {
  const d: Driven = opts.from ?? { state: EMPTY_RUN, events: [], requests: [], refusals: [], now: T0 };
  const append = (events: CouncilEvent[]) => {
    for (const e of events) {
      d.events.push(e);
      d.state = evolveRun(d.state, e);
    }
  };
  if (!opts.from) append(decide(start, d.state));
  for (let i = 0; i < (opts.maxIterations ?? 500); i++) {
    if (d.state.status !== 'running') return d;
    if (opts.stopWhen?.(d)) return d;
    const actions = decideNext(d.state, d.now);
    append(actions.map((a) => a.event));
    const issued = actions.flatMap((a) => (a.kind === 'IssueTask' ? [a.request] : []));
    let progressed = actions.length > 0;
    for (const req of issued) {
      d.requests.push(req);
      const memberId = req.task_id.split(':').pop() as string;
      const reply = behaviour(req, memberId, d.state);
      const now = opts.replyDelayMs ? at(Date.parse(d.now) - Date.parse(T0) + opts.replyDelayMs) : d.now;
      if (reply.kind === 'silent') continue;
      const command: CouncilCommand =
        reply.kind === 'fail'
          ? { type: C.ReportTaskFailure, task_id: req.task_id, member_id: memberId, detail: 'provider error', usage: reply.usage, now }
          : { type: C.SubmitTaskResult, task_id: req.task_id, member_id: memberId, artifact: reply.artifact, usage: reply.usage, now };
      try {
        append(decide(command, d.state));
        progressed = true;
      } catch (e) {
        if (!(e instanceof CouncilError)) throw e;
        d.refusals.push({ req, error: e });
        // As the service does: the refused answer and its spend are recorded.
        const usage = reply.kind === 'reply' ? reply.usage : undefined;
        append(decide({ type: C.RecordRefusedAnswer, task_id: req.task_id, member_id: memberId, error: e.toJSON(), usage, now }, d.state));
        progressed = true;
      }
    }
    if (!progressed || issued.length === 0) {
      if (actions.length === 0) {
        const wake = nextWakeAt(d.state);
        if (wake === null) return d;
        d.now = wake > d.now ? wake : at(Date.parse(d.now) - Date.parse(T0) + 1);
      }
    }
  }
  throw new Error('driver did not finish');
}

/** The CouncilError `fn` throws (anything else is rethrown; no throw fails the test). */
export function refusal(fn: () => unknown): CouncilError {
  try {
    fn();
  } catch (e) {
    if (e instanceof CouncilError) return e;
    throw e;
  }
  throw new Error('expected a CouncilError');
}
