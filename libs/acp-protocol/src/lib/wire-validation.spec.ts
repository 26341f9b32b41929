/** Spec 12 wire format / Appendix B validation, 18.4 schema_version, DESIGN 5 API bodies. */
import fc from 'fast-check';
import { P1, P2, T0, min, ulidOf } from '../testing/fixtures';
import { AcpError, AcpErrorCode } from './errors';
import {
  MAX_CAUSES,
  parseDecisionEvent,
  parseEscalateRequest,
  parseGetRequest,
  parseLineageRequest,
  parseListRequest,
  parseProposal,
  parseProposeRequest,
  parseResolution,
  parseResolveRequest,
  parseRespondRequest,
  parseResponse,
} from './wire-validation';

function failure(fn: () => unknown): AcpError {
  try {
    fn();
  } catch (e) {
    if (e instanceof AcpError) return e;
    throw new Error(`not an AcpError: ${String(e)}`);
  }
  throw new Error('did not fail');
}

function expectFailure(fn: () => unknown, code: AcpErrorCode, field?: string): void {
  const e = failure(fn);
  expect({ code: e.code, field: e.field }).toEqual({ code, field });
}

const propose = {
  schema_version: '1.0',
  type: 'proposal',
  domain: 'risk.credit',
  author: 'agent-risk-001',
  payload: { action: 'approve_loan', loan_id: 'LOAN-42', amount_usd: 250000 },
  quorum: 2,
  created_at: '2025-01-15T10:00:00Z',
  expires_at: '2025-01-15T10:05:00Z',
};

const respond = {
  schema_version: '1.0',
  proposal_id: P1,
  participant_id: 'agent-credit-002',
  response_type: 'endorse',
  confidence: 0.92,
  domain_authority: 0.95,
  trust_score: 0.88,
  weight: 0.7697,
  reason: 'Credit score 780, DTI 28% - within policy limits',
  timestamp: '2025-01-15T10:01:30Z',
};

