import {
  COUNCIL_COMMAND_TYPES as C,
  CouncilError,
  CouncilEvent,
  CouncilRunState,
  EMPTY_RUN,
  StartedRun,
  acceptMemberAnswer,
  blindCandidateRef,
  currentCandidateIds,
  decide,
  decideNext,
  evolveRun,
} from '@conclave/council-protocol';
import { CouncilTask } from './council-member';
import { ScriptedBehaviour, scriptedArtifact, scriptedGoalContract, scriptedPanel } from './scripted-members';

const T0 = '2026-08-03T10:00:00.000Z';

/**
 * The SDK's scripted members answering the pure controller the way the service does
 * (acceptMemberAnswer stamps the content, then decide): no NATS, one clock instant.
 */
describe('the SDK’s default scripted chair (@conclave/sdk/testing) against the controller', () => {
  it('given a test-first run whose reviewers report that the first candidate the chair is shown fails a test, when the default chair answers, then the controller refuses it with the code ELIMINATED_BY_TESTS at selected_path', () => {
    let state: CouncilRunState = EMPTY_RUN;
    const append = (events: CouncilEvent[]) => events.forEach((e) => (state = evolveRun(state, e)));
    append(
      decide(
        {
          type: C.StartRun,
          run_id: 'run-sdk-chair',
          goal_contract: scriptedGoalContract({ domain: 'payments.migrations' }),
          panel: scriptedPanel(),
          policy: { level: 'council:L4', aggregation: { method: 'test-first-elimination', then: 'borda' } },
          seed: 'seed-1',
          actor: 'human-owner',
          now: T0,
        },
        state,
      ),
    );
    // The candidate the chair is shown first: the first lineage's, by its blind ref.
    const firstShown = () => blindCandidateRef(state as StartedRun, currentCandidateIds(state as StartedRun)[0]);
    const reviewer: ScriptedBehaviour = {
      testResults: (ref) => ({
        suite_ref: 'ledger-suite@1',
        passed: 4,
        failed: ref === firstShown() ? 1 : 0,
        evidence_refs: [`ci-${ref}`],
      }),
    };

    let synthesis: CouncilTask | undefined;
    for (let step = 0; step < 50 && synthesis === undefined; step++) {
      const actions = decideNext(state, T0);
      if (actions.length === 0) break;
      append(actions.map((a) => a.event));
      for (const action of actions) {
        if (action.kind !== 'IssueTask') continue;
        const task: CouncilTask = action.request;
        if (task.stage === 'synthesis') synthesis = task;
        else {
          const memberId = task.task_id.split(':').pop() as string;
          const artifact = acceptMemberAnswer(state, task.task_id, memberId, scriptedArtifact(task, memberId, reviewer));
          append(decide({ type: C.SubmitTaskResult, task_id: task.task_id, member_id: memberId, artifact, now: T0 }, state));
        }
      }
    }
    if (synthesis === undefined) throw new Error('no synthesis task was issued');

    const failed = firstShown();
    const shown = synthesis.inputs['candidates'] as { candidate_ref: string }[];
    expect(shown[0].candidate_ref).toBe(failed);
    // The checkpoint eliminated it and selected another: a chair following the aggregation could decide.
    const aggregation = synthesis.inputs['aggregation'] as { selected: string | null };
    expect(aggregation.selected).not.toBeNull();
    expect(aggregation.selected).not.toBe(failed);

    const chair = synthesis.task_id.split(':').pop() as string;
    const answer = scriptedArtifact(synthesis, chair, {});
    expect(answer).toMatchObject({ selected_path: failed });
    // The answer is well-formed (the schema accepts it): the controller's rule refuses it.
    const artifact = acceptMemberAnswer(state, synthesis.task_id, chair, answer);
    let refused: unknown;
    try {
      decide({ type: C.SubmitTaskResult, task_id: synthesis.task_id, member_id: chair, artifact, now: T0 }, state);
    } catch (e) {
      refused = e;
    }
    expect(refused).toBeInstanceOf(CouncilError);
    expect((refused as CouncilError).toJSON()).toMatchObject({ code: 'ELIMINATED_BY_TESTS', field: 'selected_path' });
  });
});
