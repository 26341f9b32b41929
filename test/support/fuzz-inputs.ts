import fc from 'fast-check';
import { ENTRY_TYPES, HUMAN_OUTCOMES, PROPOSAL_STATUSES, RESPONSE_TYPES, WIRE_SCHEMA_VERSION } from '@conclave/acp-protocol';
import { ACP_COMMANDS, COUNCIL_COMMANDS } from '@conclave/messaging';
import { AUDIT_PATTERNS, AUTH_HEADERS, REGISTRY_PATTERNS } from '@conclave/registry-protocol';
import { scriptedGoalContract, scriptedPanel } from '@conclave/sdk/testing';
import type { ServiceName } from './conclave-harness';

/** The escalation service's inbox queries (apps/escalation's ESCALATION_PATTERNS, which the SDK also names). */
const ESCALATION_PATTERNS = { list: 'v1.escalation.list', get: 'v1.escalation.get' } as const;

/**
 * The fuzzer's inputs: per target (a NATS request subject or an HTTP route), an arbitrary of the
 * valid body built from the wire schemas, and the families that break it (mutations, wrong types,
 * huge and deep JSON, invalid UTF-8, header abuse). Everything here is data; sending and judging
 * the replies is test/support/fuzz.ts.
 */

export const FAMILIES = ['schema', 'mutated', 'wrong-type', 'huge', 'deep', 'utf8', 'headers'] as const;
export type Family = (typeof FAMILIES)[number];

/** How a NATS input is authenticated when authentication is required. */
export type Signing = { as: string; scheme: 'ed25519' | 'jwt' } | undefined;

export interface NatsInput {
  kind: 'nats';
  target: string;
  family: Family;
  /** The pattern after the prefix (e.g. `v1.propose`) and which prefix: ACP or Council. */
  pattern: string;
  council: boolean;
  body: Uint8Array;
  /** Sent as they are, after the signature headers (so they may overwrite them). */
  headers: Array<[string, string]>;
  sign: Signing;
  /** Invalid by construction (not JSON, not UTF-8, not an object): a success is a bug. */
  mustFail: boolean;
}

export interface HttpInput {
  kind: 'http';
  target: string;
  family: Family;
  service: ServiceName;
  method: 'GET' | 'POST';
  path: string;
  headers: Record<string, string>;
  body?: Uint8Array;
  /** A route whose success is a stream (Server-Sent Events): read the head, then hang up. */
  stream?: boolean;
  mustFail: boolean;
}

export type FuzzInput = NatsInput | HttpInput;

/** What the inputs may refer to: ids that exist, who is registered, which tokens are real. */
export interface FuzzWorld {
  now: number;
  authRequired: boolean;
  proposalIds: string[];
  escalatedIds: string[];
  runIds: string[];
  /** Registered agents (authentication on) or just names (off). */
  agents: string[];
  humans: string[];
  /** Owner of the council runs. */
  owner: string;
  /** Participants the registry fuzz may create and change (never the seeded ones). */
  registryIds: string[];
  humanTokens: string[];
  domains: string[];
  maxPayloadBytes: number;
}

// ---------------------------------------------------------------- building blocks

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const ulidArb = fc
  .tuple(fc.constantFrom(...'01234567'), fc.array(fc.constantFrom(...CROCKFORD), { minLength: 25, maxLength: 25 }))
  .map(([h, t]) => h + t.join(''));
const pick = <T>(pool: readonly T[], other: fc.Arbitrary<T>): fc.Arbitrary<T> =>
  pool.length > 0 ? fc.oneof({ arbitrary: fc.constantFrom(...pool), weight: 4 }, { arbitrary: other, weight: 1 }) : other;
const tokenArb = fc.stringMatching(/^[a-z][a-z0-9_-]{0,11}$/);
const textArb = fc.string({ maxLength: 60 });
const unit = fc.double({ min: 0, max: 1, noNaN: true, noDefaultInfinity: true });
const opt = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: undefined });

/** Drops the keys whose value is undefined (fc.record's optional keys come out that way with `opt`). */
function clean(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}

