import {
  canonicalJson,
  isTerminalEvent,
  ladderStepDueAt,
  PROPOSAL_EVENT_TYPES as T,
  proposalStream,
  ProposalEvent,
  Resolution,
  signOffDecision,
} from '@conclave/acp-protocol';
import type { EventLog } from '@conclave/event-log';
import { ConclaveClient, ed25519Signer, jwtSigner } from '@conclave/sdk';
import { EVENT_LOG } from '@conclave/service-kit';
import { headers as natsHeaders } from 'nats';
import { ResolveEscalationHandler } from '../../apps/escalation/src/app/resolve-escalation.handler';
import { eventually, SecureConclaveHarness } from '../support/conclave-harness';
import { DecisionCollector } from '../support/decisions';
import { parseExposition, sumOf } from '../support/metrics-text';
import { checkInvariants, INVARIANTS, readRun, runNamesOf } from '../support/invariants';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

// ---------------------------------------------------------------- the deployment under test

const ROOT = 'escb';
const NAMED = ['alice', 'bob', 'carol'] as const;
/** A human resolver with a grant, named on no sign-off route. */
const DAVE = 'dave';
/** A human resolver with a grant whose clearance (internal) does not cover confidential proposals. */
const FRANK = 'frank';
/** A registered agent with a `resolve` grant but without the human-resolver role. */
const MALLORY = 'mallory';
/** A human resolver whose only grant is on another domain. */
const OSCAR = 'oscar';
const ATTACKER_IDS = [MALLORY, OSCAR, FRANK];
const AUTHOR = 'eb-author';
const VOTER_A = 'eb-voter-a';
const VOTER_B = 'eb-voter-b';
const ESCALATOR = 'eb-escalator';
/** Dave's bearer token (CONCLAVE_HUMAN_TOKENS): his second channel besides his signature. */
const DAVE_TOKEN = 'dave-token-0123456789abcdefghijklmnopqrstuvwxyz';
const WRONG_TOKEN = 'not-a-token-of-this-deployment-0123456789abcdef';
const WRONG_HASH = '0'.repeat(64);

type RouteId = 'single' | 'ladder' | 'board' | 'veto' | 'conf';
const STEP_MS = 600;
type LadderStep = { action: 'remind' | 'reassign' | 'default'; after_ms: number; to?: string[]; outcome?: string };
interface RouteConfig {
  id: RouteId;
  domain_prefix: string;
  assignees: string[];
  ladder?: LadderStep[];
  sign_off?: { required: number; of: string[]; veto: boolean };
}
const ROUTES: RouteConfig[] = [
  {
    id: 'single',
    domain_prefix: `${ROOT}.single`,
    assignees: [DAVE],
    ladder: [
      { action: 'remind', after_ms: 500 },
      { action: 'reassign', after_ms: 500, to: ['bob'] },
    ],
  },
  {
    id: 'ladder',
    domain_prefix: `${ROOT}.ladder`,
    assignees: ['alice'],
    ladder: [
      { action: 'remind', after_ms: STEP_MS },
      { action: 'reassign', after_ms: STEP_MS, to: ['bob'] },
      { action: 'default', after_ms: STEP_MS, outcome: 'rejected' },
    ],
  },
  {
    id: 'board',
    domain_prefix: `${ROOT}.board`,
    assignees: ['alice', 'bob', 'carol'],
    ladder: [{ action: 'remind', after_ms: 500 }],
    sign_off: { required: 2, of: [...NAMED], veto: false },
  },
  {
    id: 'veto',
    domain_prefix: `${ROOT}.veto`,
    assignees: ['alice'],
    ladder: [
      { action: 'remind', after_ms: 400 },
      { action: 'default', after_ms: 1400, outcome: 'expired' },
    ],
    sign_off: { required: 2, of: [...NAMED], veto: true },
  },
  { id: 'conf', domain_prefix: `${ROOT}.conf`, assignees: ['bob'] },
];
const routeConfig = (id: RouteId) => ROUTES.find((r) => r.id === id)!;
const ladderOf = (id: RouteId): LadderStep[] => routeConfig(id).ladder ?? [];
const signOffOf = (id: RouteId) => routeConfig(id).sign_off ?? null;
const ladderTotal = (id: RouteId) => ladderOf(id).reduce((s, x) => s + x.after_ms, 0);

/** How late a ladder step may be under the burst before it counts as missed. */
const LADDER_SLACK_MS = 3_000;
const TEST_TIMEOUT_MS = 60_000;

// ---------------------------------------------------------------- the burst's plan

type Scenario =
  /** one human (or two at the same instant) resolves a route without sign-off */
  | 'resolve'
  /** a human resolves as soon as the escalation is seen (well before the ladder's default) */
  | 'early'
  /** a human resolution timed to land when the ladder's default step falls due */
  | 'race-default'
  /** nobody answers: the ladder's default ends it */
  | 'none'
  /** the three named humans sign at the same instant */
  | 'same-instant'
  /** one named human signs, a second one signs when the ladder's default falls due */
  | 'race-default-signoff';
type Extra = 'none' | 'retry-after' | 'retry-concurrent' | 'replay-after' | 'replay-concurrent';
const EXTRAS: Extra[] = ['none', 'retry-after', 'retry-concurrent', 'replay-after', 'replay-concurrent'];
type Outcome = 'approved' | 'rejected';

/** One human's resolution (a sign-off on M-of-N routes), as the human means it: sent once, plus its extra copies. */
interface Intent {
  human: string;
  outcome: Outcome;
  /** signed: Ed25519 headers; jwt: a one-use EdDSA JWT; token: dave's bearer token (CONCLAVE_HUMAN_TOKENS). */
  channel: 'signed' | 'jwt' | 'token';
  bind: boolean;
  extra: Extra;
  /** Unique per intent: the log's note tells which intent an event records. */
  note: string;
  /** When to send: as soon as the escalation is seen, or at the default step's due time plus an offset. */
  at: { kind: 'seen' } | { kind: 'default-due'; offsetMs: number };
  /** Intents with the same wave are released together (at the same instant). */
  wave: number;
}

type AttackKind =
  | 'agent'
  | 'no-grant'
  | 'impersonation'
  | 'forged-signature'
  | 'unsigned'
  | 'bad-token'
  | 'stolen-token'
  | 'under-cleared'
  | 'unnamed'
  | 'stale-hash';
