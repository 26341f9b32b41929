import type { CancelNotice, CouncilRole, GoalContract, MemberDescriptor, Usage } from '@conclave/council-protocol';
import type { NatsConnection } from 'nats';
import { CouncilMember, CouncilMemberOptions, CouncilTask, CouncilVerdict } from './council-member';

/*
 * Deterministic scripted Council members, for the demo, the end-to-end tests and the benchmark.
 * Every answer is a pure function of the task (and of a per-member counter where a script needs
 * "a new objection each round"); only the optional delay touches the clock. Answers are content
 * only: the controller stamps ids, authors, versions and owners.
 */

interface BlindCandidate {
  candidate_ref: string;
  label: string;
  version: number;
  position: string;
}

export interface ScriptedIssue {
  claim: string;
  evidence_refs: string[];
  severity: 'low' | 'medium' | 'high';
  revision_request: string;
  could_change: string[];
}

/** A review's `test_results`: the tests the reviewer ran on the candidate version it reviews. */
export interface ScriptedTestResults {
  suite_ref: string;
  passed: number;
  failed: number;
  evidence_refs: string[];
}

export interface ScriptedBehaviour {
  /** Fixed delay before answering (ms), or one per task. */
  delayMs?: number | ((task: CouncilTask) => number);
  /** Holds a task until the returned promise settles (a test keeps a run waiting mid-stage). */
  hold?: (task: CouncilTask) => Promise<void> | undefined;
  /** Never answers these tasks (the controller times them out). */
  silent?: (task: CouncilTask) => boolean;
  /** Answers these tasks with an artifact the controller refuses (and never corrects it). */
  malformed?: (task: CouncilTask) => boolean;
  /** Reports a failure for these tasks (`{ok: false, error}`). */
  fail?: (task: CouncilTask) => boolean;
  /** Rubric score a reviewer gives a candidate in a round (default 3). */
  score?: (candidateRef: string, round: number) => number;
  /** Material issues a reviewer raises (default none). */
  issues?: (candidateRef: string, round: number) => ScriptedIssue[];
  /** Executable test results a reviewer reports on a candidate, for test-first elimination (default none). */
  testResults?: (candidateRef: string, round: number) => ScriptedTestResults | undefined;
  /** A revision's new position, from the parent's version (default: parent + "rollback"). */
  revisedPosition?: (parentPosition: string, parentVersion: number) => string;
  /** Extra conflicts the moderator (or chair) adds to the ConflictMap. */
  extraConflicts?: (task: CouncilTask, round: number) => Record<string, unknown>[];
  /** The frame observer's verdict (default frame-holds). */
  frame?: (task: CouncilTask, memberId: string, round: number) => Record<string, unknown>;
  /** Fields the chair sets on its DecisionRecord. */
  decision?: (task: CouncilTask) => Record<string, unknown>;
  usage?: Usage;
}

export const roundOfTask = (task: CouncilTask): number => Number(task.task_id.split(':').slice(-3)[0]);

export const highIssue = (claim = 'No rollback plan for the ledger cutover'): ScriptedIssue => ({
  claim,
  evidence_refs: ['ev-incident-2026-07'],
  severity: 'high',
  revision_request: 'Add a tested rollback step',
  could_change: ['risk_controls'],
});

export function candidateFor(task: CouncilTask, memberId: string): Record<string, unknown> {
  return {
    position: `Migrate in two phases (${memberId} view)`,
    claims: ['Phase one covers the ledger'],
    evidence_refs: [task.goal_contract.evidence_set[0] ?? 'ev-none'],
    assumptions: ['load stays flat'],
    expected_outcomes: ['auditable ledger by Q4'],
    risks: ['dual-write drift'],
    reversal_signals: ['reconciliation errors above 0.1%'],
    actions: ['build the ledger projection'],
    confidence: 'medium',
  };
}