function world(w: FuzzWorld) {
  const domain = pick(
    w.domains,
    fc.array(tokenArb, { minLength: 1, maxLength: 3 }).map((t) => t.join('.')),
  );
  const agent = pick(w.agents, tokenArb);
  const human = pick(w.humans, tokenArb);
  const proposalId = pick(w.proposalIds, ulidArb);
  const escalatedId = pick(w.escalatedIds.length > 0 ? w.escalatedIds : w.proposalIds, ulidArb);
  const runId = pick(w.runIds, ulidArb);
  const instant = (fromMs: number, toMs: number) => fc.integer({ min: fromMs, max: toMs }).map((d) => new Date(w.now + d).toISOString());
  return { domain, agent, human, proposalId, escalatedId, runId, instant };
}

// ---------------------------------------------------------------- valid bodies, per target

type BodyArb = (w: FuzzWorld) => fc.Arbitrary<Record<string, unknown>>;

const propose: BodyArb = (w) => {
  const a = world(w);
  return fc
    .record({
      schema_version: fc.constant(WIRE_SCHEMA_VERSION),
      proposal_id: opt(ulidArb),
      type: fc.constantFrom(...ENTRY_TYPES),
      domain: a.domain,
      author: a.agent,
      payload: fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }),
      quorum: fc.integer({ min: 1, max: 4 }),
      created_at: a.instant(-5_000, 1_000),
      expires_at: fc.option(a.instant(2_000, 60_000), { nil: null }),
      quorum_policy: opt(
        fc.oneof(
          fc.record({ kind: fc.constant('weighted'), threshold: fc.double({ min: 0.1, max: 3, noNaN: true }) }),
          fc.constant({ kind: 'unanimous' }),
          fc.constant({ kind: 'count' }),
        ),
      ),
      eligible_participants: opt(fc.uniqueArray(a.agent, { maxLength: 3 })),
      depends_on: opt(fc.uniqueArray(a.proposalId, { maxLength: 2 })),
      caused_by: opt(fc.uniqueArray(a.proposalId, { maxLength: 2 })),
      classification: opt(fc.constantFrom('public', 'internal', 'confidential', 'restricted')),
    })
    .map(clean);
};

const respond: BodyArb = (w) => {
  const a = world(w);
  return fc
    .record({
      schema_version: fc.constant(WIRE_SCHEMA_VERSION),
      proposal_id: a.proposalId,
      participant_id: a.agent,
      response_type: fc.constantFrom(...RESPONSE_TYPES),
      confidence: unit,
      domain_authority: w.authRequired ? fc.constant(undefined) : opt(unit),
      trust_score: w.authRequired ? fc.constant(undefined) : opt(unit),
      reason: opt(fc.option(textArb, { nil: null })),
      timestamp: opt(a.instant(-2_000, 0)),
    })
    .map(clean);
};

const escalate: BodyArb = (w) => {
  const a = world(w);
  return fc.record({ proposal_id: a.proposalId, reason: fc.string({ minLength: 1, maxLength: 40 }), requested_by: a.agent });
};

const resolve: BodyArb = (w) => {
  const a = world(w);
  return fc
    .record({
      proposal_id: a.escalatedId,
      outcome: fc.constantFrom(...HUMAN_OUTCOMES),
      resolved_by: a.human,
      note: opt(fc.option(textArb, { nil: null })),
    })
    .map(clean);
};

const byProposalId: BodyArb = (w) => fc.record({ proposal_id: world(w).proposalId });

const list: BodyArb = (w) =>
  fc
    .record({
      domain: opt(world(w).domain),
      status: opt(fc.constantFrom(...PROPOSAL_STATUSES)),
      limit: opt(fc.integer({ min: 1, max: 50 })),
      cursor: opt(fc.string({ minLength: 1, maxLength: 30 })),
    })
    .map(clean);

const lineage: BodyArb = (w) => fc.record({ proposal_id: world(w).proposalId, depth: opt(fc.integer({ min: 1, max: 16 })) }).map(clean);

const councilStart: BodyArb = (w) =>
  fc
    .record({
      question: fc.string({ minLength: 1, maxLength: 80 }),
      proposers: fc.uniqueArray(tokenArb, { minLength: 2, maxLength: 3 }),
      timeout: fc.integer({ min: 50, max: 500 }),
      actor: opt(fc.constant(w.owner)),
    })
    .map(({ question, proposers, timeout, actor }) =>
      clean({
        goal_contract: scriptedGoalContract({ decision_owner: w.owner, question }),
        // Members nobody serves: the run times out stage by stage, quickly, and ends.
        panel: scriptedPanel({ proposers: proposers.map((p) => `fz-${p}`), chair: 'fz-chair' }),
        policy: { stage_timeout_ms: timeout },
        actor,
      }),
    );

