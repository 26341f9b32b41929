import { CandidateArtifact } from './candidate-artifact';
import { ConflictMap } from './conflict-map';
import { COUNCIL_PROTOCOL_ID, COUNCIL_PROTOCOL_VERSION, CouncilLevel, TerminalState } from './contracts';
import { bestCheckpoint } from './convergence-and-termination';
import { DecisionRecord } from './decision-record';
import { AcpOrigin, AnonymizationEntry, Checkpoint } from './events';
import { degradedModes } from './failure-and-degraded-operation';
import { FrameCheck } from './frame-check';
import { GoalContractBudget } from './goal-contract';
import { MemberDescriptor } from './member-descriptor';
import { ReviewArtifact } from './review-artifact';
import { CouncilPolicy } from './policy';
import {
  ControllerDecisionNote,
  GoalContractRevision,
  MemberFailureRecord,
  RefusalRecord,
  RevisionRequestRecord,
  RoundRecord,
  StartedRun,
} from './state';
import { CouncilError } from './errors';
import { clone, instantMs } from './validation';
import type { ChairSelection } from './evaluation/chair-selection';
import type { StructuredOutcome } from './evaluation/outcomes';
import { runDomain } from './goal-contract';

export interface RunRecordTask {
  task_id: string;
  member_id: string;
  round: number;
  stage: string;
  role?: string;
  issued_at?: string;
  deadline?: string;
  status?: string;
  /** Single-agent records: the candidate this proposal phase produced. */
  candidate_id?: string;
  /** Exactly what the member was shown: the evidence for independence and blindness. */
  inputs: unknown;
}

/**
 * RunRecord (spec 8.7): participants and independence groups, GoalContract revisions, artifact
 * lineage, the anonymisation mapping (restricted), budgets and timing, controller decisions,
 * failures and degraded modes, best checkpoint, final DecisionRecord and later outcomes.
 * A single agent can write one by hand (19.1); `validateRunRecord` checks it offline.
 */
export interface RunRecord {
  run_record_id: string;
  run_id: string;
  protocol: typeof COUNCIL_PROTOCOL_ID;
  protocol_version: string;
  level: CouncilLevel;
  /** The process policy the controller enforced, and who the controller was (checks 9 and 10). */
  policy: CouncilPolicy;
  controller_id: string;
  participants: MemberDescriptor[];
  independence_groups: Record<string, string[]>;
  goal_contract_revisions: GoalContractRevision[];
  artifacts: {
    candidates: CandidateArtifact[];
    reviews: ReviewArtifact[];
    conflict_maps: ConflictMap[];
    frame_checks: FrameCheck[];
  };
  lineage: { lineage_id: string; author_member_id: string; label?: string; versions: string[] }[];
  /** `withheld`: this copy omits the mapping (read by someone other than the owner, or mid-run). */
  anonymization: { restricted: boolean; withheld?: boolean; mapping: AnonymizationEntry[] };
  tasks: RunRecordTask[];
  budgets: { budget: GoalContractBudget; usage: { rounds: number; elapsed_ms: number | null; cost: number; tokens: number } };
  timing: { started_at: string; ended_at: string | null };
  controller_decisions: ControllerDecisionNote[];
  rounds: RoundRecord[];
  /** The issues each revision round asked about (check 6: every one answered). */
  revision_requests: RevisionRequestRecord[];
  checkpoints: Checkpoint[];
  best_checkpoint_id: string | null;
  failures: MemberFailureRecord[];
  /** Answers the controller refused, with the error the member was told (checklist 14). */
  refusals: RefusalRecord[];
  degraded_modes: string[];
  decision_record: DecisionRecord | null;
  terminal: { terminal_state: TerminalState; reason: string; at: string; note?: string } | null;
  outcomes: {
    outcome_id: string;
    observed_at: string;
    summary: string;
    source: string;
    evidence_refs: string[];
    /** council:L5: the structured outcome (15.4). */
    structured?: StructuredOutcome;
  }[];
  /** The GoalContract's domain (`general` when it names none): what history is scoped by. */
  domain?: string;
  /** council:L4: how the chair was chosen (policy, reason, exploration slot, scores). */
  chair_selection?: ChairSelection;
  /** The ACP proposal that asked for this deliberation (the bridge from ACP). */
  acp_origin?: AcpOrigin;
  /** The decision as posted to ACP: who asked, on what authority, the entries' ids. */
  acp_bridge?: StartedRun['acp_bridge'];
  /**
   * The decision owner's value choice (8.5), when the run ended `needs-human-value-choice`:
   * `terminal.terminal_state` is then the state after the choice.
   */
  value_choice?: StartedRun['value_choice'];
}

/** Who reads a run: its decision owner, its chair, a panel member, or an observer the policy names. */
export type RunReader = 'owner' | 'chair' | 'member' | 'observer';

/**
 * A decision owner who also deliberates (on the panel, or as a chair) reads as a member while the
 * run runs: otherwise the owner's copy would show it its rivals' candidates and their authors
 * before it proposes or reviews (spec 10, 11). Once the run has ended it is the owner again.
 */
