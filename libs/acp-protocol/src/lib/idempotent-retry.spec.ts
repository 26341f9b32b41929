/**
 * 14.4 / 5.3 with retries: an agent that timed out resends the same request. The edge gives it a
 * new command id and a new `now`; the decider compares what the agent sent with what is recorded.
 */
import { P2, at, challenge, endorse, submit } from '../testing/fixtures';
import { given } from '../testing/given-when-then';
import { isSameSubmission } from './idempotent-retry';
import { foldProposal } from './proposal.state';
import { history } from '../testing/given-when-then';

const F = { domain_authority: 0.9, confidence: 0.8, trust_score: 0.7 };

describe('14.4 a retried proposal', () => {
  it('given a recorded proposal, when its author sends it again with a new command id and time, then nothing happens', () => {
    given([submit({ caused_by: [P2] })])
      .when(submit({ caused_by: [P2] }, { now: at(30) }))
      .thenNothingHappened();
  });

  it('given a recorded proposal, when the same id comes with another payload, quorum or cause, then DUPLICATE_PROPOSAL_ID', () => {
    const recorded = [submit()];
    given(recorded)
      .when(submit({ payload: { other: true } }))
      .thenThrows('DUPLICATE_PROPOSAL_ID', 'proposal_id');
    given(recorded)
      .when(submit({ quorum: 3 }))
      .thenThrows('DUPLICATE_PROPOSAL_ID', 'proposal_id');
    given(recorded)
      .when(submit({ caused_by: [P2] }))
      .thenThrows('DUPLICATE_PROPOSAL_ID', 'proposal_id');
    given(recorded)
      .when(submit({ created_at: at(1) }))
      .thenThrows('DUPLICATE_PROPOSAL_ID', 'proposal_id');
  });

  it('given a recorded proposal, when someone other than its author sends the same content, then DUPLICATE_PROPOSAL_ID', () => {
    given([submit()])
      .when(submit({}, { actor: 'agent-other' }))
      .thenThrows('DUPLICATE_PROPOSAL_ID', 'proposal_id');
  });

  it('given an auto-resolved observation, when it is sent again, then nothing happens (the retry is not refused for being resolved)', () => {
    given([submit({ type: 'observation' })])
      .when(submit({ type: 'observation' }))
      .thenNothingHappened();
  });

  it('given eligible participants the edge took from the registry, when the retry finds another registry list, then it is still the same proposal', () => {
    const first = submit({
      quorum_policy: { kind: 'unanimous' },
      eligible_participants: ['a', 'b'],
      eligible_participants_source: 'registry',
    });
    const state = foldProposal(history([first]));
    if (state.status === 'initial') throw new Error('not submitted');
    const retry = submit({
      quorum_policy: { kind: 'unanimous' },
      eligible_participants: ['a', 'b', 'c'],
      eligible_participants_source: 'registry',
    });
    expect(isSameSubmission(state.proposal, retry)).toBe(true);
    // an agent that names the list itself sends another proposal
    expect(isSameSubmission(state.proposal, submit({ quorum_policy: { kind: 'unanimous' }, eligible_participants: ['a', 'b'] }))).toBe(
      false,
    );
  });
});

describe('5.3 / 15.3 a retried response', () => {
  it('given a recorded endorsement, when the participant sends it again, then nothing happens', () => {
    given([submit({ quorum: 3 }), endorse('agent-a', F, { reason: 'fine' })])
      .when(endorse('agent-a', F, { reason: 'fine', now: at(20) }))
      .thenNothingHappened();
  });

  it('given the response that met the quorum and the resolution, when it is retried, then nothing happens, not PROPOSAL_NOT_PENDING', () => {
    given([submit({ quorum: 1 }), endorse('agent-a', F)])
      .when(endorse('agent-a', F, { now: at(20) }))
      .thenNothingHappened();
  });

  it('given a recorded response with its time stamp, when the retry names the same time stamp, then nothing happens; another one is a different response', () => {
    const recorded = [submit({ quorum: 3 }), endorse('agent-a', F, { timestamp: at(5) })];
    given(recorded)
      .when(endorse('agent-a', F, { timestamp: at(5), now: at(9) }))
      .thenNothingHappened();
    given(recorded)
      .when(endorse('agent-a', F, { timestamp: at(6) }))
      .thenThrows('DUPLICATE_RESPONSE', 'participant_id');
  });

  it('given a recorded endorsement, when the participant sends another confidence, another reason or a challenge, then DUPLICATE_RESPONSE', () => {
    const recorded = [submit({ quorum: 3 }), endorse('agent-a', F)];
    given(recorded)
      .when(endorse('agent-a', { ...F, confidence: 0.81 }))
      .thenThrows('DUPLICATE_RESPONSE', 'participant_id');
    given(recorded)
      .when(endorse('agent-a', F, { reason: 'changed my mind' }))
      .thenThrows('DUPLICATE_RESPONSE', 'participant_id');
    // the same factors, but a challenge: not a retry of the endorsement; the decider appends nothing
    given(recorded).when(challenge('agent-a', F)).thenThrows('DUPLICATE_RESPONSE', 'participant_id');
  });
});