describe('12 / DESIGN 5 propose request', () => {
  it('12.2 accepts the spec example without status/responses/resolution/proposal_id', () => {
    expect(parseProposeRequest(propose)).toEqual({ ...propose, schema_version: '1.0' });
  });

  it('accepts proposal_id, status pending, responses [], resolution null, quorum_policy and depends_on', () => {
    const r = parseProposeRequest({
      ...propose,
      proposal_id: P1,
      status: 'pending',
      responses: [],
      resolution: null,
      quorum_policy: { kind: 'weighted', threshold: 1.2 },
      depends_on: [P2],
    });
    expect(r).toMatchObject({ proposal_id: P1, quorum_policy: { kind: 'weighted', threshold: 1.2 }, depends_on: [P2] });
    expect(r).not.toHaveProperty('status');
    expect(parseProposeRequest({ ...propose, expires_at: null }).expires_at).toBeNull();
    expect(parseProposeRequest({ ...propose, expires_at: undefined }).expires_at).toBeNull();
    expect(parseProposeRequest({ ...propose, depends_on: [] })).not.toHaveProperty('depends_on');
  });

  it('7.3 given eligible_participants on the wire, then they are kept; repeated, empty or non-string ids are refused', () => {
    const r = parseProposeRequest({ ...propose, quorum_policy: { kind: 'unanimous' }, eligible_participants: ['agent-a', 'agent-b'] });
    expect(r).toMatchObject({ quorum_policy: { kind: 'unanimous' }, eligible_participants: ['agent-a', 'agent-b'] });
    expect(parseProposeRequest(propose)).not.toHaveProperty('eligible_participants');
    expectFailure(
      () => parseProposeRequest({ ...propose, eligible_participants: ['a', 'a'] }),
      'SCHEMA_VIOLATION',
      'eligible_participants',
    );
    expectFailure(() => parseProposeRequest({ ...propose, eligible_participants: ['a', ''] }), 'SCHEMA_VIOLATION', 'eligible_participants');
    expectFailure(() => parseProposeRequest({ ...propose, eligible_participants: [7] }), 'SCHEMA_VIOLATION', 'eligible_participants');
    expectFailure(() => parseProposeRequest({ ...propose, eligible_participants: 'a' }), 'SCHEMA_VIOLATION', 'eligible_participants');
  });

  it('11.3 given caused_by on the wire, then the ids are kept; a non-ULID is INVALID_ID, a repeat or the entry itself SCHEMA_VIOLATION', () => {
    expect(parseProposeRequest({ ...propose, caused_by: [P2] })).toMatchObject({ caused_by: [P2] });
    expect(parseProposeRequest({ ...propose, caused_by: [] })).not.toHaveProperty('caused_by');
    expectFailure(() => parseProposeRequest({ ...propose, caused_by: ['x'] }), 'INVALID_ID', 'caused_by');
    expectFailure(() => parseProposeRequest({ ...propose, caused_by: [P2, P2] }), 'SCHEMA_VIOLATION', 'caused_by');
    expectFailure(() => parseProposeRequest({ ...propose, proposal_id: P1, caused_by: [P1] }), 'SCHEMA_VIOLATION', 'caused_by');
  });

  it('11.3 given 64 causes, then they are accepted; given 65, then SCHEMA_VIOLATION on caused_by', () => {
    const causes = Array.from({ length: 65 }, (_, i) => ulidOf(100 + i));
    expect(MAX_CAUSES).toBe(64);
    expect(parseProposeRequest({ ...propose, caused_by: causes.slice(0, 64) }).caused_by).toEqual(causes.slice(0, 64));
    const e = failure(() => parseProposeRequest({ ...propose, caused_by: causes }));
    expect([e.code, e.field]).toEqual(['SCHEMA_VIOLATION', 'caused_by']);
    expect(e.message).toContain('64');
  });

  it('18.4 / 12.1 schema_version: missing is SCHEMA_VIOLATION, anything but "1.0" is UNSUPPORTED_SCHEMA_VERSION (checked first)', () => {
    const { schema_version: _, ...noVersion } = propose;
    expectFailure(() => parseProposeRequest(noVersion), 'SCHEMA_VIOLATION', 'schema_version');
    for (const v of ['2.0', '1', 1, 1.0, null, '1.0 ']) {
      expectFailure(
        () => parseProposeRequest({ ...propose, schema_version: v, quorum: 'x' }),
        'UNSUPPORTED_SCHEMA_VERSION',
        'schema_version',
      );
    }
  });

  it('12.1 ids are ULIDs, else INVALID_ID naming the field', () => {
    expectFailure(() => parseProposeRequest({ ...propose, proposal_id: '01hxyz' }), 'INVALID_ID', 'proposal_id');
    expectFailure(() => parseProposeRequest({ ...propose, depends_on: [P2, 'x'] }), 'INVALID_ID', 'depends_on');
  });

  it('12.1 timestamps are ISO 8601 UTC with Z or +00:00 only', () => {
    expect(parseProposeRequest({ ...propose, created_at: '2025-01-15T10:00:00.123+00:00' }).created_at).toBe(
      '2025-01-15T10:00:00.123+00:00',
    );
    for (const bad of [
      '2025-01-15T10:00:00+01:00',
      '2025-01-15T10:00:00',
      '2025-01-15 10:00:00Z',
      '2025-02-30T10:00:00Z',
      '2025-01-15T24:00:00Z',
      '2025-01-15T10:00:00z',
      1736935200000,
    ]) {
      expectFailure(() => parseProposeRequest({ ...propose, created_at: bad }), 'SCHEMA_VIOLATION', 'created_at');
    }
  });

  it('9.1 domains are segments of [A-Za-z0-9_-] joined by dots', () => {
    for (const bad of ['', 'risk..credit', 'risk.*', 'risk credit', '.risk', 42]) {
      expectFailure(() => parseProposeRequest({ ...propose, domain: bad }), 'SCHEMA_VIOLATION', 'domain');
    }
  });

  it('4.3 / B.2 each required field and its type is checked, naming the field', () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ type: 'idea' }, 'type'],
      [{ author: '' }, 'author'],
      [{ payload: [1] }, 'payload'],
      [{ payload: 'x' }, 'payload'],
      [{ quorum: 0 }, 'quorum'],
      [{ quorum: 1.5 }, 'quorum'],
      [{ quorum: '2' }, 'quorum'],
      [{ status: 'resolved' }, 'status'],
      [{ responses: [{}] }, 'responses'],
      [{ resolution: {} }, 'resolution'],
      [{ quorum_policy: 'count' }, 'quorum_policy'],
      [{ quorum_policy: { kind: 'Weighted!' } }, 'quorum_policy.kind'],
      [{ quorum_policy: { kind: 'weighted' } }, 'quorum_policy.threshold'],
      [{ quorum_policy: { kind: 'weighted', threshold: -1 } }, 'quorum_policy.threshold'],
      [{ quorum_policy: { kind: 'count', threshold: 3 } }, 'quorum_policy.threshold'],
      [{ quorum_policy: { kind: 'unanimous', threshold: 3 } }, 'quorum_policy.threshold'],
      [{ depends_on: [P2, P2] }, 'depends_on'],
      [{ proposal_id: P1, depends_on: [P1] }, 'depends_on'],
    ];
    for (const [patch, field] of cases) expectFailure(() => parseProposeRequest({ ...propose, ...patch }), 'SCHEMA_VIOLATION', field);
    for (const k of ['type', 'domain', 'author', 'payload', 'quorum', 'created_at']) {
      const { [k]: _, ...missing } = propose as Record<string, unknown>;
      const e = failure(() => parseProposeRequest(missing));
      expect([e.code, e.field, e.message]).toEqual(['SCHEMA_VIOLATION', k, `${k} is required`]);
    }
  });

  it('the body must be a JSON object', () => {
    for (const bad of [null, undefined, [], 'x', 3, true]) expectFailure(() => parseProposeRequest(bad), 'SCHEMA_VIOLATION', undefined);
  });
});