const councilRun =
  (extra: (a: ReturnType<typeof world>) => Record<string, fc.Arbitrary<unknown>>): BodyArb =>
  (w) => {
    const a = world(w);
    return fc.record({ run_id: a.runId, actor: opt(fc.constant(w.owner)), ...extra(a) }).map(clean);
  };

const councilOutcome = councilRun((a) => ({
  outcome: fc.record({
    outcome_id: tokenArb,
    observed_at: a.instant(-10_000, 0),
    summary: fc.string({ minLength: 1, maxLength: 40 }),
    source: tokenArb,
    evidence_refs: opt(fc.array(tokenArb, { maxLength: 2 })),
  }),
}));

const registryId = (w: FuzzWorld) =>
  pick(
    w.registryIds,
    tokenArb.map((t) => `fzr-${t}`),
  );
const registry: Record<string, BodyArb> = {
  register: (w) =>
    fc.record({
      participant_id: registryId(w),
      roles: fc.subarray(['agent', 'human-resolver'], { minLength: 1 }),
      public_key: fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => Buffer.from(b).toString('base64url')),
    }),
  update: (w) => fc.record({ participant_id: registryId(w), clearance: fc.constantFrom('public', 'internal') }),
  rotateKey: (w) =>
    fc.record({
      participant_id: registryId(w),
      public_key: fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => Buffer.from(b).toString('base64url')),
    }),
  revokeKey: (w) => fc.record({ participant_id: registryId(w), key_id: fc.constantFrom('k1', 'k2') }),
  grant: (w) =>
    fc.record({
      participant_id: registryId(w),
      domain: world(w).domain,
      domain_authority: unit,
      trust_score: unit,
    }),
  revokeGrant: (w) => fc.record({ participant_id: registryId(w), domain: world(w).domain }),
  deactivate: (w) => fc.record({ participant_id: registryId(w) }),
  get: (w) => fc.record({ participant_id: registryId(w) }),
  list: () => fc.constant({}),
};

export interface NatsTarget {
  target: string;
  pattern: string;
  council: boolean;
  body: BodyArb;
  /** Who signs it when authentication is required: a field of the body naming the actor, or a fixed participant. */
  signer: (body: Record<string, unknown>, w: FuzzWorld) => string;
}

const declared = (field: string) => (b: Record<string, unknown>, w: FuzzWorld) =>
  typeof b[field] === 'string' && [...w.agents, ...w.humans, w.owner].includes(b[field] as string)
    ? (b[field] as string)
    : (w.agents[0] ?? 'anonymous');
const fixed = (id: (w: FuzzWorld) => string) => () => (_b: Record<string, unknown>, w: FuzzWorld) => id(w);

