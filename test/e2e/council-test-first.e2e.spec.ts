import type { EventLog } from '@conclave/event-log';
import { EVENT_LOG } from '@conclave/service-kit';
import {
  CouncilEvent,
  MemberDescriptor,
  RunRecord,
  StartedRun,
  buildRunRecord,
  councilRunStream,
  foldRun,
} from '@conclave/council-protocol';
import { CouncilTask } from '@conclave/sdk';
import { ScriptedMember, ScriptedTestResults, scriptedDescriptor, scriptedGoalContract } from '@conclave/sdk/testing';
import { CouncilHarness } from '../support/council-harness';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * Test-first elimination end to end on apps/council (15.1, 15.2, 15 MUST): reviewers report the
 * executable tests they ran with their reviews, the checkpoint eliminates the candidate that
 * failed before ranking, the decision does not choose it and the records say why; a rebuild
 * from the log gives the same record.
 */
describe('council:L4 test-first elimination end to end (apps/council over NATS)', () => {
  const c = new CouncilHarness();
  const owner = 'human-owner';
  const chair = 'tf-chair';
  const proposers = ['tf-builder', 'tf-skeptic', 'tf-operator'];
  const panel: MemberDescriptor[] = [
    ...proposers.map((id) => scriptedDescriptor(id, id.slice(3))),
    scriptedDescriptor(chair, 'chair', ['chair']),
  ];
  let members: Record<string, ScriptedMember>;
  /** Scores by blind letter: A 5, B 2, C 4, so without tests Candidate A would win. */
  const byLetter: Record<string, number> = { A: 5, B: 2, C: 4 };
  /** Every reviewer runs the suite: Candidate A fails one test, the others pass. */
  const tests = (ref: string): ScriptedTestResults => ({
    suite_ref: 'ledger-suite@1',
    passed: ref.charAt(5) === 'A' ? 4 : 5,
    failed: ref.charAt(5) === 'A' ? 1 : 0,
    evidence_refs: [`ci-${ref}`],
  });
  /** The chair selects what the checkpoint's aggregation selected (it sees it on the blind surface). */
  const followsAggregation = (task: CouncilTask) => {
    const selected = (task.inputs['aggregation'] as { selected: string }).selected;
    return { selected_path: selected, grounded_in: [selected], decision: `Adopt ${selected}: it passed its tests` };
  };

  beforeAll(async () => {
    await c.start();
    const reviewer = { score: (ref: string) => byLetter[ref.charAt(5)] ?? 3, testResults: tests };
    members = c.join({
      ...Object.fromEntries(proposers.map((id) => [id, reviewer])),
      [chair]: { decision: followsAggregation },
    });
  });
  afterAll(() => c.stop());

  it('the served review schema has test_results, strict, so members know the field', async () => {
    const msg = await c.h.nc.request(`${c.prefix}.v1.schemas`, encoder.encode('{}'), { timeout: 5_000 });
    const reply = JSON.parse(decoder.decode(msg.data)) as {
      schemas: { answers: { review: { properties: { reviews: { items: { properties: Record<string, Record<string, unknown>> } } } } } };
    };
    const field = reply.schemas.answers.review.properties.reviews.items.properties['test_results'];
    expect(field).toMatchObject({ additionalProperties: false, required: ['suite_ref', 'passed', 'failed', 'evidence_refs'] });
  });

  it('reviewers report that Candidate A fails a test: A is eliminated before ranking, the decision chooses C, the records say why, and a rebuild from the log agrees', async () => {
    const runId = await c.client.start({
      goal_contract: scriptedGoalContract({ goal_contract_id: 'gc-tf-1', domain: 'payments.migrations' }),
      panel,
      policy: { level: 'council:L4', aggregation: { method: 'test-first-elimination', then: 'borda' }, stage_timeout_ms: 5_000 },
      run_id: 'tf_run_1',
    });
    await c.decisions.waitFor(runId);
    const r: RunRecord = await c.client.get(runId, owner);
    const idOf = (label: string) => r.lineage.find((l) => l.label === label)?.versions[0] as string;
    const [a, cc] = [idOf('Candidate A'), idOf('Candidate C')];

    // The reviews carry the results as sent, in the ReviewSubmitted events the record is built from.
    const reviewsOfA = r.artifacts.reviews.filter((x) => x.target_candidate_id === a);
    expect(reviewsOfA).toHaveLength(2);
    for (const x of reviewsOfA) expect(x.test_results).toEqual(tests('anon-A-v1'));

    // The checkpoint eliminated A, naming the reviews and the evidence, and selected C.
    const cp = r.checkpoints[0];
    const reason = `failed 2 executable test(s) (passed 8; reported by ${reviewsOfA
      .map((x) => x.review_id)
      .sort()
      .join(', ')}; evidence ci-anon-A-v1)`;
    expect(cp.aggregation).toMatchObject({ method: 'test-first-elimination', selected: cc, eliminated: [{ candidate_id: a, reason }] });
    expect(cp.aggregation?.explanation.signals).toContain('executable-tests');

    // The chair saw it by blind refs; the decision does not choose A and says why.
    const task = members[chair].tasks.find((t) => t.run_id === runId && t.stage === 'synthesis');
    const seen = task?.inputs['aggregation'] as { selected: string; eliminated: { candidate_id: string; reason: string }[] };
    expect(seen.selected).toBe('anon-C-v1');
    expect(seen.eliminated[0].candidate_id).toBe('anon-A-v1');
    expect(JSON.stringify(task?.inputs)).not.toContain('tf-');
    expect(r.decision_record?.selected_path).toBe(cc);
    expect(r.decision_record?.rejected).toContainEqual({ artifact: a, reason: `eliminated by executable tests: ${reason}` });
    expect(r.terminal?.terminal_state).toMatch(/^decided/);

    // A rebuild from the log gives the same RunRecord.
    const log = c.h.instances[0].app.get<EventLog<CouncilEvent>>(EVENT_LOG);
    const stream = await log.read(councilRunStream(runId));
    const rebuilt = buildRunRecord(foldRun(stream.events.map((e) => e.event)) as StartedRun);
    expect(rebuilt).toEqual(r);
  });
});