describe('12.3 / 12.4 / DESIGN 5 respond request', () => {
  it('accepts the spec example; a client weight is dropped (the service computes it)', () => {
    const r = parseRespondRequest(respond);
    expect(r).not.toHaveProperty('weight');
    expect(r).toMatchObject({ participant_id: 'agent-credit-002', confidence: 0.92 });
  });

  it('timestamp and reason may be left out', () => {
    const { timestamp: _t, reason: _r, weight: _w, ...min1 } = respond;
    expect(parseRespondRequest(min1)).toEqual({ ...min1, reason: null });
  });

  it('5.1 only endorse and challenge; B.1 factors are numbers in [0, 1]; NaN and infinities are SCHEMA_VIOLATION', () => {
    expectFailure(() => parseRespondRequest({ ...respond, response_type: 'abstain' }), 'SCHEMA_VIOLATION', 'response_type');
    for (const bad of [NaN, Infinity, -Infinity, -0.1, 1.1, '0.5', null]) {
      expectFailure(() => parseRespondRequest({ ...respond, confidence: bad }), 'SCHEMA_VIOLATION', 'confidence');
    }
    expectFailure(() => parseRespondRequest({ ...respond, proposal_id: 'abc' }), 'INVALID_ID', 'proposal_id');
    expectFailure(() => parseRespondRequest({ ...respond, reason: 5 }), 'SCHEMA_VIOLATION', 'reason');
    // DESIGN 6: the registry supplies the factors; when sent they are still checked.
    const { domain_authority: _da, trust_score: _ts, ...bare } = respond;
    expect(parseRespondRequest(bare)).not.toHaveProperty('domain_authority');
    expectFailure(() => parseRespondRequest({ ...respond, domain_authority: 2 }), 'SCHEMA_VIOLATION', 'domain_authority');
    expectFailure(() => parseRespondRequest({ ...respond, trust_score: 'high' }), 'SCHEMA_VIOLATION', 'trust_score');
  });
});