/** Every NATS request subject: DESIGN section 5 (ACP and Council), then the registry, audit and escalation extensions. */
export const NATS_TARGETS: NatsTarget[] = [
  { target: 'acp propose', pattern: ACP_COMMANDS.propose, council: false, body: propose, signer: declared('author') },
  { target: 'acp respond', pattern: ACP_COMMANDS.respond, council: false, body: respond, signer: declared('participant_id') },
  { target: 'acp escalate', pattern: ACP_COMMANDS.escalate, council: false, body: escalate, signer: declared('requested_by') },
  { target: 'acp resolve', pattern: ACP_COMMANDS.resolve, council: false, body: resolve, signer: declared('resolved_by') },
  { target: 'acp get', pattern: ACP_COMMANDS.get, council: false, body: byProposalId, signer: declared('') },
  { target: 'acp list', pattern: ACP_COMMANDS.list, council: false, body: list, signer: declared('') },
  { target: 'acp lineage', pattern: ACP_COMMANDS.lineage, council: false, body: lineage, signer: declared('') },
  { target: 'council start', pattern: COUNCIL_COMMANDS.start, council: true, body: councilStart, signer: fixed((w) => w.owner)() },
  { target: 'council get', pattern: COUNCIL_COMMANDS.get, council: true, body: councilRun(() => ({})), signer: fixed((w) => w.owner)() },
  { target: 'council outcome', pattern: COUNCIL_COMMANDS.outcome, council: true, body: councilOutcome, signer: fixed((w) => w.owner)() },
  {
    target: 'council goal-contract',
    pattern: COUNCIL_COMMANDS.goalContract,
    council: true,
    body: councilRun(() => ({ goal_contract: fc.constant(scriptedGoalContract({ decision_owner: 'fz-owner' })) })),
    signer: fixed((w) => w.owner)(),
  },
  {
    target: 'council frame-decline',
    pattern: COUNCIL_COMMANDS.declineFrame,
    council: true,
    body: councilRun(() => ({ frame_check_id: tokenArb, reason: fc.string({ minLength: 1, maxLength: 30 }) })),
    signer: fixed((w) => w.owner)(),
  },
  {
    target: 'council interrupt',
    pattern: COUNCIL_COMMANDS.interrupt,
    council: true,
    body: councilRun(() => ({ reason: fc.string({ minLength: 1, maxLength: 30 }) })),
    signer: fixed((w) => w.owner)(),
  },
  ...Object.entries(REGISTRY_PATTERNS).map(([name, pattern]) => ({
    target: `registry ${name}`,
    pattern,
    council: false,
    // A command added to the registry later is still fuzzed, from a body naming a participant.
    body: registry[name] ?? ((w: FuzzWorld) => fc.record({ participant_id: registryId(w), key_id: fc.constantFrom('k1', 'k2') })),
    signer: fixed(() => 'admin')(),
  })),
  { target: 'audit query', pattern: AUDIT_PATTERNS.query, council: false, body: auditQuery, signer: fixed(() => 'admin')() },
  { target: 'audit head', pattern: AUDIT_PATTERNS.head, council: false, body: () => fc.constant({}), signer: fixed(() => 'admin')() },
  {
    target: 'escalation list',
    pattern: ESCALATION_PATTERNS.list,
    council: false,
    body: list,
    signer: fixed((w) => w.humans[0] ?? 'anonymous')(),
  },
  {
    target: 'escalation get',
    pattern: ESCALATION_PATTERNS.get,
    council: false,
    body: byProposalId,
    signer: fixed((w) => w.humans[0] ?? 'anonymous')(),
  },
];

function auditQuery(w: FuzzWorld): fc.Arbitrary<Record<string, unknown>> {
  const a = world(w);
  return fc
    .record({
      proposal_id: opt(a.proposalId),
      actor: opt(a.agent),
      after_seq: opt(fc.nat(1000)),
      limit: opt(fc.integer({ min: 1, max: 50 })),
    })
    .map(clean);
}

// ---------------------------------------------------------------- breaking a valid body

/** Values of every JSON type, the edge cases first: what a mutation puts where a field was. */
export const weirdValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(
    null,
    true,
    false,
    0,
    -0,
    -1,
    0.5,
    1.5,
    2 ** 53 + 2,
    -(2 ** 63),
    1e308,
    -1e-308,
    '',
    ' ',
    '\u0000',
    '\u202e',
    '😀',
    '__proto__',
    'constructor',
    '1.0',
    '2.0',
    'pending',
    '0000000000000000000000000Z',
    '01ARZ3NDEKTSV4RRFFQ69G5FAV',
    '2026-13-45T25:61:61Z',
    '1970-01-01T00:00:00Z',
    '9999-12-31T23:59:59.999Z',
    [],
    {},
    [null],
    { kind: 'weighted' },
    { __proto__: null },
  ),
  fc.jsonValue({ maxDepth: 3 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
);

const keyArb = fc.oneof(
  fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', '', ' ', 'ok', 'error', 'actor', 'schema_version'),
  fc.string({ maxLength: 12 }),
);

/** Sets an own property, `__proto__` included (so JSON.stringify writes it as a key). */
function setOwn(o: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true });
}

type Mutation =
  | { op: 'drop'; at: number }
  | { op: 'set'; at: number; value: unknown }
  | { op: 'add'; key: string; value: unknown }
  | { op: 'nested'; at: number; key: string; value: unknown }
  | { op: 'stringify'; at: number };

const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ op: fc.constant('drop' as const), at: fc.nat() }),
  fc.record({ op: fc.constant('set' as const), at: fc.nat(), value: weirdValue }),
  fc.record({ op: fc.constant('add' as const), key: keyArb, value: weirdValue }),
  fc.record({ op: fc.constant('nested' as const), at: fc.nat(), key: keyArb, value: weirdValue }),
  fc.record({ op: fc.constant('stringify' as const), at: fc.nat() }),
);

