import { buildRunRecord, runReaderRole, runRecordFor } from './run-record';
import { validateRunRecord } from './single-agent-council';
import { StartedRun } from './state';
import { defaultBehaviour, drive, goalContract, highIssue, startCommand } from '../testing/council-fixtures';

/**
 * Spec 8.7 and checklist 22, per level: what the offline validator demands of a RunRecord, and
 * what the controller's RunRecord carries so that checks 6, 9 and 10 can be verified offline.
 */
const codes = (rec: unknown) => validateRunRecord(rec).problems.map((p) => `${p.code} ${p.path}`);
const serviceRecord = () => {
  const d = drive(
    startCommand(),
    defaultBehaviour({ issues: (_r, round) => (round === 1 ? [highIssue()] : []), score: (_r, round) => 2 + round }),
  );
  return JSON.parse(JSON.stringify(buildRunRecord(d.state as StartedRun))) as Record<string, unknown>;
};

describe('spec 8.7 RunRecord: what the controller records', () => {
  it('given a controller run, then the record carries the policy, the controller id and the revision requests, and validates', () => {
    const rec = serviceRecord();
    expect(rec['controller_id']).toBe('council-controller');
    expect(rec['policy']).toMatchObject({ level: 'council:L3', controller_id: 'council-controller', min_quorum: 2 });
    const requests = rec['revision_requests'] as { round: number; requests: { issues: { issue_id: string }[] }[] }[];
    expect(requests.map((r) => r.round)).toEqual([2]);
    expect(requests[0].requests).toHaveLength(3);
    expect(requests[0].requests.flatMap((r) => r.issues.map((i) => i.issue_id)).every((id) => /^rev-.*#issue-1$/.test(id))).toBe(true);
    expect(validateRunRecord(rec)).toMatchObject({ valid: true, problems: [] });
  });
});

describe('checklist 22 per level: the offline validator', () => {
  it.each(['budgets', 'timing', 'controller_decisions', 'rounds', 'checkpoints', 'failures', 'policy'])(
    'given a council:L3 record without %s, when validated, then MISSING_SECTION names it',
    (section) => {
      const rec = serviceRecord();
      delete rec[section];
      expect(codes(rec)).toContain(`MISSING_SECTION ${section}`);
    },
  );

  it('given a council:L3 record whose controller is a panel member, when validated, then CONTROLLER_NOT_DISTINCT (check 9)', () => {
    const rec = serviceRecord();
    const member = (rec['participants'] as { member_id: string }[])[3].member_id;
    rec['controller_id'] = member;
    (rec['policy'] as Record<string, unknown>)['controller_id'] = member;
    expect(codes(rec)).toContain('CONTROLLER_NOT_DISTINCT controller_id');
  });

  it('given a council:L3 record with more rounds than its budget, when validated, then BUDGET_EXCEEDED (check 10)', () => {
    const rec = serviceRecord();
    (rec['budgets'] as { usage: { rounds: number } }).usage.rounds = 9;
    expect(codes(rec)).toContain('BUDGET_EXCEEDED budgets.usage.rounds');
  });

  it('given a revision with no responses, when validated, then UNANSWERED_ISSUE for the requested issue (check 6)', () => {
    const rec = serviceRecord();
    const revision = (rec['artifacts'] as { candidates: Record<string, unknown>[] }).candidates.find(
      (c) => c['parent_candidate_id'] !== null,
    ) as Record<string, unknown>;
    revision['responses'] = [];
    expect(codes(rec).some((c) => c.startsWith('UNANSWERED_ISSUE artifacts.candidates['))).toBe(true);
  });

  it('given a council:L2 record with revisions but no revision requests, when validated, then MISSING_SECTION revision_requests', () => {
    const rec = serviceRecord();
    delete rec['revision_requests'];
    expect(codes(rec)).toContain('MISSING_SECTION revision_requests');
  });

  it('given a reviewer or an author who is not a participant, when validated, then UNKNOWN_PARTICIPANT at the field', () => {
    const rec = serviceRecord();
    const artifacts = rec['artifacts'] as { reviews: Record<string, unknown>[]; candidates: Record<string, unknown>[] };
    artifacts.reviews[0]['reviewer_member_id'] = 'someone-else';
    expect(codes(rec)).toContain('UNKNOWN_PARTICIPANT artifacts.reviews[0].reviewer_member_id');
  });

  it('given a decided record whose decision is no-decision, or which has none, when validated, then it is reported', () => {
    const rec = serviceRecord();
    (rec['decision_record'] as Record<string, unknown>)['selected_path'] = 'no-decision';
    expect(codes(rec)).toContain('TERMINAL_STATE_MISMATCH decision_record.selected_path');
    const none = serviceRecord();
    none['decision_record'] = null;
    expect(codes(none)).toContain('MISSING_SECTION decision_record');
  });
});

describe('spec 10 and 11.2 a decision owner who deliberates reads nothing mid-run', () => {
  const ownedBy = (owner: string) => ({ ...startCommand({ goal: goalContract({ decision_owner: owner }) }), actor: owner });
  const midRun = (owner: string) =>
    drive(ownedBy(owner), defaultBehaviour(), { stopWhen: (x) => x.requests.some((r) => r.stage === 'review') }).state as StartedRun;

  it.each([
    ['sits on the panel', 'member-builder-01', 'member'],
    ['chairs the run', 'member-chair-01', 'chair'],
  ] as const)(
    'given a running run whose decision owner %s, when the owner reads it, then NOT_AUTHORIZED_ROLE like a member (no candidates, no author ids)',
    (_how, owner, role) => {
      const st = midRun(owner);
      expect(st.status).toBe('running');
      expect(st.candidate_order.length).toBeGreaterThan(0);
      expect(runReaderRole(st, owner)).toBe(role);
      expect(() => runRecordFor(st, role)).toThrow(expect.objectContaining({ code: 'NOT_AUTHORIZED_ROLE', field: 'run_id' }));
    },
  );

  it("given an ended run whose decision owner sat on the panel, when the owner reads it, then the owner's copy with the mapping", () => {
    const owner = 'member-builder-01';
    const done = drive(ownedBy(owner), defaultBehaviour()).state as StartedRun;
    expect(done.status).toBe('terminated');
    expect(runReaderRole(done, owner)).toBe('owner');
    expect(runRecordFor(done, 'owner').anonymization.mapping).toHaveLength(3);
  });

  it('given a running run, when an owner who does not deliberate reads it, then it reads without the mapping', () => {
    const st = midRun('human-owner');
    expect(runReaderRole(st, 'human-owner')).toBe('owner');
    expect(runRecordFor(st, 'owner').anonymization).toEqual({ restricted: true, withheld: true, mapping: [] });
  });
});