describe('DESIGN 5 escalate, resolve, get, list bodies', () => {
  it('escalate {proposal_id, reason, requested_by}', () => {
    expect(parseEscalateRequest({ proposal_id: P1, reason: 'why', requested_by: 'a' })).toEqual({
      proposal_id: P1,
      reason: 'why',
      requested_by: 'a',
    });
    expectFailure(() => parseEscalateRequest({ proposal_id: P1, requested_by: 'a' }), 'SCHEMA_VIOLATION', 'reason');
    expectFailure(
      () => parseEscalateRequest({ schema_version: '9', proposal_id: P1, reason: 'r', requested_by: 'a' }),
      'UNSUPPORTED_SCHEMA_VERSION',
      'schema_version',
    );
  });

  it('resolve {proposal_id, outcome approved|rejected, resolved_by, note}', () => {
    expect(parseResolveRequest({ proposal_id: P1, outcome: 'rejected', resolved_by: 'human:a' })).toEqual({
      proposal_id: P1,
      outcome: 'rejected',
      resolved_by: 'human:a',
      note: null,
    });
    expectFailure(() => parseResolveRequest({ proposal_id: P1, outcome: 'escalated', resolved_by: 'h' }), 'SCHEMA_VIOLATION', 'outcome');
  });

  it('lineage {proposal_id, depth?}: depth an integer from 1 to 16', () => {
    expect(parseLineageRequest({ proposal_id: P1 })).toEqual({ proposal_id: P1 });
    expect(parseLineageRequest({ proposal_id: P1, depth: 3 })).toEqual({ proposal_id: P1, depth: 3 });
    expectFailure(() => parseLineageRequest({ proposal_id: P1, depth: 0 }), 'SCHEMA_VIOLATION', 'depth');
    expectFailure(() => parseLineageRequest({ proposal_id: P1, depth: 17 }), 'SCHEMA_VIOLATION', 'depth');
    expectFailure(() => parseLineageRequest({ proposal_id: 'x' }), 'INVALID_ID', 'proposal_id');
  });

  it('get {proposal_id} and list {domain?, status?, limit?, cursor?}', () => {
    expect(parseGetRequest({ proposal_id: P1 })).toEqual({ proposal_id: P1 });
    expectFailure(() => parseGetRequest({}), 'SCHEMA_VIOLATION', 'proposal_id');
    expectFailure(() => parseGetRequest({ proposal_id: 'p' }), 'INVALID_ID', 'proposal_id');
    expect(parseListRequest({})).toEqual({});
    expect(parseListRequest({ domain: 'risk', status: 'pending', limit: 10, cursor: 'c' })).toEqual({
      domain: 'risk',
      status: 'pending',
      limit: 10,
      cursor: 'c',
    });
    expectFailure(() => parseListRequest({ limit: 0 }), 'SCHEMA_VIOLATION', 'limit');
    expectFailure(() => parseListRequest({ status: 'done' }), 'SCHEMA_VIOLATION', 'status');
  });
});