export function reviewsFor(task: CouncilTask, reviewer: string, b: ScriptedBehaviour): Record<string, unknown>[] {
  const round = roundOfTask(task);
  return (task.inputs['candidates'] as BlindCandidate[]).map((c) => {
    const tests = b.testResults?.(c.candidate_ref, round);
    return {
      target_candidate_id: c.candidate_ref,
      rubric_scores: { evidence: b.score ? b.score(c.candidate_ref, round) : 3, correctness: 3 },
      strengths: ['clear plan'],
      material_issues: b.issues ? b.issues(c.candidate_ref, round) : [],
      ...(tests ? { test_results: tests } : {}),
    };
  });
}

export function conflictMapFor(task: CouncilTask, round: number, extra: Record<string, unknown>[] = []): Record<string, unknown> {
  const cands = task.inputs['candidates'] as BlindCandidate[];
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

/** The fields of a candidate the controller stamps, and the previous revision's responses. */
const NOT_CONTENT = ['candidate_id', 'author_member_id', 'version', 'parent_candidate_id', 'confidence_scheme', 'responses'];

export function revisionFor(task: CouncilTask, b: ScriptedBehaviour): Record<string, unknown> {
  const own = task.inputs['candidate'] as Record<string, unknown>;
  const content = Object.fromEntries(Object.entries(own).filter(([k]) => !NOT_CONTENT.includes(k)));
  const issues = task.inputs['selected_issues'] as { issue_id: string }[];
  const version = Number(own['version']);
  const position = b.revisedPosition
    ? b.revisedPosition(String(own['position']), version)
    : `${own['position']} + rollback v${version + 1}`;
  return {
    ...content,
    position,
    responses: issues.map((i) => ({ review_issue: i.issue_id, disposition: 'accepted', change: 'added a rollback step' })),
  };
}

export function decisionFor(task: CouncilTask, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const cands = task.inputs['candidates'] as BlindCandidate[];
  const required = (task.inputs['required_dissent'] as string[] | undefined) ?? [];
  return {
    selected_path: cands[0].candidate_ref,
    chair_mode: 'select',
    decision: `Adopt ${cands[0].candidate_ref}: ${cands[0].position}`,
    grounded_in: [cands[0].candidate_ref],
    incorporated: [],
    rejected: [],
    unresolved_dissent: required.map((id) => ({ description: `retained: ${id}`, refs: [id] })),
    actions: ['build the ledger projection'],
    stop_loss_conditions: ['reconciliation errors above 0.1%'],
    reversal_signals: ['p99 latency doubles'],
    confidence: 'medium',
    ...overrides,
  };
}

/** The artifact a well-behaved member returns for any stage, each part scriptable. */
export function scriptedArtifact(task: CouncilTask, memberId: string, b: ScriptedBehaviour): unknown {
  const round = roundOfTask(task);
  switch (task.stage) {
    case 'proposal':
      return candidateFor(task, memberId);
    case 'review':
      return reviewsFor(task, memberId, b);
    case 'conflict-map':
      return conflictMapFor(task, round, b.extraConflicts ? b.extraConflicts(task, round) : []);
    case 'frame-check':
      return b.frame ? b.frame(task, memberId, round) : { frame_check_id: `fc-${round}`, result: 'frame-holds' };
    case 'revision':
      return revisionFor(task, b);
    case 'synthesis':
      return decisionFor(task, b.decision ? b.decision(task) : {});
    default: {
      const _exhaustive: never = task.stage;
      return _exhaustive;
    }
  }
}

/** A CouncilMember driven by a script, counting the requests it receives per task id. */
export class ScriptedMember {
  readonly member: CouncilMember;
  /** Requests received per task id: a restarted controller must never resend an answered task. */
  readonly requests = new Map<string, number>();
  readonly tasks: CouncilTask[] = [];
  readonly verdicts: { task: CouncilTask; verdict: CouncilVerdict }[] = [];
  /** Cancel notices received (the run ended, or the stage went on without the task). */
  readonly cancels: CancelNotice[] = [];
  /** Why each abandoned handler's signal aborted, by task id. */
  readonly aborted = new Map<string, string>();
  private waiters: { test: () => boolean; resolve: () => void }[] = [];
  private release!: () => void;
  private readonly stopped = new Promise<void>((r) => (this.release = r));

  constructor(
    nc: NatsConnection,
    readonly memberId: string,
    readonly behaviour: ScriptedBehaviour = {},
    prefix?: string,
    /** Signs its answers as `memberId` where the service requires authentication. */
    signer?: CouncilMemberOptions['signer'],
  ) {
    const answer = async (task: CouncilTask, ctx: { signal: AbortSignal; reportUsage(u: Usage): void }) => {
      ctx.signal.addEventListener('abort', () => {
        this.aborted.set(task.task_id, String((ctx.signal.reason as Error)?.message ?? ctx.signal.reason));
        this.notify();
      });
      this.requests.set(task.task_id, (this.requests.get(task.task_id) ?? 0) + 1);
      this.tasks.push(task);
      this.notify();
      const delay = typeof behaviour.delayMs === 'function' ? behaviour.delayMs(task) : (behaviour.delayMs ?? 0);
      // Silent: hold the task until the member stops; the reply is then never sent.
      if (behaviour.silent?.(task)) return this.stopped;
      if (delay > 0) await new Promise((r) => setTimeout(r, delay));
      await behaviour.hold?.(task);
      if (behaviour.usage) ctx.reportUsage(behaviour.usage);
      if (behaviour.fail?.(task)) throw new Error(`${memberId} failed on ${task.stage} (scripted)`);
      if (behaviour.malformed?.(task)) return { position: `${memberId} forgot everything else` };
      return scriptedArtifact(task, memberId, behaviour);
    };
    this.member = new CouncilMember({
      nc,
      memberId,
      prefix,
      signer,
      maxRetries: 0,
      onVerdict: (task, verdict) => {
        this.verdicts.push({ task, verdict });
        this.notify();
      },
      onCancel: (notice) => {
        this.cancels.push(notice);
        this.notify();
      },
    });
    for (const stage of ['proposal', 'review', 'conflict-map', 'frame-check', 'revision', 'synthesis'] as const)
      this.member.on(stage, answer);
  }

  start(): this {
    this.member.start();
    return this;
  }

  /** Resolves once the member consumes its task queue. */
  get ready(): Promise<void> {
    return this.member.ready;
  }

  async stop(): Promise<void> {
    // Abandons held tasks first (back to the queue), then lets the silent handlers go.
    const stopped = this.member.stop();
    this.release();
    await stopped;
  }

  /** Resolves once `test` holds (checked on every task and verdict), or rejects at the deadline. */
  until(test: () => boolean, timeoutMs = 10_000, what = 'condition'): Promise<void> {
    if (test()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${this.memberId}: timed out after ${timeoutMs} ms waiting for ${what}`)), timeoutMs);
      this.waiters.push({ test, resolve: () => (clearTimeout(timer), resolve()) });
    });
  }

  /** Like `until`, for a condition over several members: re-checked on any member's task or verdict. */
  static until(members: readonly ScriptedMember[], test: () => boolean, timeoutMs = 10_000, what = 'condition'): Promise<void> {
    if (test()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const waiter = { test, resolve: () => done(() => resolve()) };
      const timer = setTimeout(() => done(() => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`))), timeoutMs);
      const done = (settle: () => void) => {
        clearTimeout(timer);
        for (const m of members) m.waiters = m.waiters.filter((w) => w !== waiter);
        settle();
      };
      for (const m of members) m.waiters.push(waiter);
    });
  }

  private notify(): void {
    this.waiters = this.waiters.filter((w) => (w.test() ? (w.resolve(), false) : true));
  }
}

