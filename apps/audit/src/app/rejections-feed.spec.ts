import { isIdentifiedRejection, REJECTIONS_STREAM_RECREATED, rejectionsRecreatedContent, rejectionsResume } from './rejections-feed';

const record = (id: string, position: string) => ({
  source_id: id,
  action: 'rejected:list',
  actor: 'mallory',
  payload_hash: 'a'.repeat(64),
  position,
});

describe('rejectionsResume: is the rejections stream still the one the chain followed?', () => {
  it('given nothing audited yet, then it starts at the first message', () => {
    expect(rejectionsResume(undefined, { first_seq: 0, last_seq: 0 }, undefined)).toEqual({ recreated: false, from: 1 });
  });

  it('given the record audited at 5 is still at 5, then it resumes at 6', () => {
    const checkpoint = record('01A', '5');
    expect(rejectionsResume(checkpoint, { first_seq: 1, last_seq: 9 }, { ...checkpoint })).toEqual({ recreated: false, from: 6 });
  });

  it('given the stream now ends before the last audited sequence, then it was made again: from 1', () => {
    expect(rejectionsResume(record('01A', '5'), { first_seq: 1, last_seq: 2 }, undefined)).toMatchObject({ recreated: true, from: 1 });
    expect(rejectionsResume(record('01A', '5'), { first_seq: 0, last_seq: 0 }, undefined)).toMatchObject({ recreated: true, from: 1 });
  });

  it('given another record at the last audited sequence (a new stream already past it), then it was made again: from 1, naming both', () => {
    const resume = rejectionsResume(record('01A', '5'), { first_seq: 1, last_seq: 12 }, record('01Z', '5'));
    expect(resume).toMatchObject({ recreated: true, from: 1 });
    expect(resume.recreated && resume.reason).toMatch(/01Z.*01A/);
  });

  it('given a malformed message at the same sequence but other bytes, then it was made again (its id is only its sequence)', () => {
    const malformed = { ...record('malformed-rejection-5', '5'), action: 'rejected:malformed-record', actor: 'unknown' };
    expect(rejectionsResume(malformed, { first_seq: 1, last_seq: 5 }, { ...malformed, payload_hash: 'b'.repeat(64) })).toMatchObject({
      recreated: true,
    });
    expect(rejectionsResume(malformed, { first_seq: 1, last_seq: 5 }, { ...malformed })).toEqual({ recreated: false, from: 6 });
  });

  it('given the audited sequence was purged from the same stream, then it resumes after it (nothing tells it apart)', () => {
    expect(rejectionsResume(record('01A', '5'), { first_seq: 8, last_seq: 9 }, undefined)).toEqual({ recreated: false, from: 6 });
  });

  it('given the last entry is a recreation marker (position 0), then the new stream is followed from its start', () => {
    const marker = rejectionsRecreatedContent('EVT_REJECTIONS', '2026-01-01T00:00:00Z', '2026-01-01T00:00:01Z', 'audit');
    expect(rejectionsResume(marker, { first_seq: 1, last_seq: 3 }, undefined)).toEqual({ recreated: false, from: 1 });
  });
});

describe('the recreation marker and record identity', () => {
  it('names the stream and its creation time, at position 0, recorded by the service', () => {
    expect(rejectionsRecreatedContent('EVT_REJECTIONS', '2026-01-01T00:00:00Z', '2026-01-01T00:00:01Z', 'audit')).toEqual({
      actor: 'audit',
      action: REJECTIONS_STREAM_RECREATED,
      outcome: 'recorded',
      proposal_id: null,
      timestamp: '2026-01-01T00:00:01Z',
      payload_hash: null,
      stream: 'EVT_REJECTIONS',
      source_id: 'EVT_REJECTIONS@2026-01-01T00:00:00Z',
      position: '0',
    });
  });

  it('a record is known by its id, except a malformed one (its id is its sequence) and the marker', () => {
    expect(isIdentifiedRejection({ action: 'rejected:list' })).toBe(true);
    expect(isIdentifiedRejection({ action: 'rejected:malformed-record' })).toBe(false);
    expect(isIdentifiedRejection({ action: REJECTIONS_STREAM_RECREATED })).toBe(false);
  });
});