describe('12.2 / 12.5 / 12.6 full wire objects', () => {
  const resolution = {
    schema_version: '1.0',
    outcome: 'approved',
    trigger: 'quorum',
    votes_for: 1.5394,
    votes_against: 0.54,
    decided_at: '2025-01-15T10:02:00Z',
  };
  const proposal = {
    ...propose,
    proposal_id: P1,
    status: 'resolved',
    responses: [respond].map(({ proposal_id: _, ...r }) => r),
    resolution,
  };

  it('parses a Proposal with responses and resolution (spec examples), keeping extension fields', () => {
    const p = parseProposal({ ...proposal, depends_on: [P2] });
    expect(p).toMatchObject({ proposal_id: P1, status: 'resolved', resolution, depends_on: [P2] });
    expect(p.responses[0].weight).toBe(0.7697);
    expect(parseResolution(resolution)).toEqual(resolution);
    const { proposal_id: _, ...response } = respond;
    expect(parseResponse(response)).toEqual(response);
  });

  it('names nested fields and codes: responses.0.confidence, responses.0.schema_version, resolution.outcome', () => {
    expectFailure(
      () => parseProposal({ ...proposal, responses: [{ ...proposal.responses[0], confidence: 2 }] }),
      'SCHEMA_VIOLATION',
      'responses.0.confidence',
    );
    expectFailure(
      () => parseProposal({ ...proposal, responses: [{ ...proposal.responses[0], schema_version: '2.0' }] }),
      'UNSUPPORTED_SCHEMA_VERSION',
      'responses.0.schema_version',
    );
    expectFailure(
      () => parseProposal({ ...proposal, resolution: { ...resolution, outcome: 'maybe' } }),
      'SCHEMA_VIOLATION',
      'resolution.outcome',
    );
    expectFailure(() => parseProposal({ ...proposal, proposal_id: undefined }), 'SCHEMA_VIOLATION', 'proposal_id');
  });

  it('18.4 / 12.1 given a Proposal, a Response, a Resolution, a Decision Event or a respond request, when schema_version is missing, then SCHEMA_VIOLATION; when it is not "1.0", then UNSUPPORTED_SCHEMA_VERSION (checked first)', () => {
    const event = { event_id: P2, event_type: 'decision', proposal_id: P1, domain: 'risk.credit', ...resolution };
    const { proposal_id: _, ...response } = respond;
    const objects: [string, (input: unknown) => unknown, Record<string, unknown>][] = [
      ['proposal', parseProposal, proposal],
      ['response', parseResponse, response],
      ['resolution', parseResolution, resolution],
      ['decision event', parseDecisionEvent, event],
      ['respond request', parseRespondRequest, respond],
    ];
    for (const [what, parse, valid] of objects) {
      expect([what, parse(valid)]).toEqual([what, expect.objectContaining({ schema_version: '1.0' })]);
      const { schema_version: _, ...noVersion } = valid;
      const missing = failure(() => parse(noVersion));
      expect([what, missing.code, missing.field]).toEqual([what, 'SCHEMA_VIOLATION', 'schema_version']);
      for (const v of ['2.0', '1', 1, null, '1.0 ']) {
        // another field is broken too: the version is reported, so it is checked first
        const wrong = failure(() => parse({ ...valid, schema_version: v, decided_at: 'x', confidence: 'x', quorum: 'x' }));
        expect([what, v, wrong.code, wrong.field]).toEqual([what, v, 'UNSUPPORTED_SCHEMA_VERSION', 'schema_version']);
      }
    }
  });

  it('parses a Decision Event (12.6) and refuses a wrong event_type', () => {
    const full = { event_id: P2, event_type: 'decision', proposal_id: P1, domain: 'risk.credit', ...resolution, caused_by: P1 };
    expect(parseDecisionEvent(full)).toMatchObject({ caused_by: P1 });
    expectFailure(() => parseDecisionEvent({ ...full, event_type: 'other' }), 'SCHEMA_VIOLATION', 'event_type');
    expectFailure(() => parseDecisionEvent({ ...full, event_id: 'x' }), 'INVALID_ID', 'event_id');
    expect(T0 < min(1)).toBe(true);
  });
});

describe('bad input of any shape ends in an AcpError (property, fast-check anything())', () => {
  const parsers = [
    parseProposeRequest,
    parseRespondRequest,
    parseEscalateRequest,
    parseResolveRequest,
    parseGetRequest,
    parseListRequest,
    parseLineageRequest,
    parseProposal,
    parseResponse,
    parseResolution,
    parseDecisionEvent,
  ];

  it('anything() never throws anything but an AcpError', () => {
    fc.assert(
      fc.property(
        fc.anything({
          withNullPrototype: true,
          withObjectString: true,
          withBoxedValues: true,
          withSparseArray: true,
          withMap: true,
          withSet: true,
          withDate: true,
          withTypedArray: true,
          withUnicodeString: true,
        }),
        (input) => {
          for (const parse of parsers) {
            try {
              parse(input);
            } catch (e) {
              expect(e).toBeInstanceOf(AcpError);
            }
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('valid bodies with one field replaced by anything() end in a typed error naming a field, or parse', () => {
    const keys = Object.keys(propose).concat(['proposal_id', 'quorum_policy', 'depends_on', 'status', 'responses', 'resolution']);
    fc.assert(
      fc.property(fc.constantFrom(...keys), fc.anything({ withNullPrototype: true }), (key, value) => {
        try {
          parseProposeRequest({ ...propose, [key]: value });
        } catch (e) {
          expect(e).toBeInstanceOf(AcpError);
          expect(['SCHEMA_VIOLATION', 'INVALID_ID', 'UNSUPPORTED_SCHEMA_VERSION']).toContain((e as AcpError).code);
        }
      }),
      { numRuns: 500 },
    );
  });
});