/* Behaviours the tests, the demo and the benchmark use. */

/** One high-impact objection in round 1, fixed in round 2, better scores each round: a clean run. */
export function cleanBehaviour(extra: ScriptedBehaviour = {}): ScriptedBehaviour {
  return { issues: (_r, round) => (round === 1 ? [highIssue()] : []), score: (_r, round) => 2 + round, ...extra };
}

/** A new objection every round and rising scores: only the round budget stops it. */
export function relentlessBehaviour(extra: ScriptedBehaviour = {}): ScriptedBehaviour {
  let n = 0;
  return { issues: () => [highIssue(`new objection ${++n}`)], score: (_r, round) => 2 + round, ...extra };
}

/** Revisions that flip between two positions (A→B→A), under a new objection every round. */
export function oscillatingBehaviour(extra: ScriptedBehaviour = {}): ScriptedBehaviour {
  const positions = ['Position B: big-bang cutover', 'Position A: two phases'];
  return relentlessBehaviour({ score: (_r, round) => round, revisedPosition: (_p, version) => positions[(version + 1) % 2], ...extra });
}

/** The moderator (or chair) names an unresolved value conflict only the owner can settle. */
export function valueConflictBehaviour(extra: ScriptedBehaviour = {}): ScriptedBehaviour {
  return cleanBehaviour({
    extraConflicts: (task) => [
      {
        conflict_id: 'conflict-value-01',
        type: 'value',
        positions: [(task.inputs['candidates'] as BlindCandidate[])[0].candidate_ref],
        description: 'speed of delivery vs auditability',
        value_owner: task.goal_contract.decision_owner,
        decision_impact: 'high',
        status: 'unresolved',
      },
    ],
    ...extra,
  });
}