function mutate(body: Record<string, unknown>, mutations: Mutation[]): Record<string, unknown> {
  const out: Record<string, unknown> = JSON.parse(JSON.stringify(body));
  for (const mutation of mutations) {
    // A value drawn from a constant pool is shared between inputs: set a copy, never the original
    // (writing into it would make a later input circular).
    const m =
      'value' in mutation && mutation.value !== null && typeof mutation.value === 'object'
        ? { ...mutation, value: structuredClone(mutation.value) }
        : mutation;
    const keys = Object.keys(out);
    const key = keys.length > 0 && 'at' in m ? keys[m.at % keys.length] : undefined;
    if (m.op === 'add') setOwn(out, m.key, m.value);
    else if (key === undefined) continue;
    else if (m.op === 'drop') delete out[key];
    else if (m.op === 'set') setOwn(out, key, m.value);
    else if (m.op === 'stringify') setOwn(out, key, JSON.stringify(out[key]) ?? 'undefined');
    else {
      const inner = out[key];
      if (inner !== null && typeof inner === 'object' && !Array.isArray(inner)) setOwn(inner as Record<string, unknown>, m.key, m.value);
      else if (Array.isArray(inner)) inner.push(m.value);
      else setOwn(out, key, { [m.key]: m.value });
    }
  }
  return out;
}

const enc = new TextEncoder();
const json = (v: unknown) => enc.encode(JSON.stringify(v));

/** A string field of the body, if any (the first one whose value is a string). */
function stringField(body: Record<string, unknown>): string | undefined {
  return Object.keys(body).find((k) => typeof body[k] === 'string');
}

/** JSON text `depth` levels deep, of arrays or of objects, around a scalar. */
export function deepJson(depth: number, kind: 'array' | 'object'): string {
  return kind === 'array' ? '['.repeat(depth) + '1' + ']'.repeat(depth) : '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
}

/** Byte sequences that are not UTF-8 (RFC 3629): stray continuation, overlong, surrogate, beyond U+10FFFF, truncated. */
const BAD_UTF8: number[][] = [
  [0xff],
  [0x80],
  [0xc3, 0x28],
  [0xc0, 0xaf],
  [0xed, 0xa0, 0x80],
  [0xf4, 0x90, 0x80, 0x80],
  [0xe2, 0x82],
  [0xfe, 0xfe],
];

/** The body's JSON with invalid UTF-8 inside one of its string values (the `where`-th), or, with none, anywhere. */
function withBadUtf8(body: Record<string, unknown>, bad: number[], where: number): Uint8Array {
  const fields = Object.keys(body).filter((k) => typeof body[k] === 'string' && k !== 'schema_version');
  const field = fields.length > 0 ? fields[where % fields.length] : undefined;
  const marker = 'FUZZ-UTF8-MARKER';
  const text = field ? JSON.stringify({ ...body, [field]: `${String(body[field]).slice(0, 8)}${marker}` }) : JSON.stringify(body);
  const bytes = Buffer.from(text);
  const idx = field ? bytes.indexOf(marker) : where % Math.max(1, bytes.length);
  const markerLen = field ? marker.length : 0;
  return Uint8Array.from([...bytes.subarray(0, idx), ...bad, ...bytes.subarray(idx + markerLen)]);
}

export interface Built {
  body: Uint8Array;
  headers: Array<[string, string]>;
  sign: boolean;
  mustFail: boolean;
  /** The body as an object, when it is one (for choosing the signer). */
  value?: Record<string, unknown>;
}

const headerName = fc.oneof(
  fc.constantFrom(...Object.values(AUTH_HEADERS), 'Authorization', 'Nats-Msg-Id', 'Nats-Expected-Stream', 'Status', 'Content-Type'),
  fc.stringMatching(/^[A-Za-z][A-Za-z0-9-]{0,30}$/),
);
const headerValue = fc.oneof(
  fc.constantFrom(
    '',
    ' ',
    'Bearer',
    'Bearer ',
    'Bearer a.b.c',
    'Bearer ' + 'x'.repeat(5000),
    '0',
    '-1',
    '1970-01-01T00:00:00Z',
    '9999-12-31T23:59:59Z',
  ),
  fc.stringMatching(/^[\x20-\x7e]{0,200}$/),
  fc.nat(20_000).map((n) => 'A'.repeat(n)),
  fc.string({ maxLength: 30 }).filter((s) => !s.includes('\r') && !s.includes('\n') && !s.includes('\0')),
);