export function runReaderRole(run: StartedRun, participantId: string): RunReader | null {
  const owner = participantId === run.goal_contract.decision_owner;
  if (owner && run.status === 'terminated') return 'owner';
  if (run.chair_order.includes(participantId)) return 'chair';
  if (run.panel.some((m) => m.member_id === participantId)) return 'member';
  if (owner) return 'owner';
  if (run.policy.observers.includes(participantId)) return 'observer';
  return null;
}

/**
 * The RunRecord as `reader` may see it. The anonymisation mapping (and the labels on lineages,
 * which are the same link) is only in the owner's copy once the run has ended (11.2); panel
 * members and chairs read nothing while the run runs, since the audit surface would defeat
 * independent proposal and blind review (`runReaderRole` makes a deliberating owner one of them).
 */
export function runRecordFor(run: StartedRun, reader: RunReader): RunRecord {
  if (run.status === 'running' && (reader === 'chair' || reader === 'member')) {
    throw new CouncilError(
      'NOT_AUTHORIZED_ROLE',
      'panel members and chairs (a decision owner who deliberates too) read the RunRecord once the run has ended (blind review)',
      'run_id',
    );
  }
  const rec = buildRunRecord(run);
  if (reader === 'owner' && run.status === 'terminated') return rec;
  return {
    ...rec,
    anonymization: { restricted: true, withheld: true, mapping: [] },
    lineage: rec.lineage.map((l) => ({ lineage_id: l.lineage_id, author_member_id: l.author_member_id, versions: l.versions })),
  };
}

/** Project a run into its full RunRecord (the audit surface, mapping included). */
export function buildRunRecord(run: StartedRun): RunRecord {
  const groups: Record<string, string[]> = {};
  for (const m of run.panel) (groups[m.independence_group] ??= []).push(m.member_id);
  const ended = run.status === 'terminated' ? run.terminal.at : null;
  return clone({
    run_record_id: `${run.run_id}:run-record`,
    run_id: run.run_id,
    protocol: COUNCIL_PROTOCOL_ID,
    protocol_version: COUNCIL_PROTOCOL_VERSION,
    level: run.policy.level,
    policy: run.policy,
    controller_id: run.policy.controller_id,
    participants: run.panel,
    independence_groups: groups,
    goal_contract_revisions: run.goal_contract_revisions,
    artifacts: {
      candidates: run.candidate_order.map((id) => run.candidates[id].candidate),
      reviews: run.review_order.map((id) => run.reviews[id].review),
      conflict_maps: run.conflict_maps.map((m) => m.conflict_map),
      frame_checks: run.frame_checks.map((f) => f.frame_check),
    },
    lineage: run.lineage_order.map((id) => {
      const l = run.lineages[id];
      return l.label === undefined
        ? { lineage_id: l.lineage_id, author_member_id: l.author_member_id, versions: l.versions }
        : { lineage_id: l.lineage_id, author_member_id: l.author_member_id, label: l.label, versions: l.versions };
    }),
    anonymization: { restricted: true, mapping: run.anonymization },
    tasks: run.task_order.map((id) => {
      const t = run.tasks[id];
      return {
        task_id: t.task_id,
        member_id: t.member_id,
        round: t.round,
        stage: t.stage,
        role: t.role,
        issued_at: t.issued_at,
        deadline: t.deadline,
        status: t.status,
        inputs: t.inputs,
      };
    }),
    budgets: {
      budget: run.goal_contract.budget,
      usage: {
        rounds: run.round,
        elapsed_ms: ended ? instantMs(ended, 'ended_at') - instantMs(run.started_at, 'started_at') : null,
        cost: run.usage.cost,
        tokens: run.usage.tokens,
      },
    },
    timing: { started_at: run.started_at, ended_at: ended },
    controller_decisions: run.controller_decisions,
    rounds: run.rounds,
    revision_requests: run.revision_requests,
    checkpoints: run.checkpoints,
    best_checkpoint_id: run.status === 'terminated' ? run.terminal.best_checkpoint_id : (bestCheckpoint(run)?.checkpoint_id ?? null),
    failures: run.failures,
    refusals: run.refusals,
    degraded_modes: degradedModes(run),
    decision_record: run.decision?.decision_record ?? null,
    terminal:
      run.status === 'terminated'
        ? {
            terminal_state: run.terminal.terminal_state,
            reason: run.terminal.reason,
            at: run.terminal.at,
            ...(run.terminal.note ? { note: run.terminal.note } : {}),
          }
        : null,
    outcomes: run.outcomes,
    domain: runDomain(run.goal_contract),
    ...(run.chair_selection ? { chair_selection: run.chair_selection } : {}),
    ...(run.acp_origin ? { acp_origin: run.acp_origin } : {}),
    ...(run.acp_bridge ? { acp_bridge: run.acp_bridge } : {}),
    ...(run.value_choice ? { value_choice: run.value_choice } : {}),
  });
}