/** A frame observer that challenges the first GoalContract it sees and accepts any revision. */
export function frameChallengerBehaviour(initialGoalContractId: string): ScriptedBehaviour {
  return {
    frame: (task, memberId, round) =>
      task.goal_contract.goal_contract_id === initialGoalContractId
        ? {
            frame_check_id: `fc-${round}`,
            result: 'frame-challenge',
            assumed_frame: 'billing is an engineering question',
            excluded: { kind: 'stakeholder', description: 'finance auditors' },
            evidence_refs: ['ev-incident-2026-07'],
            reversal_signal: 'auditors accept the ledger',
            re_entry_action: 'add auditor sign-off to success criteria',
          }
        : { frame_check_id: `fc-${round}`, result: 'frame-holds' },
  };
}

/* Descriptors and a goal contract for scripted panels. */

export function scriptedDescriptor(
  memberId: string,
  lens: string,
  councilRoles?: CouncilRole[],
  group = `group-${memberId}`,
): MemberDescriptor {
  const m: MemberDescriptor = {
    member_id: memberId,
    model_family: 'scripted',
    provider_runtime: 'conclave-sdk',
    role: lens,
    role_contract: `Argue as ${lens}`,
    context_scope: 'goal contract and assigned inputs only',
    memory_scope: 'none',
    tools: [],
    independence_group: group,
  };
  if (councilRoles) m.council_roles = councilRoles;
  return m;
}

export function scriptedGoalContract(overrides: Partial<GoalContract> = {}): GoalContract {
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
    budget: { max_rounds: 3, max_time: '5m' },
    ...overrides,
  };
}

/** Three proposers with different lenses and a separate chair; optionally a frame observer. */
export function scriptedPanel(opts: { proposers?: string[]; chair?: string; frameObserver?: string } = {}): MemberDescriptor[] {
  const lenses = ['builder', 'skeptic', 'operator', 'economist', 'security'];
  const proposers = opts.proposers ?? ['member-builder-01', 'member-skeptic-01', 'member-operator-01'];
  const panel = proposers.map((id, i) => scriptedDescriptor(id, lenses[i % lenses.length]));
  panel.push(scriptedDescriptor(opts.chair ?? 'member-chair-01', 'chair', ['chair']));
  if (opts.frameObserver) panel.push(scriptedDescriptor(opts.frameObserver, 'outsider', ['frame-observer']));
  return panel;
}