const COMMON_ATTACKS: AttackKind[] = ['agent', 'no-grant', 'impersonation', 'forged-signature', 'unsigned'];
const EXPECTED_REFUSAL: Record<AttackKind, { code: string; field?: string }> = {
  agent: { code: 'FORBIDDEN', field: 'resolved_by' },
  'no-grant': { code: 'FORBIDDEN', field: 'domain' },
  impersonation: { code: 'FORBIDDEN', field: 'resolved_by' },
  'forged-signature': { code: 'UNAUTHENTICATED' },
  unsigned: { code: 'UNAUTHENTICATED' },
  'bad-token': { code: 'UNAUTHENTICATED' },
  'stolen-token': { code: 'UNAUTHENTICATED' },
  'under-cleared': { code: 'FORBIDDEN', field: 'proposal_id' },
  unnamed: { code: 'FORBIDDEN', field: 'resolved_by' },
  'stale-hash': { code: 'CONFLICT', field: 'payload_hash' },
};

interface Plan {
  i: number;
  route: RouteId;
  domain: string;
  how: 'tie' | 'manual';
  scenario: Scenario;
  intents: Intent[];
  attacks: AttackKind[];
  proposalId: string;
}

type Reply =
  | { ok: true; proposal: { status: string; resolution?: Resolution | null } }
  | { ok: false; error: { code: string; message?: string; field?: string } }
  | { transport: string };

interface Attempt {
  plan: Plan;
  /** The intent it carries out (undefined for an attack). */
  intent?: Intent;
  attack?: AttackKind;
  /** first: the intent's own send; retry: the same body freshly signed; replay: the same bytes and headers. */
  role: 'first' | 'retry' | 'replay';
  /** resolved_by in the body. */
  as: string;
  nonce?: string;
  sentAt: number;
  repliedAt: number;
  reply: Reply;
}

const codeOf = (r: Reply) => ('transport' in r ? `transport: ${r.transport}` : r.ok ? 'ok' : r.error.code);
const isReplayRefusal = (r: Reply) =>
  !('transport' in r) && !r.ok && r.error.code === 'UNAUTHENTICATED' && /replay/i.test(r.error.message ?? '');
const sleepUntil = (t: number) => new Promise<void>((r) => setTimeout(r, Math.max(0, t - Date.now())));

/**
 * 48 escalations at once: routes without sign-off, with a ladder ending in a default, and with
 * M-of-N sign-off (with and without veto), half by a tie, half by a manual escalation.
 */
function makePlans(run: string): Plan[] {
  const specs: Array<{ route: RouteId; scenario: Scenario }> = [
    ...Array.from({ length: 10 }, () => ({ route: 'single' as const, scenario: 'resolve' as const })),
    ...(['none', 'race-default', 'early'] as const).flatMap((scenario) =>
      Array.from({ length: 4 }, () => ({ route: 'ladder' as const, scenario })),
    ),
    ...Array.from({ length: 12 }, () => ({ route: 'board' as const, scenario: 'same-instant' as const })),
    ...Array.from({ length: 3 }, () => ({ route: 'veto' as const, scenario: 'race-default-signoff' as const })),
    ...Array.from({ length: 3 }, () => ({ route: 'veto' as const, scenario: 'same-instant' as const })),
    ...Array.from({ length: 2 }, () => ({ route: 'veto' as const, scenario: 'none' as const })),
    ...Array.from({ length: 6 }, () => ({ route: 'conf' as const, scenario: 'resolve' as const })),
  ];
  // Interleave the routes so the burst mixes them.
  const order = specs.map((s, k) => ({ s, key: (k * 29) % specs.length })).sort((a, b) => a.key - b.key);
  let badTokens = 0;
  let stolenTokens = 0;
  return order.map(({ s }, i) => {
    const k = specs.filter((x, j) => x.route === s.route && x.scenario === s.scenario && j < specs.indexOf(s)).length;
    const extra = (j: number): Extra => EXTRAS[(i + j) % EXTRAS.length];
    const intent = (j: number, human: string, outcome: Outcome, rest: Partial<Intent> = {}): Intent => {
      const channel = rest.channel ?? 'signed';
      let x = rest.extra ?? extra(j);
      // A token carries no nonce: its copies are retries, never replays.
      if (channel === 'token' && x.startsWith('replay')) x = x === 'replay-after' ? 'retry-after' : 'retry-concurrent';
      return {
        human,
        outcome,
        channel,
        bind: rest.bind ?? (i + j) % 2 === 0,
        extra: x,
        note: `p${i}-${human}-${j}-${run}`,
        at: rest.at ?? { kind: 'seen' },
        wave: rest.wave ?? 0,
      };
    };
    const intents: Intent[] = [];
    switch (`${s.route}/${s.scenario}`) {
      case 'single/resolve': {
        // alice (Ed25519 or JWT), dave signed, dave with his token; every fourth also raced by bob at the same instant.
        const who: { human: string; channel: Intent['channel'] } =
          k % 3 === 0
            ? { human: 'alice', channel: k % 2 === 1 ? 'jwt' : 'signed' }
            : k % 3 === 1
              ? { human: DAVE, channel: 'signed' }
              : { human: DAVE, channel: 'token' };
        intents.push(intent(0, who.human, k % 2 === 0 ? 'approved' : 'rejected', { channel: who.channel }));
        if (k % 4 === 1) intents.push(intent(1, 'bob', 'approved'));
        break;
      }
      case 'ladder/early':
        intents.push(intent(0, 'alice', k % 2 === 0 ? 'approved' : 'rejected'));
        break;
      case 'ladder/race-default':
        intents.push(intent(0, 'bob', 'approved', { at: { kind: 'default-due', offsetMs: [-25, -10, 0, 8][k % 4] } }));
        break;
      case 'board/same-instant': {
        const patterns: Outcome[][] = [
          ['approved', 'approved', 'approved'],
          ['approved', 'rejected', 'approved'],
          ['rejected', 'rejected', 'approved'],
          ['approved', 'approved', 'rejected'],
        ];
        const outcomes = patterns[k % patterns.length];
        NAMED.forEach((human, j) =>
          intents.push(intent(j, human, outcomes[j], { channel: human === 'carol' && k % 3 === 1 ? 'jwt' : 'signed' })),
        );
        // Alice also sends the opposite sign-off at the same instant (two windows open): one of the two counts.
        if (k % 4 === 2) intents.push(intent(3, 'alice', outcomes[0] === 'approved' ? 'rejected' : 'approved', { extra: 'none' }));
        break;
      }
      case 'veto/same-instant':
        NAMED.forEach((human, j) => intents.push(intent(j, human, j === 1 ? 'rejected' : 'approved')));
        break;
      case 'veto/race-default-signoff':
        intents.push(intent(0, 'alice', 'approved', { wave: 0 }));
        intents.push(intent(1, 'carol', 'approved', { wave: 1, at: { kind: 'default-due', offsetMs: [-20, -5, 5][k % 3] } }));
        break;
      case 'conf/resolve':
        intents.push(intent(0, 'bob', k % 2 === 0 ? 'approved' : 'rejected', { bind: true }));
        break;
      default:
        break;
    }
    const attacks: AttackKind[] = [COMMON_ATTACKS[i % COMMON_ATTACKS.length]];
    if (s.route === 'conf') attacks.push('under-cleared');
    if (s.route === 'board') attacks.push('unnamed');
    if ((s.route === 'board' || s.route === 'single' || s.route === 'conf') && i % 3 === 0) attacks.push('stale-hash');
    // Few token guesses: 10 failures naming one participant lock that participant's NATS token out for a minute.
    if (i % 9 === 4 && badTokens < 3) {
      badTokens++;
      attacks.push('bad-token');
    }
    if (i % 9 === 7 && stolenTokens < 3) {
      stolenTokens++;
      attacks.push('stolen-token');
    }
    return {
      i,
      route: s.route,
      domain: `${ROOT}.${s.route}.d${i}`,
      how: i % 2 === 0 ? 'tie' : 'manual',
      scenario: s.scenario,
      intents,
      attacks,
      proposalId: '',
    };
  });
}