/** What one family does to a valid body: its bytes, extra headers, and whether it should be signed. */
export function familyArb(family: Family, valid: fc.Arbitrary<Record<string, unknown>>, w: FuzzWorld): fc.Arbitrary<Built> {
  const signed = (a: fc.Arbitrary<Omit<Built, 'headers' | 'sign'>>) =>
    fc.tuple(a, fc.double({ min: 0, max: 1, noNaN: true })).map(([b, r]) => ({ ...b, headers: [], sign: r < 0.85 }));
  switch (family) {
    case 'schema':
      return signed(valid.map((v) => ({ body: json(v), mustFail: false, value: v })));
    case 'mutated':
      return signed(
        fc.tuple(valid, fc.array(mutationArb, { minLength: 1, maxLength: 3 })).map(([v, ms]) => {
          const m = mutate(v, ms);
          return { body: json(m), mustFail: false, value: m };
        }),
      );
    case 'wrong-type':
      return signed(
        fc.oneof(
          fc
            .oneof(
              fc.constantFrom(null, 0, '', 'null', true, []),
              fc.jsonValue({ maxDepth: 2 }).filter((v) => !isObject(v)),
            )
            .map((v) => ({
              body: json(v),
              mustFail: true,
            })),
          fc.dictionary(keyArb, weirdValue, { maxKeys: 6 }).map((v) => ({ body: json(v), mustFail: false, value: v })),
          valid.chain((v) =>
            fc.tuple(...Object.keys(v).map(() => weirdValue)).map((vals) => {
              const o: Record<string, unknown> = {};
              Object.keys(v).forEach((k, i) => setOwn(o, k, vals[i]));
              return { body: json(o), mustFail: false, value: o };
            }),
          ),
          fc.constantFrom('', ' ', '{', '{"a":1,}', "{'a':1}", 'NaN', '{"a":NaN}', '[1,2', 'undefined', '{"a":1}{"b":2}').map((t) => ({
            body: enc.encode(t),
            mustFail: true,
          })),
        ),
      );
    case 'huge':
      return signed(
        fc.tuple(valid, fc.constantFrom('string-under', 'string-over', 'array', 'keys', 'number'), fc.nat()).map(([v, how, n]) => {
          const o = { ...v };
          const field = stringField(o) ?? 'payload';
          if (how === 'string-under') o[field] = 'x'.repeat(Math.max(0, w.maxPayloadBytes - json(v).length - 200));
          else if (how === 'string-over') o[field] = 'x'.repeat(w.maxPayloadBytes + 1 + (n % 50_000));
          else if (how === 'array') o[field] = Array.from({ length: 2_000 + (n % 8_000) }, (_, i) => i);
          else if (how === 'keys') o['payload'] = Object.fromEntries(Array.from({ length: 1_000 + (n % 4_000) }, (_, i) => [`k${i}`, i]));
          else {
            const text = JSON.stringify(o).replace(/^\{/, `{"quorum":1${'0'.repeat(400)},"confidence":1e400,`);
            return { body: enc.encode(text), mustFail: false };
          }
          return { body: json(o), mustFail: false, value: o };
        }),
      );
    case 'deep':
      return signed(
        fc
          .tuple(
            valid,
            fc.constantFrom(16, 64, 200, 1_000, 5_000, 50_000),
            fc.constantFrom('array' as const, 'object' as const),
            fc.boolean(),
          )
          .map(([v, depth, kind, whole]) => {
            const deep = deepJson(depth, kind);
            // A whole body of arrays is not an object; one of objects is, with an unknown field (allowed).
            if (whole) return { body: enc.encode(deep), mustFail: kind === 'array' };
            const field = isObject(v['payload']) ? 'payload' : (Object.keys(v)[0] ?? 'payload');
            const text = JSON.stringify({ ...v, [field]: '\u0001DEEP\u0001' }).replace(
              '"\\u0001DEEP\\u0001"',
              kind === 'object' || field !== 'payload' ? deep : `{"d":${deep}}`,
            );
            return { body: enc.encode(text), mustFail: false, value: v };
          }),
      );
    case 'utf8':
      return signed(
        fc
          .tuple(valid, fc.constantFrom(...BAD_UTF8), fc.nat())
          .map(([v, bad, where]) => ({ body: withBadUtf8(v, bad, where), mustFail: true, value: v })),
      );
    case 'headers':
      return fc
        .tuple(valid, fc.array(fc.tuple(headerName, headerValue), { minLength: 1, maxLength: 6 }), fc.boolean(), fc.nat(300))
        .map(([v, pairs, sign, many]) => ({
          body: json(v),
          headers:
            many > 280 ? [...pairs, ...Array.from({ length: many * 3 }, (_, i): [string, string] => [`X-Fuzz-${i}`, `${i}`])] : pairs,
          sign,
          mustFail: false,
          value: v,
        }));
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

// ---------------------------------------------------------------- HTTP

export interface HttpTarget {
  target: string;
  service: ServiceName | 'any';
  method: 'GET' | 'POST';
  /** A valid request, as path (with query) and JSON body; `id` when the route has a `:proposal_id`. */
  valid: (w: FuzzWorld) => fc.Arbitrary<{ path: string; body?: Record<string, unknown>; id?: string }>;
  /** The path for another `:proposal_id` (routes that have one). */
  withId?: (segment: string) => string;
  stream?: boolean;
}

const queryOf = (o: Record<string, unknown>) => {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(o)) if (v !== undefined) q.append(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
};
const enc1 = encodeURIComponent;

export const HTTP_TARGETS: HttpTarget[] = [
  {
    target: 'GET /escalations',
    service: 'escalation',
    method: 'GET',
    valid: (w) => list(w).map((q) => ({ path: `/escalations${queryOf(q)}` })),
  },
  {
    target: 'GET /escalations/:id',
    service: 'escalation',
    method: 'GET',
    valid: (w) => world(w).escalatedId.map((id) => ({ path: `/escalations/${enc1(id)}`, id })),
    withId: (segment) => `/escalations/${segment}`,
  },
  {
    target: 'POST /escalations/:id/resolve',
    service: 'escalation',
    method: 'POST',
    valid: (w) =>
      resolve(w).map(({ proposal_id, ...rest }) => ({
        path: `/escalations/${enc1(String(proposal_id))}/resolve`,
        id: String(proposal_id),
        body: { ...rest, note: typeof rest['note'] === 'string' && rest['note'].trim() ? rest['note'] : 'a human looked' },
      })),
    withId: (segment) => `/escalations/${segment}/resolve`,
  },
  {
    target: 'GET /console/decisions',
    service: 'escalation',
    method: 'GET',
    valid: () => fc.constant({ path: '/console/decisions' }),
    stream: true,
  },
  {
    target: 'GET /console',
    service: 'escalation',
    method: 'GET',
    valid: () => fc.constantFrom({ path: '/console' }, { path: '/console/console.js' }, { path: '/' }),
  },
  { target: 'GET /openapi.json', service: 'escalation', method: 'GET', valid: () => fc.constant({ path: '/openapi.json' }) },
  { target: 'GET /healthz', service: 'any', method: 'GET', valid: () => fc.constant({ path: '/healthz' }) },
  { target: 'GET /readyz', service: 'any', method: 'GET', valid: () => fc.constant({ path: '/readyz' }) },
  { target: 'GET /metrics', service: 'any', method: 'GET', valid: () => fc.constant({ path: '/metrics' }) },
  {
    target: 'GET /audit/entries',
    service: 'audit',
    method: 'GET',
    valid: (w) => auditQuery(w).map((q) => ({ path: `/audit/entries${queryOf(q)}` })),
  },
  { target: 'GET /audit/head', service: 'audit', method: 'GET', valid: () => fc.constant({ path: '/audit/head' }) },
];

const SERVICES: ServiceName[] = ['intake', 'resolver', 'sweeper', 'escalation', 'council', 'audit'];

// Never `.`, `..` or an empty segment: URL normalisation would make them another route.
const weirdSegment = fc.oneof(
  fc.constantFrom(
    '%',
    '%25',
    '%E0%A4%A',
    '%FF',
    '%C0%AF',
    '%00',
    '..%2F..%2Fetc',
    'a'.repeat(3000),
    '__proto__',
    '%F0%9F%98%80',
    '0'.repeat(26),
  ),
  fc
    .string({ minLength: 1, maxLength: 20 })
    .map(enc1)
    .filter((s) => s !== '.' && s !== '..'),
);
const weirdQuery = fc.oneof(
  fc.constantFrom(
    '?limit=-1',
    '?limit=1e9',
    '?limit=abc',
    '?limit[]=1&limit[]=2',
    '?limit[a]=1',
    '?domain[__proto__][x]=1',
    '?cursor=%FF',
    '?domain=%C0%AF',
    '?=',
    '?&&&',
    '?a=' + 'b'.repeat(8000),
  ),
  fc.dictionary(keyArb, fc.string({ maxLength: 10 }), { maxKeys: 4 }).map((o) => queryOf(o)),
  fc.nat(25).map((d) => `?domain${'[a]'.repeat(d)}=1`),
);

/** The HTTP request for a family: the valid one, or one broken the family's way. */
export function httpArb(t: HttpTarget, family: Family, w: FuzzWorld): fc.Arbitrary<Omit<HttpInput, 'kind' | 'target' | 'family'>> {
  const service = t.service === 'any' ? fc.constantFrom(...SERVICES) : fc.constant(t.service);
  const auth = fc.oneof(
    w.humanTokens.length > 0 ? fc.constantFrom(...w.humanTokens).map((tok) => `Bearer ${tok}`) : fc.constant(undefined),
    fc.constantFrom(undefined, 'Bearer', 'Bearer nope', 'Basic YTpi', 'bearer ' + (w.humanTokens[0] ?? 'x'), 'Bearer a.b.c'),
  );
  return fc
    .tuple(t.valid(w), service, auth, fc.nat(), weirdValue, weirdSegment, weirdQuery)
    .chain(([v, svc, authorization, n, weird, seg, query]) => {
      const headers: Record<string, string> = authorization ? { authorization } : {};
      const bare = v.path.split('?')[0];
      let path = v.path;
      let body: Uint8Array | undefined = v.body !== undefined ? json(v.body) : undefined;
      let mustFail = false;
      const base = { service: svc, method: t.method, stream: t.stream };
      if (t.method === 'POST') headers['content-type'] = 'application/json';
      switch (family) {
        case 'schema':
          break;
        case 'mutated':
          if (v.body && n % 3 !== 0)
            return fc
              .array(mutationArb, { minLength: 1, maxLength: 3 })
              .map((ms) => ({ ...base, path, headers, body: json(mutate(v.body!, ms)), mustFail }));
          path = t.withId && n % 2 === 0 ? t.withId(seg) : bare + query;
          break;
        case 'wrong-type':
          if (t.method === 'POST') body = json(weird);
          else path = bare + query;
          break;
        case 'huge':
          if (t.method === 'POST' && n % 2 === 0) body = json({ ...v.body, note: 'n'.repeat(w.maxPayloadBytes * (1 + (n % 20))) });
          else if (n % 3 === 0) path = `${bare}?domain=${'d'.repeat(6_000 + (n % 10_000))}`;
          else if (n % 3 === 1 && t.withId) path = t.withId('A'.repeat(5_000 + (n % 5_000)));
          else headers['x-fuzz'] = 'h'.repeat(8_000 + (n % 10_000));
          break;
        case 'deep':
          if (t.method === 'POST') {
            body = enc.encode(deepJson([64, 1_000, 50_000][n % 3], n % 2 === 0 ? 'array' : 'object'));
            mustFail = true;
          } else path = `${bare}?q${'[a]'.repeat(5 + (n % 40))}=1`;
          break;
        case 'utf8':
          if (t.method === 'POST' && v.body && n % 2 === 0) {
            body = withBadUtf8(v.body, BAD_UTF8[n % BAD_UTF8.length], n);
            mustFail = true;
          } else {
            const bad = ['%FF', '%C0%AF', '%ED%A0%80', '%E2%82'][n % 4];
            path = t.withId && n % 4 < 2 ? t.withId(`01ARZ${bad}`) : `${bare}?domain=${bad}&cursor=${bad}`;
          }
          break;
        case 'headers':
          return fc.array(fc.tuple(headerName, headerValue), { minLength: 1, maxLength: 6 }).map((pairs) => {
            const h = { ...headers };
            for (const [k, val] of pairs) h[k.toLowerCase()] = val;
            if (n % 3 === 0 && t.method === 'POST')
              h['content-type'] = ['text/plain', 'application/x-www-form-urlencoded', 'application/json; charset=latin1', ''][n % 4];
            return { ...base, path, headers: h, body, mustFail };
          });
      }
      return fc.constant({ ...base, path, headers, body, mustFail });
    });
}
