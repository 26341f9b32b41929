import { CandidateArtifact, parseCandidateArtifact } from './candidate-artifact';
import { ConflictMap, parseConflictMap } from './conflict-map';
import { COUNCIL_LEVELS, CouncilLevel, TERMINAL_STATES, levelNumber } from './contracts';
import { DecisionRecord, NO_DECISION, SYNTHESIS, parseDecisionRecord } from './decision-record';
import { CouncilError } from './errors';
import { FrameCheck, parseFrameCheck } from './frame-check';
import { GoalContract, parseGoalContract } from './goal-contract';
import { independenceViolations, stringsIn } from './independent-proposal';
import { MemberDescriptor, parseMemberDescriptor } from './member-descriptor';
import { ReviewArtifact, parseReviewArtifact, reviewIssueId } from './review-artifact';
import { parseRevisionArtifact, RevisionResponse } from './revision-artifact';
import { mentionsMemberId } from './review-and-anonymity';
import { runRecordSchemaProblems } from './run-record-schema';
import { isRecord } from './validation';

export const RUN_RECORD_PROBLEM_CODES = [
  'SCHEMA_VIOLATION',
  'MISSING_SECTION',
  'LINEAGE_MISMATCH',
  'INDEPENDENCE_NOT_SHOWN',
  'INDEPENDENCE_VIOLATION',
  'MISSING_ANONYMIZATION',
  'AUTHOR_ID_IN_REVIEW_INPUTS',
  'SELF_REVIEW',
  'UNKNOWN_REFERENCE',
  'UNANSWERED_ISSUE',
  'UNKNOWN_PARTICIPANT',
  'CONTROLLER_NOT_DISTINCT',
  'BUDGET_EXCEEDED',
  'UNREFERENCED_CLAIM',
  'TOO_FEW_CANDIDATES',
  'MISSING_CONFLICT_MAP',
  'MISSING_TERMINAL_STATE',
  'TERMINAL_STATE_MISMATCH',
] as const;
export type RunRecordProblemCode = (typeof RUN_RECORD_PROBLEM_CODES)[number];

export interface RunRecordProblem {
  code: RunRecordProblemCode;
  path: string;
  message: string;
}

export interface RunRecordReport {
  valid: boolean;
  level: CouncilLevel | null;
  terminal_state: string | null;
  counts: { candidates: number; revisions: number; reviews: number; conflict_maps: number; frame_checks: number };
  problems: RunRecordProblem[];
}

/**
 * Spec 19.1 and checklist item 16: check a RunRecord produced without a Council service (one
 * agent in separated phases, or an exported service run), offline. Never throws: every defect
 * becomes a problem with a code and the path of the offending field.
 */