/**
 * The escalation desk under a signed burst (CONCLAVE_AUTH_MODE=required) on TWO escalation
 * replicas, with two intakes and a resolver: 48 proposals escalate at once (ties and manual
 * escalations) onto routes with ladders (remind, reassign, default), M-of-N sign-off (2 of alice,
 * bob, carol; with and without veto) and a confidential route. Signed humans (Ed25519 or JWT; one
 * also with a bearer token) resolve them concurrently: named humans sign at the same instant (landing on
 * either replica), resolutions are retried (same body, new signature) and replayed (same
 * message, same nonce), some race the ladder's default step, and attackers (an agent without the
 * role, a human without the grant or the clearance, an unnamed human, an impersonator, a forged
 * signature, an unsigned request, guessed and stolen tokens) try to resolve them. Then, over
 * every escalation, from the log: routed once; one terminal decision (never a human resolution
 * and a ladder default both) published once after the `escalated` one; M-of-N only by distinct
 * named humans, each counted once; ladder steps in order, on time, none after the end; every
 * copy changed nothing; every attack refused with its code and left nothing; every `ok` a human
 * got is what the log holds, and the log holds nothing no human was told `ok` about.
 */
describe('escalation burst, signed: two escalation replicas, ladders, M-of-N sign-off, retries, replays and attackers', () => {
  const h = new SecureConclaveHarness({
    CONCLAVE_ESCALATION_ROUTES: JSON.stringify(ROUTES),
    CONCLAVE_HUMAN_TOKENS: JSON.stringify({ [DAVE_TOKEN]: DAVE }),
    CONCLAVE_LADDER_SWEEP_INTERVAL_MS: '1000',
    LOG_LEVEL: 'error',
  });
  const subject = `${h.prefix}.v1.resolve`;
  let decisions: DecisionCollector;

  beforeAll(async () => {
    await h.start('intake', 'intake', 'resolver', 'escalation', 'escalation');
    const grant = (actions: string[], domain = ROOT) => ({ domain, domain_authority: 0.9, trust_score: 0.9, actions });
    await h.seed([
      { participant_id: AUTHOR, clearance: 'confidential', grants: [grant(['propose'])] },
      { participant_id: VOTER_A, clearance: 'confidential', grants: [grant(['respond'])] },
      { participant_id: VOTER_B, clearance: 'confidential', grants: [grant(['respond'])] },
      { participant_id: ESCALATOR, clearance: 'confidential', grants: [grant(['escalate'])] },
      ...[...NAMED, DAVE].map((participant_id) => ({
        participant_id,
        roles: ['human-resolver' as const],
        clearance: 'confidential' as const,
        grants: [grant(['resolve'])],
      })),
      { participant_id: FRANK, roles: ['human-resolver'], clearance: 'internal', grants: [grant(['resolve'])] },
      { participant_id: MALLORY, roles: ['agent'], clearance: 'confidential', grants: [grant(['resolve', 'respond', 'escalate'])] },
      { participant_id: OSCAR, roles: ['human-resolver'], clearance: 'confidential', grants: [grant(['resolve'], 'elsewhere')] },
    ]);
    decisions = new DecisionCollector(h.client);
  });
  afterAll(() => h.stop());

  const pem = (id: string) => h.keys.get(id)!.privateKeyPem;

  /** The bytes and headers of one request on acp.v1.resolve. */
  interface Wire {
    bytes: Uint8Array;
    headers: Record<string, string>;
  }
  const signed = (signer: string, bytes: Uint8Array, key = pem(signer)): Wire => ({
    bytes,
    headers: ed25519Signer(signer, key)(subject, bytes),
  });
  const bearer = (token: string, bytes: Uint8Array): Wire => ({ bytes, headers: { Authorization: `Bearer ${token}` } });

  async function send(wire: Wire): Promise<{ reply: Reply; sentAt: number; repliedAt: number }> {
    const hs = natsHeaders();
    for (const [k, v] of Object.entries(wire.headers)) hs.set(k, v);
    const sentAt = Date.now();
    try {
      const m = await h.nc.request(subject, wire.bytes, { timeout: 15_000, headers: hs });
      return { reply: JSON.parse(decoder.decode(m.data)) as Reply, sentAt, repliedAt: Date.now() };
    } catch (err) {
      return { reply: { transport: (err as Error).message }, sentAt, repliedAt: Date.now() };
    }
  }

  it(
    'given two escalation replicas with authentication required, routes with ladders and M-of-N sign-off, when 48 proposals escalate at once and signed humans resolve them concurrently (same-instant sign-offs, retries, replays, races with the ladder default) while attackers try too, then every escalation is routed once and ends once, as its rule and its log say',
    async () => {
      const started = Date.now();
      // ------------------------------------------------------------ given
      const plans = makePlans(h.run);
      const author = await h.clientFor(AUTHOR);
      const voterA = await h.clientFor(VOTER_A);
      const voterB = await h.clientFor(VOTER_B);
      const escalator = await h.clientFor(ESCALATOR);
      const humans = new Map<string, ConclaveClient>();
      for (const id of [...NAMED, DAVE]) humans.set(id, await h.clientFor(id));
      const log = h.instances.find((x) => x.name === 'escalation')!.app.get<EventLog<ProposalEvent>>(EVENT_LOG);
      const streamOf = async (id: string) => (await log.read(proposalStream(id))).events.map((e) => e.event);

      // Which replica handles each resolve request: both replicas' handlers, observed (not changed).
      const replicas = h.instances.filter((x) => x.name === 'escalation');
      expect(replicas).toHaveLength(2);
      const handledBy = new Map<string, number[]>();
      const handledCount = [0, 0];
      replicas.forEach((x, r) => {
        const handler = x.app.get(ResolveEscalationHandler);
        const original = handler.handle.bind(handler);
        handler.handle = (body, credentials) => {
          handledCount[r]++;
          const nonce = credentials.request?.getHeaders()?.get('Conclave-Nonce');
          if (nonce) handledBy.set(nonce, [...(handledBy.get(nonce) ?? []), r]);
          return original(body, credentials);
        };
      });

      // Every proposal submitted (a tie's first vote cast), none escalated yet.
      const setupRefusals: string[] = [];
      await Promise.all(
        plans.map(async (p) => {
          const proposal = await author.propose({
            domain: p.domain,
            author: AUTHOR,
            payload: { burst: p.i, route: p.route },
            quorum: p.how === 'tie' ? 2 : 3,
            ...(p.route === 'conf' ? { classification: 'confidential' } : {}),
          });
          p.proposalId = proposal.proposal_id;
          if (p.how === 'tie') await voterA.endorse(p.proposalId, { participant_id: VOTER_A, confidence: 0.8 });
        }),
      );
      const byId = new Map(plans.map((p) => [p.proposalId, p]));

      // ------------------------------------------------------------ when: the burst of escalations
      const attempts: Attempt[] = [];
      const attackSnapshots: Array<{ plan: Plan; attack: AttackKind; added: string[] }> = [];
      const burstAt = Date.now();
      await Promise.all(
        plans.map((p) =>
          (p.how === 'tie'
            ? voterB.challenge(p.proposalId, { participant_id: VOTER_B, confidence: 0.8 })
            : escalator.escalate(p.proposalId, { reason: `burst ${p.i} needs a human`, requested_by: ESCALATOR })
          ).catch((e: Error) => setupRefusals.push(`${p.i}: ${e.message}`)),
        ),
      );

      /** An attack, before any human acts on its escalation: refused, and nothing but the desk's own steps appended meanwhile. */
      async function attack(p: Plan, kind: AttackKind, binding: { escalation_id: string; payload_hash: string }) {
        const note = `attack-${kind}-p${p.i}-${h.run}`;
        const body = (as: string, extra: Record<string, unknown> = {}) =>
          encoder.encode(JSON.stringify({ proposal_id: p.proposalId, outcome: 'approved', resolved_by: as, note, ...extra }));
        let as: string;
        let wire: Wire;
        switch (kind) {
          case 'agent':
            wire = signed(MALLORY, body((as = MALLORY)));
            break;
          case 'no-grant':
            wire = signed(OSCAR, body((as = OSCAR)));
            break;
          case 'impersonation':
            wire = signed(OSCAR, body((as = 'alice')));
            break;
          case 'forged-signature':
            wire = signed('alice', body((as = 'alice')), pem(MALLORY));
            break;
          case 'unsigned':
            wire = { bytes: body((as = 'alice')), headers: {} };
            break;
          case 'bad-token':
            wire = bearer(WRONG_TOKEN, body((as = DAVE)));
            break;
          case 'stolen-token':
            wire = bearer(DAVE_TOKEN, body((as = 'alice')));
            break;
          case 'under-cleared':
            wire = signed(FRANK, body((as = FRANK)));
            break;
          case 'unnamed':
            wire = signed(DAVE, body((as = DAVE)));
            break;
          case 'stale-hash': {
            as = p.route === 'board' ? 'carol' : p.route === 'conf' ? 'bob' : DAVE;
            wire = signed(as, body(as, { escalation_id: binding.escalation_id, payload_hash: WRONG_HASH }));
            break;
          }
        }
        const before = new Set((await streamOf(p.proposalId)).map((e) => e.event_id));
        const r = await send(wire);
        const added = (await streamOf(p.proposalId)).filter((e) => !before.has(e.event_id));
        attempts.push({ plan: p, attack: kind, role: 'first', as, nonce: wire.headers['Conclave-Nonce'], ...r });
        const notDesk = added.filter((e) => e.actor !== 'conclave-escalation');
        attackSnapshots.push({ plan: p, attack: kind, added: notDesk.map((e) => `${e.type} by ${e.actor}`) });
      }

      /** One intent: its own send and its extra copies (a retry signs the same body anew; a replay resends the same bytes and headers). */
      async function carryOut(p: Plan, intent: Intent, binding: { escalation_id: string; payload_hash: string }, release: Promise<void>) {
        const body = {
          proposal_id: p.proposalId,
          outcome: intent.outcome,
          resolved_by: intent.human,
          note: intent.note,
          ...(intent.bind ? binding : {}),
        };
        const bytes = encoder.encode(JSON.stringify(body));
        const wire = async (): Promise<Wire> =>
          intent.channel === 'token'
            ? bearer(DAVE_TOKEN, bytes)
            : intent.channel === 'jwt'
              ? { bytes, headers: await jwtSigner(intent.human, pem(intent.human))(subject, bytes) }
              : signed(intent.human, bytes);
        const first = await wire();
        const retry = intent.extra.startsWith('retry') ? await wire() : first;
        const record = (role: Attempt['role'], w: Wire, r: Awaited<ReturnType<typeof send>>) =>
          attempts.push({ plan: p, intent, role, as: intent.human, nonce: w.headers['Conclave-Nonce'], ...r });
        await release;
        switch (intent.extra) {
          case 'none':
            record('first', first, await send(first));
            break;
          case 'retry-after':
          case 'replay-after': {
            record('first', first, await send(first));
            record(intent.extra === 'retry-after' ? 'retry' : 'replay', retry, await send(retry));
            break;
          }
          case 'retry-concurrent':
          case 'replay-concurrent': {
            const [a, b] = await Promise.all([send(first), send(retry)]);
            record('first', first, a);
            record(intent.extra === 'retry-concurrent' ? 'retry' : 'replay', retry, b);
            break;
          }
        }
      }

      /** Each escalation's humans and attackers, all escalations at once. */
      async function drive(p: Plan): Promise<void> {
        const [escalated] = await decisions.waitFor(p.proposalId, 1, 20_000);
        const escalatedAt = Date.parse(escalated.escalation!.escalated_at);
        // The binding as a human reads it (the desk's inbox on either replica, once it has the escalation).
        const reader = humans.get(p.route === 'conf' ? 'bob' : 'alice')!;
        const { binding } = await eventually(
          () => reader.escalation(p.proposalId).catch(() => undefined),
          10_000,
          `${p.proposalId} readable on the desk`,
        );
        await Promise.all(p.attacks.map((kind) => attack(p, kind, binding)));
        const waves = [...new Set(p.intents.map((x) => x.wave))].sort();
        for (const wave of waves) {
          const intents = p.intents.filter((x) => x.wave === wave);
          const dueAt = escalatedAt + ladderTotal(p.route);
          const at = intents[0].at;
          // All of a wave's requests are signed first, then released together (at the default's due time for a race).
          let open!: () => void;
          const release = new Promise<void>((r) => (open = r));
          const running = intents.map((x) => carryOut(p, x, binding, release));
          if (at.kind === 'default-due') await sleepUntil(dueAt + at.offsetMs);
          open();
          await Promise.all(running);
        }
      }
      const driveErrors: string[] = [];
      await Promise.all(plans.map((p) => drive(p).catch((e: Error) => driveErrors.push(`p${p.i}: ${e.message}`))));
      const humansDoneMs = Date.now() - burstAt;

      // Every escalation ends (a human, a sign-off or the ladder's default), and no ladder step can still fall due.
      await eventually(
        async () => (plans.every((p) => decisions.for(p.proposalId).length >= 2) ? true : undefined),
        20_000,
        'a final decision for every escalation',
      ).catch(() => undefined);
      const lastDue = Math.max(
        ...plans.map((p) => {
          const first = decisions.for(p.proposalId)[0];
          return first?.escalation ? Date.parse(first.escalation.escalated_at) + ladderTotal(p.route) : 0;
        }),
      );
      await sleepUntil(lastDue + 500);
      const endedMs = Date.now() - burstAt;

      // ------------------------------------------------------------ then: read the log
      const checkedAt = Date.now();
      const streams = new Map(await Promise.all(plans.map(async (p) => [p.proposalId, await streamOf(p.proposalId)] as const)));
      // The consumer streams are fed asynchronously (the resolver's outbox, each replica's notifier): read once they hold every event's message.
      const readChecked = async () => {
        const run = await readRun(h.nc, runNamesOf(h.env));
        return { run, generic: checkInvariants(run, { now: new Date(checkedAt) }) };
      };
      const PUBLISHED: string[] = ['one-decision-per-terminal-event', 'escalation-messages-match-log'];
      let { run, generic } = await readChecked();
      await eventually(
        async () => {
          ({ run, generic } = await readChecked());
          return PUBLISHED.every((n) => generic.invariants[n as (typeof INVARIANTS)[number]].violations === 0) ? true : undefined;
        },
        15_000,
        'every decision and desk step published',
      ).catch(() => undefined);
      const publishedMs = Date.now() - checkedAt;
      const decisionMessages = (id: string) => run.decisions.filter((m) => m.body['proposal_id'] === id).sort((a, b) => a.seq - b.seq);

      const v = {
        setupRefusals,
        driveErrors,
        notEscalatedOnce: [] as string[],
        notRoutedOnce: [] as string[],
        routedWrong: [] as string[],
        notOneTerminal: [] as string[],
        humanAndDefaultBoth: [] as string[],
        endedByWrongPath: [] as string[],
        eventsAfterEnd: [] as string[],
        decisionsNotEscalatedThenFinal: [] as string[],
        signOffsOnPlainRoute: [] as string[],
        signOffByUnnamed: [] as string[],
        signOffTwice: [] as string[],
        signOffTallyWrong: [] as string[],
        resolvedAgainstRule: [] as string[],
        ladderOutOfOrder: [] as string[],
        ladderEarly: [] as string[],
        ladderMissed: [] as string[],
        defaultWrong: [] as string[],
        genericInvariants: [] as string[],
        unanswered: [] as string[],
        okTwicePerHuman: [] as string[],
        replyLogMismatch: [] as string[],
        okNotInLog: [] as string[],
        logNotBackedByOk: [] as string[],
        legitRefusedWrongly: [] as string[],
        retryNotExistingState: [] as string[],
        replayNotRefused: [] as string[],
        attackNotRefusedAsTyped: [] as string[],
        attackChangedEscalation: [] as string[],
        attackerInLog: [] as string[],
      };
      for (const name of INVARIANTS) {
        if (name === 'every-event-audited') continue;
        for (const ex of generic.invariants[name].examples) v.genericInvariants.push(`${name}: ${ex}`);
      }

      const terminalOf = (events: ProposalEvent[]) =>
        events.find((e) => e.type === T.EscalationResolved || e.type === T.EscalationDefaulted) as
          | Extract<ProposalEvent, { type: typeof T.EscalationResolved | typeof T.EscalationDefaulted }>
          | undefined;
      const summaries: string[] = [];
      const lateness: number[] = [];
      const okNotes = new Set(
        attempts.filter((a) => a.intent && !('transport' in a.reply) && a.reply.ok).map((a) => `${a.as}|${a.intent!.note}`),
      );
      const transportNotes = new Set(attempts.filter((a) => a.intent && 'transport' in a.reply).map((a) => `${a.as}|${a.intent!.note}`));

      for (const p of plans) {
        const tag = `p${p.i} ${p.route}/${p.scenario} ${p.proposalId}`;
        const all = streams.get(p.proposalId)!;
        const escalatedEvents = all.filter((e) => e.type === T.ProposalEscalated);
        if (escalatedEvents.length !== 1) {
          v.notEscalatedOnce.push(`${tag}: ${escalatedEvents.length} ProposalEscalated`);
          continue;
        }
        const escalatedEvent = escalatedEvents[0] as Extract<ProposalEvent, { type: typeof T.ProposalEscalated }>;
        const escalatedAt = escalatedEvent.data.escalation.escalated_at;
        const after = all.slice(all.indexOf(escalatedEvent) + 1);
        const actorsOf = after.map((e) => e.actor);
        for (const a of ATTACKER_IDS) if (actorsOf.includes(a)) v.attackerInLog.push(`${tag}: an event by ${a}`);

        // Routed exactly once, first, with its route.
        const routed = after.filter((e) => e.type === T.EscalationRouted) as Array<
          Extract<ProposalEvent, { type: typeof T.EscalationRouted }>
        >;
        if (routed.length !== 1 || after[0] !== routed[0]) {
          v.notRoutedOnce.push(`${tag}: ${routed.length} EscalationRouted, first event after the escalation ${after[0]?.type}`);
        }
        const routing = routed[0]?.data.routing;
        if (routed[0]) {
          const expected = routeConfig(p.route);
          if (
            routing.route_id !== p.route ||
            canonicalJson(routing.ladder) !== canonicalJson(ladderOf(p.route)) ||
            canonicalJson(routing.sign_off) !== canonicalJson(signOffOf(p.route)) ||
            canonicalJson(routing.assignees) !== canonicalJson(expected.assignees) ||
            routed[0].data.escalation_id !== escalatedEvent.event_id
          )
            v.routedWrong.push(`${tag}: ${canonicalJson(routed[0].data)}`);
        }

        // Exactly one terminal event; never a human resolution and a ladder default both; nothing after it.
        const terminals = after.filter((e) => e.type === T.EscalationResolved || e.type === T.EscalationDefaulted);
        const terminal = terminalOf(after);
        if (terminals.length !== 1) v.notOneTerminal.push(`${tag}: ${terminals.map((e) => e.type).join(', ') || 'none'}`);
        if (terminals.some((e) => e.type === T.EscalationResolved) && terminals.some((e) => e.type === T.EscalationDefaulted))
          v.humanAndDefaultBoth.push(tag);
        if (terminal) {
          const beyond = after.slice(after.indexOf(terminal) + 1);
          if (beyond.length > 0)
            v.eventsAfterEnd.push(`${tag}: ${beyond.map((e) => `${e.type} by ${e.actor} at ${e.occurred_at}`).join(', ')}`);
          const byHuman = terminal.type === T.EscalationResolved;
          const mustBe = p.scenario === 'none' ? 'default' : ladderOf(p.route).some((s) => s.action === 'default') ? undefined : 'human';
          if (mustBe && (mustBe === 'human') !== byHuman) v.endedByWrongPath.push(`${tag}: ended by ${terminal.type}, expected ${mustBe}`);
        }

        // The decisions stream: the escalation, then its one final decision.
        const msgs = decisionMessages(p.proposalId);
        const finalOk =
          msgs.length === 2 &&
          msgs[0].body['event_id'] === escalatedEvent.event_id &&
          msgs[0].body['outcome'] === 'escalated' &&
          terminal !== undefined &&
          msgs[1].body['event_id'] === terminal.event_id &&
          msgs[1].body['outcome'] === terminal.data.resolution.outcome;
        if (!finalOk)
          v.decisionsNotEscalatedThenFinal.push(
            `${tag}: ${msgs.map((m) => `${String(m.body['outcome'])}/${String(m.body['trigger'])} ${String(m.body['event_id'])}`).join(', ')}; terminal ${terminal?.event_id}`,
          );

        // Sign-offs: only on M-of-N routes, by named humans, once each, tallied; resolved exactly when the rule says.
        const rule = signOffOf(p.route);
        const signOffs = after.filter((e) => e.type === T.EscalationSignedOff) as Array<
          Extract<ProposalEvent, { type: typeof T.EscalationSignedOff }>
        >;
        if (!rule && signOffs.length > 0) v.signOffsOnPlainRoute.push(`${tag}: ${signOffs.length}`);
        if (rule) {
          const seen = new Set<string>();
          signOffs.forEach((e, k) => {
            const by = e.data.sign_off.by;
            if (!rule.of.includes(by)) v.signOffByUnnamed.push(`${tag}: ${by}`);
            if (seen.has(by)) v.signOffTwice.push(`${tag}: ${by}`);
            seen.add(by);
            const so = signOffs.slice(0, k + 1).map((x) => x.data.sign_off);
            const approvals = so.filter((x) => x.outcome === 'approved').length;
            if (e.data.approvals !== approvals || e.data.rejections !== so.length - approvals || e.data.required !== rule.required)
              v.signOffTallyWrong.push(
                `${tag}: after ${k + 1} sign-off(s) ${approvals}/${so.length - approvals}, event says ${e.data.approvals}/${e.data.rejections}`,
              );
            // The rule must not have resolved before this sign-off.
            if (k < signOffs.length - 1 && signOffDecision(rule, so).kind === 'resolve')
              v.resolvedAgainstRule.push(`${tag}: resolved by the rule after ${k + 1} sign-off(s), yet more were recorded`);
          });
          if (terminal?.type === T.EscalationResolved) {
            const last = signOffs[signOffs.length - 1];
            const decision = signOffDecision(
              rule,
              signOffs.map((x) => x.data.sign_off),
            );
            const r = terminal.data.resolution;
            const agreeing = new Set(signOffs.filter((x) => x.data.sign_off.outcome === r.outcome).map((x) => x.data.sign_off.by));
            const ok =
              last !== undefined &&
              last.causation_id === terminal.causation_id &&
              decision.kind === 'resolve' &&
              decision.outcome === r.outcome &&
              (decision.by === 'veto') === (r.vetoed === true) &&
              (r.vetoed === true || agreeing.size >= rule.required) &&
              canonicalJson(r.sign_offs ?? null) === canonicalJson(signOffs.map((x) => x.data.sign_off)) &&
              r.trigger === 'manual';
            if (!ok)
              v.resolvedAgainstRule.push(
                `${tag}: resolved ${r.outcome}${r.vetoed ? ' (veto)' : ''} with sign-offs ${signOffs.map((x) => `${x.data.sign_off.by}:${x.data.sign_off.outcome}`).join(' ')}`,
              );
          }
        }

        // The ladder: steps in order, from step 0, each at or after its due time, the default as the route says; none missed.
        const ladder = routing?.ladder ?? [];
        const steps = after.filter(
          (e) => e.type === T.EscalationReminded || e.type === T.EscalationReassigned || e.type === T.EscalationDefaulted,
        ) as Array<
          Extract<ProposalEvent, { type: typeof T.EscalationReminded | typeof T.EscalationReassigned | typeof T.EscalationDefaulted }>
        >;
        steps.forEach((e, k) => {
          const step = e.data.step;
          const conf = ladder[step];
          const expectedType = { remind: T.EscalationReminded, reassign: T.EscalationReassigned, default: T.EscalationDefaulted }[
            conf?.action ?? 'remind'
          ];
          if (step !== k || !conf || e.type !== expectedType) v.ladderOutOfOrder.push(`${tag}: #${k} is ${e.type} step ${step}`);
          const due = ladderStepDueAt(escalatedAt, ladder, step);
          if (due !== null) lateness.push(Date.parse(e.occurred_at) - Date.parse(due));
          if (due === null || Date.parse(e.occurred_at) < Date.parse(due) || ('due_at' in e.data && e.data.due_at !== due))
            v.ladderEarly.push(`${tag}: step ${step} at ${e.occurred_at}, due ${due}`);
          if (e.type === T.EscalationReassigned && conf?.action === 'reassign' && canonicalJson(e.data.to) !== canonicalJson(conf.to))
            v.ladderOutOfOrder.push(`${tag}: step ${step} reassigned to ${e.data.to.join(',')}`);
          if (e.type === T.EscalationDefaulted) {
            const r = e.data.resolution;
            if (conf?.action !== 'default' || r.outcome !== conf.outcome || r.trigger !== 'timeout' || r.ladder_default !== true)
              v.defaultWrong.push(`${tag}: ${canonicalJson(r)}`);
          }
        });
        const endMs = terminal ? Date.parse(terminal.occurred_at) : checkedAt;
        ladder.forEach((_, s) => {
          const due = Date.parse(ladderStepDueAt(escalatedAt, ladder, s)!);
          if (!steps.some((e) => e.data.step === s) && due < endMs - LADDER_SLACK_MS)
            v.ladderMissed.push(
              `${tag}: step ${s} due ${new Date(due).toISOString()}, escalation open until ${new Date(endMs).toISOString()}`,
            );
        });

        // The log's human entries against the replies: each note in the log is an intent some human was told `ok` about.
        const humanEntries: Array<{ by: string; note: string | null; outcome: string; event: ProposalEvent }> = rule
          ? signOffs.map((e) => ({ by: e.data.sign_off.by, note: e.data.sign_off.note, outcome: e.data.sign_off.outcome, event: e }))
          : terminal?.type === T.EscalationResolved
            ? [
                {
                  by: terminal.data.resolution.resolved_by!,
                  note: terminal.data.resolution.note ?? null,
                  outcome: terminal.data.resolution.outcome,
                  event: terminal,
                },
              ]
            : [];
        for (const x of humanEntries) {
          const key = `${x.by}|${x.note}`;
          const intent = p.intents.find((i) => i.human === x.by && i.note === x.note);
          if (!intent || intent.outcome !== x.outcome || (!okNotes.has(key) && !transportNotes.has(key)))
            v.logNotBackedByOk.push(
              `${tag}: ${x.event.type} by ${x.by} (${x.outcome}, note ${x.note}) without an ok reply to that human for it`,
            );
        }

        // Per human: at most one ok, and as many log entries as ok replies (no transport failure to blur it).
        for (const human of new Set(p.intents.map((x) => x.human))) {
          const mine = attempts.filter((a) => a.plan === p && a.intent?.human === human);
          const oks = mine.filter((a) => !('transport' in a.reply) && a.reply.ok).length;
          const entries = humanEntries.filter((x) => x.by === human).length;
          if (oks > 1) v.okTwicePerHuman.push(`${tag}: ${human} got ${oks} ok replies`);
          if (!mine.some((a) => 'transport' in a.reply) && entries !== oks)
            v.replyLogMismatch.push(`${tag}: ${human} got ${oks} ok, the log has ${entries} entr${entries === 1 ? 'y' : 'ies'} by them`);
        }

        // Every reply to a human: ok matches the log; a refusal is a replay, or tells the state as the log has it.
        const humanAttempts = attempts.filter((a) => a.plan === p && a.intent);
        const resolvedToldAtMs = Math.min(
          ...humanAttempts.map((a) =>
            !('transport' in a.reply) && a.reply.ok && a.reply.proposal.status === 'resolved' ? a.repliedAt : Infinity,
          ),
        );
        const resolvedToldAt = Number.isFinite(resolvedToldAtMs) ? resolvedToldAtMs : undefined;
        for (const a of humanAttempts) {
          const intent = a.intent!;
          const what = `${tag}: ${intent.human} ${intent.outcome} (${intent.channel}, ${intent.extra}, ${a.role})`;
          if ('transport' in a.reply) {
            v.unanswered.push(`${what}: ${a.reply.transport}`);
            continue;
          }
          if (a.reply.ok) {
            const entry = humanEntries.find((x) => x.by === intent.human && x.note === intent.note && x.outcome === intent.outcome);
            const status = a.reply.proposal.status;
            let agrees = entry !== undefined;
            if (entry && rule) {
              const resolvedHere = terminal?.type === T.EscalationResolved && terminal.causation_id === entry.event.causation_id;
              agrees =
                status === (resolvedHere ? 'resolved' : 'escalated') &&
                (!resolvedHere || canonicalJson(a.reply.proposal.resolution) === canonicalJson(terminal!.data.resolution));
            } else if (entry) {
              agrees = status === 'resolved' && canonicalJson(a.reply.proposal.resolution) === canonicalJson(terminal!.data.resolution);
            }
            if (!entry) v.okNotInLog.push(`${what}: ok (${status}), the log has no such entry`);
            else if (!agrees)
              v.okNotInLog.push(`${what}: ok says ${status} ${canonicalJson(a.reply.proposal.resolution ?? null)}, the log disagrees`);
            continue;
          }
          if (isReplayRefusal(a.reply)) {
            if (a.role === 'retry' || (a.role === 'first' && intent.extra !== 'replay-concurrent'))
              v.legitRefusedWrongly.push(`${what}: refused as a replay`);
            continue;
          }
          const code = a.reply.error.code;
          const mineInLog = humanEntries.find((x) => x.by === intent.human);
          const truthful =
            (code === 'NOT_ESCALATED' && terminal !== undefined && Date.parse(terminal.occurred_at) <= a.repliedAt) ||
            (code === 'DUPLICATE_RESPONSE' &&
              rule !== null &&
              mineInLog !== undefined &&
              Date.parse(mineInLog.event.occurred_at) <= a.repliedAt);
          if (!truthful) v.legitRefusedWrongly.push(`${what}: ${code} ${a.reply.error.message ?? ''}`);
          // Sent after some human was already told the escalation is resolved: only NOT_ESCALATED tells that state.
          if (resolvedToldAt !== undefined && a.sentAt > resolvedToldAt && code !== 'NOT_ESCALATED')
            v.retryNotExistingState.push(`${what}: ${code}, sent ${a.sentAt - resolvedToldAt} ms after a human was told it is resolved`);
        }

        // Each intent's copies: a replay is refused; a retry of an accepted resolution is answered from the state it left.
        for (const intent of p.intents) {
          const mine = humanAttempts.filter((a) => a.intent === intent);
          const [first, copy] = [mine.find((a) => a.role === 'first'), mine.find((a) => a.role !== 'first')];
          const what = `${tag}: ${intent.human} (${intent.extra})`;
          if (intent.extra === 'replay-after' && copy && !isReplayRefusal(copy.reply))
            v.replayNotRefused.push(`${what}: ${codeOf(copy.reply)}`);
          if (intent.extra === 'replay-concurrent' && mine.filter((a) => isReplayRefusal(a.reply)).length !== 1)
            v.replayNotRefused.push(`${what}: ${mine.map((a) => codeOf(a.reply)).join(' + ')}`);
          if (intent.extra === 'retry-after' && first && copy && !('transport' in first.reply) && first.reply.ok) {
            const allowed = rule ? ['DUPLICATE_RESPONSE', 'NOT_ESCALATED'] : ['NOT_ESCALATED'];
            if (!allowed.includes(codeOf(copy.reply)))
              v.retryNotExistingState.push(`${what}: retry of an accepted resolution → ${codeOf(copy.reply)}`);
          }
        }

        // Attacks: the typed refusal, and nothing appended by them.
        for (const a of attempts.filter((x) => x.plan === p && x.attack)) {
          const expected = EXPECTED_REFUSAL[a.attack!];
          const r = a.reply;
          const got =
            'transport' in r ? { code: `transport ${r.transport}` } : r.ok ? { code: 'ok' } : { code: r.error.code, field: r.error.field };
          if (got.code !== expected.code || (expected.field !== undefined && got.field !== expected.field))
            v.attackNotRefusedAsTyped.push(
              `${tag}: ${a.attack} → ${got.code}${'field' in got ? ` (${got.field})` : ''}, expected ${expected.code}${expected.field ? ` (${expected.field})` : ''}`,
            );
        }
        for (const s of attackSnapshots.filter((x) => x.plan === p && x.added.length > 0))
          v.attackChangedEscalation.push(`${tag}: during ${s.attack}: ${s.added.join(', ')}`);
        for (const x of humanEntries)
          if (x.note?.startsWith('attack-')) v.attackChangedEscalation.push(`${tag}: the log records the attack ${x.note}`);

        summaries.push(
          `${p.i}:${p.route[0]}${p.scenario === 'race-default' || p.scenario === 'race-default-signoff' ? '!' : ''}=${
            terminal?.type === T.EscalationDefaulted
              ? 'D'
              : terminal?.type === T.EscalationResolved
                ? terminal.data.resolution.vetoed
                  ? 'V'
                  : 'H'
                : '?'
          }${steps.filter((e) => e.type !== T.EscalationDefaulted).length}`,
        );
      }

      // The burst did land on both replicas, and same-instant sign-offs were split between them.
      const signOffPlans = plans.filter((p) => p.scenario === 'same-instant');
      const split = signOffPlans.filter((p) => {
        const nonces = attempts.filter((a) => a.plan === p && a.intent && a.role === 'first' && a.nonce).map((a) => a.nonce!);
        return new Set(nonces.flatMap((n) => handledBy.get(n) ?? [])).size === 2;
      });
      const races = plans.filter((p) => p.scenario.startsWith('race-default'));
      const raceWins = races.map((p) => (terminalOf(streams.get(p.proposalId)!)?.type === T.EscalationResolved ? 'human' : 'default'));
      console.log(
        [
          `${plans.length} escalations: humans done ${humansDoneMs} ms after the burst, all ended by ${endedMs} ms (test ${Date.now() - started} ms)`,
          `consumer streams complete ${publishedMs} ms after the last step`,
          `resolve requests handled by replica 0/1: ${handledCount.join('/')}; same-instant sign-offs split over both replicas on ${split.length}/${signOffPlans.length}`,
          `ladder steps: ${lateness.length}, at most ${Math.max(0, ...lateness)} ms after their due time`,
          `races with the ladder default: ${raceWins.filter((x) => x === 'human').length} won by the human, ${raceWins.filter((x) => x === 'default').length} by the default`,
          `attempts: ${attempts.length} (${attempts.filter((a) => a.attack).length} attacks: ${[...new Set(attempts.filter((a) => a.attack).map((a) => a.attack))].join(', ')})`,
          `codes: ${[...new Set(attempts.map((a) => codeOf(a.reply)))].map((c) => `${c} ${attempts.filter((a) => codeOf(a.reply) === c).length}`).join(', ')}`,
          `per escalation (route, ! = race, end: H human/V veto/D default, ladder steps): ${summaries.join(' ')}`,
        ].join('\n'),
      );

      // Every service's metrics, summed over the replicas: each decision and ladder step counted
      // once, by whichever replica recorded it, and no escalation left open in either replica's view.
      const scrapes = await Promise.all(
        h.instances.map(async (x) => ({
          name: x.name,
          samples: parseExposition(await (await fetch(`${(await x.app.getUrl()).replace('[::1]', '127.0.0.1')}/metrics`)).text()),
        })),
      );
      const metric = (name: string, labels: Record<string, string> = {}) => scrapes.reduce((n, x) => n + sumOf(x.samples, name, labels), 0);
      const everyEvent = [...streams.values()].flat();
      const ofType = (type: string) => everyEvent.filter((e) => e.type === type).length;
      const steps = {
        routed: T.EscalationRouted,
        reminded: T.EscalationReminded,
        reassigned: T.EscalationReassigned,
        signed_off: T.EscalationSignedOff,
        defaulted: T.EscalationDefaulted,
      };
      const fromMetrics = {
        decisions: metric('conclave_acp_decisions_total'),
        steps: Object.fromEntries(Object.keys(steps).map((step) => [step, metric('conclave_escalation_ladder_steps_total', { step })])),
        openByReplica: scrapes.filter((x) => x.name === 'escalation').map((x) => sumOf(x.samples, 'conclave_escalation_open_escalations')),
      };
      const fromLog = {
        decisions: everyEvent.filter((e) => isTerminalEvent(e)).length,
        steps: Object.fromEntries(Object.entries(steps).map(([step, type]) => [step, ofType(type)])),
        openByReplica: [0, 0],
      };
      expect(fromMetrics).toEqual(fromLog);

      expect(v).toEqual(Object.fromEntries(Object.keys(v).map((k) => [k, []])));
      // The burst exercised what it is meant to.
      expect(handledCount.every((n) => n > 0)).toBe(true);
      expect(split.length).toBeGreaterThan(0);
      const kinds = new Set(attempts.map((a) => a.attack).filter(Boolean));
      expect([...kinds].sort()).toEqual(Object.keys(EXPECTED_REFUSAL).sort());
      for (const extra of EXTRAS) expect({ extra, used: attempts.some((a) => a.intent?.extra === extra) }).toEqual({ extra, used: true });
      expect(byId.size).toBe(plans.length);
    },
    TEST_TIMEOUT_MS,
  );
});
