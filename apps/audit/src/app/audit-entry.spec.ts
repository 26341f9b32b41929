import type { StoredEvent } from '@conclave/event-log';
import { auditContentOf } from './audit-entry';

const stored = (event: object, stream = 'proposal-P1', position = '1'): StoredEvent =>
  ({ stream, category: stream.split('-')[0], event, position, version: '1', endOfCommit: true }) as unknown as StoredEvent;

describe('audit entry content (14.6: actor, action, proposal id, timestamp, payload hash)', () => {
  it('a submission records its payload hash, and every later event of the proposal carries it', () => {
    const hashes = new Map<string, string>();
    const submitted = auditContentOf(
      stored({ event_id: 'E1', type: 'ProposalSubmitted', actor: 'a', occurred_at: 't1', data: { proposal_id: 'P1', payload_hash: 'h' } }),
      hashes,
    );
    expect(submitted).toEqual({
      actor: 'a',
      action: 'ProposalSubmitted',
      outcome: 'recorded',
      proposal_id: 'P1',
      timestamp: 't1',
      payload_hash: 'h',
      stream: 'proposal-P1',
      source_id: 'E1',
      position: '1',
    });
    const response = auditContentOf(
      stored({ event_id: 'E2', type: 'ResponseRecorded', actor: 'b', occurred_at: 't2', data: { proposal_id: 'P1' } }, 'proposal-P1', '2'),
      hashes,
    );
    expect(response).toMatchObject({ actor: 'b', action: 'ResponseRecorded', payload_hash: 'h' });
  });

  it('a rejection is `rejected:<command>` with its error and the request body hash', () => {
    const c = auditContentOf(
      stored(
        {
          event_id: 'E3',
          type: 'CommandRejected',
          actor: 'm',
          occurred_at: 't3',
          data: { command: 'respond', proposal_id: 'P1', body_hash: 'bh', error: { code: 'FORBIDDEN', message: 'no', field: 'domain' } },
        },
        'EVT_REJECTIONS',
      ),
      new Map(),
    );
    expect(c).toMatchObject({
      action: 'rejected:respond',
      outcome: 'rejected',
      actor: 'm',
      payload_hash: 'bh',
      error: { code: 'FORBIDDEN', message: 'no', field: 'domain' },
    });
  });

  it('registry and other events are recorded with their actor and no proposal', () => {
    const c = auditContentOf(
      stored({ event_id: 'E4', type: 'DomainGranted', actor: 'admin', occurred_at: 't4', data: { participant_id: 'x' } }, 'participant-x'),
      new Map(),
    );
    expect(c).toMatchObject({ action: 'DomainGranted', actor: 'admin', proposal_id: null, payload_hash: null });
  });
});