export function validateRunRecord(json: unknown): RunRecordReport {
  const problems: RunRecordProblem[] = [];
  // One problem per code and field: the level's schema and the rules below may see the same gap.
  const add = (code: RunRecordProblemCode, path: string, message: string) => {
    if (!problems.some((p) => p.code === code && p.path === path)) problems.push({ code, path, message });
  };
  const report = (level: CouncilLevel | null, terminal: string | null, counts: RunRecordReport['counts']): RunRecordReport => ({
    valid: problems.length === 0,
    level,
    terminal_state: terminal,
    counts,
    problems,
  });
  const emptyCounts = { candidates: 0, revisions: 0, reviews: 0, conflict_maps: 0, frame_checks: 0 };

  let input: unknown = json;
  if (typeof json === 'string') {
    try {
      input = JSON.parse(json);
    } catch {
      add('SCHEMA_VIOLATION', '(root)', 'not valid JSON');
      return report(null, null, emptyCounts);
    }
  }
  if (!isRecord(input)) {
    add('SCHEMA_VIOLATION', '(root)', 'a RunRecord is a JSON object');
    return report(null, null, emptyCounts);
  }
  const rec = input;

  /** Parse with a validator; record its typed error as a problem instead of throwing. */
  function parseAt<T>(path: string, value: unknown, parse: (v: unknown, p: string) => T): T | undefined {
    try {
      return parse(value, path);
    } catch (e) {
      if (e instanceof CouncilError) add('SCHEMA_VIOLATION', e.field ?? path, e.message);
      else add('SCHEMA_VIOLATION', path, String(e));
      return undefined;
    }
  }
  function list(key: string, within: Record<string, unknown> = rec, base = ''): unknown[] {
    const v = within[key];
    const path = base ? `${base}.${key}` : key;
    if (v === undefined) {
      add('MISSING_SECTION', path, 'missing');
      return [];
    }
    if (!Array.isArray(v)) {
      add('SCHEMA_VIOLATION', path, 'must be an array');
      return [];
    }
    return v;
  }

  // Level
  let level: CouncilLevel | null = null;
  if (typeof rec['level'] === 'string' && (COUNCIL_LEVELS as readonly string[]).includes(rec['level']))
    level = rec['level'] as CouncilLevel;
  else add('SCHEMA_VIOLATION', 'level', `must be one of ${COUNCIL_LEVELS.join(' | ')}`);
  const lvl = level ? levelNumber(level) : 0;
  // What the level requires the record to carry (the RunRecord schema of its level, checklist 22).
  if (level) for (const p of runRecordSchemaProblems(rec, level)) add(p.code, p.path, p.message);

  // Participants (checklist 3)
  const participants = list('participants')
    .map((p, i) => parseAt(`participants[${i}]`, p, parseMemberDescriptor))
    .filter((p): p is MemberDescriptor => p !== undefined);
  if (participants.length === 0) add('MISSING_SECTION', 'participants', 'a run discloses its participants');

  // GoalContract revisions (checklist 1)
  const contracts = list('goal_contract_revisions')
    .map((g, i) => parseAt(`goal_contract_revisions[${i}].goal_contract`, isRecord(g) ? g['goal_contract'] : undefined, parseGoalContract))
    .filter((g): g is GoalContract => g !== undefined);
  if (contracts.length === 0) add('MISSING_SECTION', 'goal_contract_revisions', 'a run names its GoalContract');

  // Artifacts
  const artifacts = isRecord(rec['artifacts']) ? rec['artifacts'] : {};
  if (!isRecord(rec['artifacts'])) add('MISSING_SECTION', 'artifacts', 'missing');
  const candidates: CandidateArtifact[] = [];
  const responsesOf = new Map<string, RevisionResponse[]>();
  list('candidates', artifacts, 'artifacts').forEach((c, i) => {
    const path = `artifacts.candidates[${i}]`;
    const isRevision = isRecord(c) && c['parent_candidate_id'] !== null && c['parent_candidate_id'] !== undefined;
    if (isRevision && lvl >= 2) {
      const r = parseAt(path, c, parseRevisionArtifact);
      if (r) {
        candidates.push(r);
        responsesOf.set(r.candidate_id, r.responses);
      }
    } else {
      const parsed = parseAt(path, c, parseCandidateArtifact);
      if (parsed) candidates.push(parsed);
    }
  });
  const reviews = list('reviews', artifacts, 'artifacts')
    .map((r, i) => parseAt(`artifacts.reviews[${i}]`, r, parseReviewArtifact))
    .filter((r): r is ReviewArtifact => r !== undefined);
  const maps = list('conflict_maps', artifacts, 'artifacts')
    .map((m, i) => parseAt(`artifacts.conflict_maps[${i}]`, m, parseConflictMap))
    .filter((m): m is ConflictMap => m !== undefined);
  const frameChecks = (Array.isArray(artifacts['frame_checks']) ? artifacts['frame_checks'] : [])
    .map((f, i) => parseAt(`artifacts.frame_checks[${i}]`, f, parseFrameCheck))
    .filter((f): f is FrameCheck => f !== undefined);

  const byId = new Map(candidates.map((c) => [c.candidate_id, c]));
  const issueIds = new Set(reviews.flatMap((r) => r.material_issues.map((_, i) => reviewIssueId(r.review_id, i))));

  // Lineage (checklist 6): a revision points to an existing parent of the same author, next version.
  candidates.forEach((c, i) => {
    const path = `artifacts.candidates[${i}]`;
    if (c.parent_candidate_id === null) return;
    const parent = byId.get(c.parent_candidate_id);
    if (!parent) add('LINEAGE_MISMATCH', `${path}.parent_candidate_id`, `parent ${c.parent_candidate_id} is not in the record`);
    else {
      if (parent.author_member_id !== c.author_member_id)
        add('LINEAGE_MISMATCH', `${path}.author_member_id`, 'a revision keeps its parent author');
      if (c.version !== parent.version + 1) add('LINEAGE_MISMATCH', `${path}.version`, `expected version ${parent.version + 1}`);
    }
    (responsesOf.get(c.candidate_id) ?? []).forEach((r, j) => {
      if (!issueIds.has(r.review_issue))
        add('UNKNOWN_REFERENCE', `${path}.responses[${j}].review_issue`, `no review issue ${r.review_issue} in the record`);
    });
  });

  // Artifacts are written by disclosed participants (checklist 3).
  const memberIds = new Set(participants.map((p) => p.member_id));
  if (participants.length > 0) {
    candidates.forEach((c, i) => {
      if (!memberIds.has(c.author_member_id))
        add(
          'UNKNOWN_PARTICIPANT',
          `artifacts.candidates[${i}].author_member_id`,
          `${c.author_member_id} is not a participant of the record`,
        );
    });
    reviews.forEach((r, i) => {
      if (!memberIds.has(r.reviewer_member_id))
        add(
          'UNKNOWN_PARTICIPANT',
          `artifacts.reviews[${i}].reviewer_member_id`,
          `${r.reviewer_member_id} is not a participant of the record`,
        );
    });
  }

  // Revisions answer what was asked (checklist 6, L2+): a response for every requested issue.
  const revisionIndex = new Map(candidates.map((c, i) => [c.candidate_id, i]));
  const revisions = candidates.filter((c) => c.parent_candidate_id !== null);
  if (lvl >= 2) {
    revisions.forEach((c) => {
      if ((responsesOf.get(c.candidate_id) ?? []).length === 0)
        add(
          'UNANSWERED_ISSUE',
          `artifacts.candidates[${revisionIndex.get(c.candidate_id)}].responses`,
          'a revision answers the review issues it was asked about',
        );
    });
    if (revisions.length > 0 && rec['revision_requests'] === undefined)
      add('MISSING_SECTION', 'revision_requests', 'record which issues each revision round asked about');
    (rec['revision_requests'] === undefined ? [] : list('revision_requests')).forEach((round, i) => {
      if (!isRecord(round) || !Array.isArray(round['requests']))
        return add('SCHEMA_VIOLATION', `revision_requests[${i}]`, 'must be {round, requests: [...]}');
      round['requests'].forEach((req: unknown, j: number) => {
        if (!isRecord(req) || typeof req['target_candidate_id'] !== 'string' || !Array.isArray(req['issues']))
          return add('SCHEMA_VIOLATION', `revision_requests[${i}].requests[${j}]`, 'must be {target_candidate_id, issues}');
        const revision = revisions.find((c) => c.parent_candidate_id === req['target_candidate_id']);
        // No revision at all is a failure of its author (recorded under failures), not a silent answer.
        if (!revision) return;
        const answered = new Set((responsesOf.get(revision.candidate_id) ?? []).map((r) => r.review_issue));
        for (const issue of req['issues']) {
          const id = isRecord(issue) ? issue['issue_id'] : undefined;
          if (typeof id === 'string' && !answered.has(id))
            add(
              'UNANSWERED_ISSUE',
              `artifacts.candidates[${revisionIndex.get(revision.candidate_id)}].responses`,
              `requested issue ${id} has no response`,
            );
        }
      });
    });
  }

  // Controller and chair are distinct actors, and hard limits held (checks 9 and 10, L3+).
  if (lvl >= 3) {
    // Budgets, timing, policy, controller decisions, rounds, checkpoints, failures: the L3 schema.
    const policy = isRecord(rec['policy']) ? rec['policy'] : undefined;
    const controller =
      typeof rec['controller_id'] === 'string'
        ? rec['controller_id']
        : policy && typeof policy['controller_id'] === 'string'
          ? policy['controller_id']
          : undefined;
    if (controller === undefined) add('MISSING_SECTION', 'controller_id', 'a council:L3 record names its controller');
    else if (memberIds.has(controller)) add('CONTROLLER_NOT_DISTINCT', 'controller_id', `the controller ${controller} is a panel member`);
    const budgets = isRecord(rec['budgets']) ? rec['budgets'] : undefined;
    const usage = budgets && isRecord(budgets['usage']) ? budgets['usage'] : undefined;
    const maxRounds = contracts.length ? contracts[contracts.length - 1].budget.max_rounds : undefined;
    if (usage && typeof usage['rounds'] === 'number' && maxRounds !== undefined && usage['rounds'] > maxRounds) {
      add('BUDGET_EXCEEDED', 'budgets.usage.rounds', `${usage['rounds']} rounds for a budget of ${maxRounds}`);
    }
  }

  // Reviews target run candidates, never their author's own (11.3).
  reviews.forEach((r, i) => {
    const target = byId.get(r.target_candidate_id);
    if (!target)
      add('UNKNOWN_REFERENCE', `artifacts.reviews[${i}].target_candidate_id`, `${r.target_candidate_id} is not a candidate of the record`);
    else if (target.author_member_id === r.reviewer_member_id)
      add('SELF_REVIEW', `artifacts.reviews[${i}]`, 'a member reviewed its own candidate');
  });

  // Independence (checklist 2): proposal inputs show no other candidate.
  const tasks = Array.isArray(rec['tasks']) ? rec['tasks'] : [];
  const proposalTasks = tasks.map((t, i) => ({ t, i })).filter(({ t }) => isRecord(t) && t['stage'] === 'proposal') as {
    t: Record<string, unknown>;
    i: number;
  }[];
  const initial = candidates.filter((c) => c.parent_candidate_id === null);
  if (initial.length > 0 && proposalTasks.length === 0) {
    add('INDEPENDENCE_NOT_SHOWN', 'tasks', 'record the inputs of each proposal phase (stage "proposal") so independence can be checked');
  }
  for (const { t, i } of proposalTasks) {
    // A single agent records which candidate each phase produced (`candidate_id`); a service
    // run has one member per candidate, so the author identifies the phase.
    const own = t['candidate_id'];
    const others =
      typeof own === 'string'
        ? initial.filter((c) => c.candidate_id !== own)
        : initial.filter((c) => c.author_member_id !== t['member_id']);
    const leaked = independenceViolations(t['inputs'], others);
    if (leaked.length)
      add(
        'INDEPENDENCE_VIOLATION',
        `tasks[${i}].inputs`,
        `proposal inputs reference ${leaked.join(', ')} before the proposal stage closed`,
      );
  }

  // Blind review (checklist 4, L1+): mapping kept, and no author id on the blind surface.
  if (lvl >= 1 && reviews.length > 0) {
    const anon = isRecord(rec['anonymization']) ? rec['anonymization'] : undefined;
    const mapping = anon && Array.isArray(anon['mapping']) ? anon['mapping'] : [];
    const mapped = new Set(mapping.filter(isRecord).map((m) => m['author_member_id']));
    const authors = [...new Set(initial.map((c) => c.author_member_id))];
    const unmapped = authors.filter((a) => !mapped.has(a));
    if (mapping.length === 0 || unmapped.length)
      add(
        'MISSING_ANONYMIZATION',
        'anonymization.mapping',
        `blind review needs the label mapping for every author${unmapped.length ? ` (missing: ${unmapped.join(', ')})` : ''}`,
      );
    tasks.forEach((t, i) => {
      if (!isRecord(t) || t['stage'] !== 'review') return;
      const text = stringsIn(t['inputs']);
      const leaked = authors.filter((a) => text.some((s) => mentionsMemberId(s, a)));
      if (leaked.length) add('AUTHOR_ID_IN_REVIEW_INPUTS', `tasks[${i}].inputs`, `review inputs name ${leaked.join(', ')}`);
    });
  }

  // Terminal state (17.4) and minimum content (L0: candidates, conflict map, decision).
  const terminal = isRecord(rec['terminal']) ? rec['terminal'] : undefined;
  const terminalState = terminal && typeof terminal['terminal_state'] === 'string' ? terminal['terminal_state'] : null;
  if (terminalState === null || !(TERMINAL_STATES as readonly string[]).includes(terminalState)) {
    add('MISSING_TERMINAL_STATE', 'terminal.terminal_state', `must be one of ${TERMINAL_STATES.join(' | ')}`);
  }
  const failed = terminalState === 'failed-below-quorum';
  if (!failed && new Set(initial.map((c) => `${c.author_member_id}/${c.candidate_id}`)).size < 2) {
    add('TOO_FEW_CANDIDATES', 'artifacts.candidates', 'a Council compares at least two independent candidates');
  }
  if (!failed && maps.length === 0)
    add('MISSING_CONFLICT_MAP', 'artifacts.conflict_maps', 'disagreement is classified in a conflict map (council:L0)');

  // Decision grounding (section 14, checklist 15).
  const known = new Set<string>([
    ...candidates.map((c) => c.candidate_id),
    ...reviews.map((r) => r.review_id),
    ...issueIds,
    ...maps.flatMap((m) => [m.conflict_map_id, ...m.conflicts.map((c) => c.conflict_id)]),
    ...frameChecks.map((f) => f.frame_check_id),
    ...contracts.flatMap((g) => [g.goal_contract_id, ...g.evidence_set]),
    ...candidates.flatMap((c) => [
      ...c.evidence_refs,
      ...c.claims.flatMap((cl) => (typeof cl === 'string' ? [] : (cl.evidence_refs ?? []))),
    ]),
    ...reviews.flatMap((r) => r.material_issues.flatMap((m) => m.evidence_refs)),
  ]);
  let decision: DecisionRecord | undefined;
  if (rec['decision_record'] !== null && rec['decision_record'] !== undefined)
    decision = parseAt('decision_record', rec['decision_record'], parseDecisionRecord);
  else if (!failed && terminalState !== 'budget-exhausted-best-checkpoint')
    add('MISSING_SECTION', 'decision_record', `a ${terminalState ?? 'finished'} run carries its DecisionRecord`);
  if (decision) {
    const d = decision;
    const check = (ref: string, path: string) => {
      if (!known.has(ref)) add('UNREFERENCED_CLAIM', path, `${ref} is not an artifact of this run`);
    };
    if (d.selected_path !== NO_DECISION && d.selected_path !== SYNTHESIS && !byId.has(d.selected_path))
      add('UNREFERENCED_CLAIM', 'decision_record.selected_path', `${d.selected_path} is not a candidate of this run`);
    d.grounded_in.forEach((r, i) => check(r, `decision_record.grounded_in[${i}]`));
    d.incorporated.forEach((r, i) => check(r, `decision_record.incorporated[${i}]`));
    d.rejected.forEach((r, i) => check(r.artifact, `decision_record.rejected[${i}].artifact`));
    if (d.selected_path !== NO_DECISION && d.grounded_in.length === 0)
      add('UNREFERENCED_CLAIM', 'decision_record.grounded_in', 'a decision is grounded in at least one artifact');
    const lastContract = contracts[contracts.length - 1];
    if (lastContract && d.goal_contract_id !== lastContract.goal_contract_id)
      add('UNKNOWN_REFERENCE', 'decision_record.goal_contract_id', `the last GoalContract is ${lastContract.goal_contract_id}`);
    // The owner's value choice (8.5) settles the value conflicts it names when it adopts the decision.
    const choice = isRecord(rec['value_choice']) ? rec['value_choice'] : undefined;
    const settled = new Set(
      choice && choice['outcome'] === 'approved' && Array.isArray(choice['conflict_ids']) ? (choice['conflict_ids'] as unknown[]) : [],
    );
    const valueOpen =
      maps.length > 0 &&
      maps[maps.length - 1].conflicts.some((c) => c.type === 'value' && c.status === 'unresolved' && !settled.has(c.conflict_id));
    if (
      valueOpen &&
      terminalState !== 'needs-human-value-choice' &&
      terminalState !== 'failed-below-quorum' &&
      terminalState !== 'budget-exhausted-best-checkpoint'
    ) {
      add(
        'TERMINAL_STATE_MISMATCH',
        'terminal.terminal_state',
        'an unresolved value conflict returns to the human owner: needs-human-value-choice',
      );
    }
    if (terminalState === 'decided' && d.unresolved_dissent.length > 0)
      add('TERMINAL_STATE_MISMATCH', 'terminal.terminal_state', 'a decision with unresolved dissent is decided-with-dissent');
    if (terminalState === 'decided-with-dissent' && d.unresolved_dissent.length === 0)
      add('TERMINAL_STATE_MISMATCH', 'terminal.terminal_state', 'decided-with-dissent names its dissent');
    if ((terminalState === 'decided' || terminalState === 'decided-with-dissent') && d.selected_path === NO_DECISION)
      add('TERMINAL_STATE_MISMATCH', 'decision_record.selected_path', `a ${terminalState} run selects a path`);
    if (terminalState === 'abstained-insufficient-evidence' && d.selected_path !== NO_DECISION)
      add('TERMINAL_STATE_MISMATCH', 'decision_record.selected_path', 'an abstention selects no-decision');
  }

  return report(level, terminalState, {
    candidates: initial.length,
    revisions: candidates.length - initial.length,
    reviews: reviews.length,
    conflict_maps: maps.length,
    frame_checks: frameChecks.length,
  });
}
