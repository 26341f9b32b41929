/**
 * The invariant checker: reads what a run left behind (the event log, ACP_DECISIONS,
 * ACP_ESCALATIONS, the rejections and the audit chain) and reports, per invariant, how many
 * violations there are, with a few examples. It folds proposals with the pure protocol library,
 * so a rule is never restated here: what the decider would have done is asked of the decider.
 *
 * `readRun` does the I/O; `checkInvariants` is pure, so it is tested on hand-built logs.
 */
import {
  canonicalJson,
  decide,
  DEFAULT_DECIDER_CONFIG,
  evolveProposal,
  initialProposalState,
  isQuorumMet,
  isTerminalEvent,
  PROPOSAL_COMMAND_TYPES,
  PROPOSAL_EVENT_TYPES,
  PROPOSAL_STREAM_CATEGORY,
  ProposalEvent,
  ProposalState,
} from '@conclave/acp-protocol';
import { acpStreamNames } from '@conclave/messaging';
import { AuditEntry, verifyChain } from '@conclave/registry-protocol';
import { createHash } from 'node:crypto';
import { NatsConnection } from 'nats';

/** The names a run's services use (as ConclaveHarness makes them from its env). */
export interface RunNames {
  /** JetStream stream of the event log, e.g. `EVT_<run>`. */
  eventStream: string;
  /** Log subjects are `<eventSubjectPrefix>.evt.<category>.<id>`. */
  eventSubjectPrefix: string;
  /** Suffix of ACP_DECISIONS, ACP_ESCALATIONS... (acpStreamNames). */
  streamSuffix: string;
}

export function runNamesOf(env: Record<string, string>): RunNames {
  return {
    eventStream: env['CONCLAVE_EVENT_STREAM'],
    eventSubjectPrefix: env['CONCLAVE_EVENT_SUBJECT_PREFIX'],
    streamSuffix: env['CONCLAVE_STREAM_SUFFIX'] ?? '',
  };
}

/** One event of the log, with the commit (stream message) it came in. */
export interface LoggedEvent {
  seq: number;
  category: string;
  id: string;
  event: { event_id: string; type: string; occurred_at?: string; [k: string]: unknown };
  /** The stream sequence its commit expected to follow (`Conclave-Prev-Seq`; 0 for a new stream). */
  prev?: number;
}

/** One message of a consumer-facing stream. */
export interface StreamMessage<T = Record<string, unknown>> {
  seq: number;
  msgId: string | null;
  subject: string;
  body: T;
}

/** What a run left behind. `audit` is absent when the run had no audit service. */
export interface RunRecord {
  events: LoggedEvent[];
  decisions: StreamMessage[];
  escalations: StreamMessage[];
  audit?: { entries: AuditEntry[]; rejections: StreamMessage[]; rejectionsStream: string };
}

/** What an agent sent and what it got back; `reply` undefined: no reply (timeout, no responders). */
export type CommandAttempt =
  | { command: 'propose'; proposal_id: string; reply: Reply | undefined }
  | { command: 'respond'; proposal_id: string; participant_id: string; reply: Reply | undefined };

export type Reply = { ok: true } | { ok: false; error: { code: string; message?: string } };

export interface CheckOptions {
  /** When the check runs: deadlines are only judged once they are this far in the past. */
  now?: Date;
  /** The sweeper's grace (CONCLAVE_EXPIRY_GRACE_MS). */
  expiryGraceMs?: number;
  /** How late after expires_at + grace a proposal may become terminal. Default 2 s. */
  expirySlackMs?: number;
  /** The replies the test collected, to hold against the log. */
  attempts?: readonly CommandAttempt[];
}

export const INVARIANTS = [
  /** Every proposal stream folds with evolveProposal (no event the decider could not produce). */
  'log-folds',
  /** A proposal whose quorum policy was met has exactly one resolution event; none has two. */
  'quorum-met-resolved-once',
  /** Each resolution is what the decider makes of the state just before it (never a stale state). */
  'resolution-justified',
  /** One ACP_DECISIONS message per terminal event (deduped by event_id). */
  'one-decision-per-terminal-event',
  /** No ACP_DECISIONS message without its terminal event in the log. */
  'decision-has-terminal-event',
  /** One ACP_ESCALATIONS message per escalation, none without its event. */
  'escalation-messages-match-log',
  /** A proposal with expires_at is terminal by expires_at + grace + slack. */
  'expired-in-time',
  /** No response recorded after expires_at. */
  'no-response-after-expiry',
  /** ok: true replies exist in the log; ok: false ones left no trace. */
  'replies-agree-with-log',
  /** Every event and every rejection is in the audit chain once, and the chain verifies. */
  'every-event-audited',
] as const;
export type InvariantName = (typeof INVARIANTS)[number];

export interface InvariantResult {
  violations: number;
  examples: string[];
}

export interface CheckReport {
  invariants: Record<InvariantName, InvariantResult>;
  counts: {
    events: number;
    proposals: number;
    pending: number;
    terminalEvents: number;
    decisionMessages: number;
    auditEntries?: number;
    rejections?: number;
  };
  /** Proposals still pending with their quorum met: the "stuck" ones. */
  stuck: string[];
  ok: boolean;
}

const MAX_EXAMPLES = 5;

class Tally {
  readonly results = Object.fromEntries(INVARIANTS.map((n) => [n, { violations: 0, examples: [] as string[] }])) as Record<
    InvariantName,
    InvariantResult
  >;
  add(name: InvariantName, example: string): void {
    const r = this.results[name];
    r.violations++;
    if (r.examples.length < MAX_EXAMPLES) r.examples.push(example);
  }
}

const ms = (iso: string | null | undefined) => (iso ? Date.parse(iso) : NaN);

/** Resolution events: the first terminal transition of a pending proposal. */
const RESOLUTION_TYPES: ReadonlySet<string> = new Set([
  PROPOSAL_EVENT_TYPES.ProposalResolved,
  PROPOSAL_EVENT_TYPES.ProposalEscalated,
  PROPOSAL_EVENT_TYPES.ProposalExpired,
]);

interface Folded {
  id: string;
  events: ProposalEvent[];
  state: ProposalState;
  submitCausation: string | null;
  expiresAt: string | null;
  firstTerminalAt: string | null;
  resolutions: number;
  quorumEverMet: boolean;
}

/** Checks every invariant on what a run left behind. Pure. */
export function checkInvariants(run: RunRecord, options: CheckOptions = {}): CheckReport {
  const t = new Tally();
  const now = (options.now ?? new Date()).getTime();
  const grace = options.expiryGraceMs ?? 0;
  const slack = options.expirySlackMs ?? 2_000;
  const config = { ...DEFAULT_DECIDER_CONFIG, expiryGraceMs: grace };

  // ---- fold each proposal in log order
  const byProposal = new Map<string, ProposalEvent[]>();
  for (const e of run.events) {
    if (e.category !== PROPOSAL_STREAM_CATEGORY) continue;
    const list = byProposal.get(e.id) ?? [];
    list.push(e.event as unknown as ProposalEvent);
    byProposal.set(e.id, list);
  }
  const folded: Folded[] = [];
  for (const [id, events] of byProposal) {
    const f: Folded = {
      id,
      events,
      state: initialProposalState,
      submitCausation: null,
      expiresAt: null,
      firstTerminalAt: null,
      resolutions: 0,
      quorumEverMet: false,
    };
    let broken = false;
    for (const event of events) {
      if (event.type === PROPOSAL_EVENT_TYPES.ProposalSubmitted) {
        f.submitCausation = event.causation_id;
        f.expiresAt = event.data.expires_at;
      }
      if (RESOLUTION_TYPES.has(event.type)) f.resolutions++;
      if (isTerminalEvent(event) && f.firstTerminalAt === null) f.firstTerminalAt = event.occurred_at;
      if (event.type === PROPOSAL_EVENT_TYPES.ResponseRecorded && f.expiresAt !== null && ms(event.occurred_at) > ms(f.expiresAt)) {
        t.add(
          'no-response-after-expiry',
          `${id}: response by ${event.data.response.participant_id} at ${event.occurred_at}, expires_at ${f.expiresAt}`,
        );
      }
      if (broken) continue;
      if (RESOLUTION_TYPES.has(event.type)) checkJustified(t, f, event, config);
      try {
        f.state = evolveProposal(f.state, event);
      } catch (err) {
        broken = true;
        t.add('log-folds', `${id}: ${(err as Error).message}`);
        continue;
      }
      if (f.state.status === 'pending' && isQuorumMet(f.state, config.quorumPolicies)) f.quorumEverMet = true;
    }
    folded.push(f);
  }

  const stuck: string[] = [];
  for (const f of folded) {
    if (f.resolutions > 1) t.add('quorum-met-resolved-once', `${f.id}: ${f.resolutions} resolution events`);
    else if (f.quorumEverMet && f.resolutions === 0) {
      stuck.push(f.id);
      t.add(
        'quorum-met-resolved-once',
        `${f.id}: quorum met (${f.state.status === 'pending' ? f.state.responses.length : '?'} responses), no resolution event`,
      );
    }
    if (f.expiresAt !== null) {
      const due = ms(f.expiresAt) + grace + slack;
      if (now > due) {
        if (f.firstTerminalAt === null)
          t.add('expired-in-time', `${f.id}: still ${f.state.status} ${now - ms(f.expiresAt)} ms after expires_at ${f.expiresAt}`);
        else if (ms(f.firstTerminalAt) > due)
          t.add('expired-in-time', `${f.id}: terminal at ${f.firstTerminalAt}, expires_at ${f.expiresAt}`);
      }
    }
  }

  // ---- decision and escalation messages against terminal events
  const terminal = new Map<string, { proposalId: string; event: ProposalEvent }>();
  const escalatedIds = new Set<string>();
  const deskEvents = new Set<string>();
  for (const f of folded) {
    for (const event of f.events) {
      if (isTerminalEvent(event)) terminal.set(event.event_id, { proposalId: f.id, event });
      if (event.type === PROPOSAL_EVENT_TYPES.ProposalEscalated) escalatedIds.add(event.event_id);
      else if (isDeskEvent(event.type)) deskEvents.add(event.event_id);
    }
  }
  const decisionsByEvent = groupBy(run.decisions, (m) => String(m.body['event_id'] ?? m.msgId));
  for (const [eventId, { proposalId, event }] of terminal) {
    const messages = decisionsByEvent.get(eventId) ?? [];
    if (messages.length !== 1) {
      t.add('one-decision-per-terminal-event', `${proposalId}: ${messages.length} decision messages for ${event.type} ${eventId}`);
      continue;
    }
    const body = messages[0].body;
    const resolution = (event.data as { resolution: { outcome: string; trigger: string } }).resolution;
    if (body['proposal_id'] !== proposalId || body['outcome'] !== resolution.outcome || body['trigger'] !== resolution.trigger) {
      t.add(
        'one-decision-per-terminal-event',
        `${proposalId}: decision ${eventId} says ${String(body['outcome'])}/${String(body['trigger'])}, log says ${resolution.outcome}/${resolution.trigger}`,
      );
    }
  }
  for (const [eventId, messages] of decisionsByEvent) {
    const logged = terminal.get(eventId);
    if (!logged)
      t.add(
        'decision-has-terminal-event',
        `decision ${eventId} (proposal ${String(messages[0].body['proposal_id'])}): no terminal event in the log`,
      );
    else if (messages.some((m) => m.body['proposal_id'] !== logged.proposalId)) {
      t.add('decision-has-terminal-event', `decision ${eventId}: names another proposal than its event's ${logged.proposalId}`);
    }
  }

  const escalationsByEvent = groupBy(run.escalations, (m) => {
    const decision = m.body['decision'] as { event_id?: string } | undefined;
    return String(decision?.event_id ?? m.body['event_id'] ?? m.msgId);
  });
  for (const eventId of [...escalatedIds, ...deskEvents]) {
    const n = escalationsByEvent.get(eventId)?.length ?? 0;
    if (n !== 1) t.add('escalation-messages-match-log', `${eventId}: ${n} ACP_ESCALATIONS messages`);
  }
  for (const eventId of escalationsByEvent.keys()) {
    if (!escalatedIds.has(eventId) && !deskEvents.has(eventId))
      t.add('escalation-messages-match-log', `${eventId}: ACP_ESCALATIONS message without its event`);
  }

  // ---- the agents' replies against the log
  checkReplies(t, folded, options.attempts ?? []);

  // ---- audit chain
  if (run.audit) checkAudit(t, run);

  return {
    invariants: t.results,
    counts: {
      events: run.events.length,
      proposals: folded.length,
      pending: folded.filter((f) => f.state.status === 'pending').length,
      terminalEvents: terminal.size,
      decisionMessages: run.decisions.length,
      ...(run.audit ? { auditEntries: run.audit.entries.length, rejections: run.audit.rejections.length } : {}),
    },
    stuck,
    ok: INVARIANTS.every((n) => t.results[n].violations === 0),
  };
}

function isDeskEvent(type: string): boolean {
  return (
    type === PROPOSAL_EVENT_TYPES.EscalationRouted ||
    type === PROPOSAL_EVENT_TYPES.EscalationReminded ||
    type === PROPOSAL_EVENT_TYPES.EscalationReassigned ||
    type === PROPOSAL_EVENT_TYPES.EscalationSignedOff ||
    type === PROPOSAL_EVENT_TYPES.EscalationDefaulted
  );
}

/**
 * A resolution by quorum or timeout must be exactly what the decider makes of the state just
 * before it, at the same instant: a resolution decided on a stale state (fewer responses) fails.
 * Resolutions of the submission itself (auto-resolved entries, policy escalations) and manual
 * escalations are commands of their own and are not re-decided here.
 */
function checkJustified(t: Tally, f: Folded, event: ProposalEvent, config: typeof DEFAULT_DECIDER_CONFIG): void {
  if (event.causation_id === f.submitCausation) return;
  const resolution = (event.data as { resolution: { trigger: string } }).resolution;
  const type =
    resolution.trigger === 'quorum'
      ? PROPOSAL_COMMAND_TYPES.ResolveProposal
      : resolution.trigger === 'timeout'
        ? PROPOSAL_COMMAND_TYPES.ExpireProposal
        : undefined;
  if (!type) return;
  const command = {
    type,
    command_id: event.causation_id,
    now: event.occurred_at,
    actor: event.actor,
    correlation_id: event.correlation_id,
    data: { proposal_id: f.id },
  };
  try {
    const [expected] = decide(command as Parameters<typeof decide>[0], f.state, config);
    if (expected?.type !== event.type || canonicalJson(expected.data) !== canonicalJson(event.data)) {
      t.add(
        'resolution-justified',
        `${f.id}: log has ${event.type} ${canonicalJson(resolution)}, the decider on the state before gives ${expected?.type} ${canonicalJson((expected?.data as { resolution?: unknown })?.resolution ?? null)}`,
      );
    }
  } catch (err) {
    t.add(
      'resolution-justified',
      `${f.id}: ${event.type} (${resolution.trigger}) refused by the decider on the state before: ${(err as Error).message}`,
    );
  }
}

function checkReplies(t: Tally, folded: readonly Folded[], attempts: readonly CommandAttempt[]): void {
  const proposals = new Map(folded.map((f) => [f.id, f]));
  const keyOf = (a: CommandAttempt) =>
    a.command === 'propose' ? `propose:${a.proposal_id}` : `respond:${a.proposal_id}:${a.participant_id}`;
  const traced = (a: CommandAttempt): boolean => {
    const f = proposals.get(a.proposal_id);
    if (!f) return false;
    if (a.command === 'propose') return f.events.some((e) => e.type === PROPOSAL_EVENT_TYPES.ProposalSubmitted);
    return f.events.some((e) => e.type === PROPOSAL_EVENT_TYPES.ResponseRecorded && e.data.response.participant_id === a.participant_id);
  };
  // A refusal may see the trace of an earlier attempt of the same command that succeeded or went unanswered.
  const mayHaveWritten = new Set(attempts.filter((a) => a.reply === undefined || a.reply.ok).map(keyOf));
  for (const a of attempts) {
    if (a.reply === undefined) continue;
    if (a.reply.ok && !traced(a)) t.add('replies-agree-with-log', `${keyOf(a)}: replied ok: true, not in the log`);
    if (!a.reply.ok && !mayHaveWritten.has(keyOf(a)) && traced(a)) {
      t.add('replies-agree-with-log', `${keyOf(a)}: replied ${a.reply.error.code}, yet the log has it`);
    }
  }
}

function checkAudit(t: Tally, run: RunRecord): void {
  const audit = run.audit!;
  const sources = new Map<string, number>();
  for (const e of audit.entries)
    sources.set(
      `${e.stream === audit.rejectionsStream ? 'rejection' : 'event'}:${e.source_id}`,
      (sources.get(`${e.stream === audit.rejectionsStream ? 'rejection' : 'event'}:${e.source_id}`) ?? 0) + 1,
    );
  const expected = [
    ...run.events.map((e) => `event:${e.event.event_id}`),
    ...audit.rejections.map((m) => `rejection:${String(m.body['event_id'])}`),
  ];
  for (const key of expected) {
    const n = sources.get(key) ?? 0;
    if (n !== 1) t.add('every-event-audited', `${key}: ${n} audit entries`);
    sources.delete(key);
  }
  for (const [key, n] of sources) t.add('every-event-audited', `${key}: ${n} audit entries without a source in the log`);
  const verified = verifyChain(audit.entries, sha256Hex);
  if (!verified.ok) t.add('every-event-audited', `chain does not verify at seq ${verified.seq}: ${verified.problem} ${verified.message}`);
}

function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const list = out.get(k);
    if (list) list.push(item);
    else out.set(k, [item]);
  }
  return out;
}

/** A short text of the report for a failing expectation or a test log. */
export function describeReport(report: CheckReport): string {
  const lines = [`counts ${JSON.stringify(report.counts)}`];
  for (const name of INVARIANTS) {
    const r = report.invariants[name];
    lines.push(`${r.violations === 0 ? 'ok  ' : 'FAIL'} ${name}: ${r.violations}`);
    for (const e of r.examples) lines.push(`       ${e}`);
  }
  return lines.join('\n');
}

/** Violations per invariant (for `expect(...).toEqual(noViolations())`). */
export function violationCounts(report: CheckReport): Record<InvariantName, number> {
  return Object.fromEntries(INVARIANTS.map((n) => [n, report.invariants[n].violations])) as Record<InvariantName, number>;
}

export function noViolations(): Record<InvariantName, number> {
  return Object.fromEntries(INVARIANTS.map((n) => [n, 0])) as Record<InvariantName, number>;
}

// ---------------------------------------------------------------- reading a run from NATS

const decoder = new TextDecoder();

/** Every message of a JetStream stream, in order (an ordered consumer up to the last sequence at the start). Missing stream: none. */
/** Sequence reads in flight at once. */
const READ_CONCURRENCY = 64;

/**
 * Every message of a stream, in order, read one by one by sequence from the stream leader. No
 * consumer: on a nats-server 2.9 cluster after a leader change, creating one could wait longer
 * than a test does, and an ordered consumer could be placed on a replica that had stopped
 * following. A sequence with no message (deleted, or dropped by limits) is skipped.
 */
export async function readStream(
  nc: NatsConnection,
  stream: string,
): Promise<Array<{ seq: number; subject: string; msgId: string | null; prev?: number; data: Uint8Array }>> {
  const jsm = await nc.jetstreamManager();
  let first: number;
  let last: number;
  try {
    const info = await jsm.streams.info(stream);
    if (info.state.messages === 0) return [];
    first = info.state.first_seq;
    last = info.state.last_seq;
  } catch (err) {
    if (/not found/i.test((err as Error).message)) return [];
    throw err;
  }
  const read = async (seq: number) => {
    try {
      const m = await jsm.streams.getMessage(stream, { seq });
      const prev = m.header?.get('Conclave-Prev-Seq');
      return {
        seq: m.seq,
        subject: m.subject,
        msgId: m.header?.get('Nats-Msg-Id') || null,
        prev: prev ? Number(prev) : undefined,
        data: m.data,
      };
    } catch (err) {
      if ((err as { api_error?: { err_code?: number } }).api_error?.err_code === 10037) return undefined;
      throw err;
    }
  };
  const out: Array<{ seq: number; subject: string; msgId: string | null; prev?: number; data: Uint8Array }> = [];
  for (let from = first; from <= last; from += READ_CONCURRENCY) {
    const batch = Array.from({ length: Math.min(READ_CONCURRENCY, last - from + 1) }, (_, i) => read(from + i));
    for (const m of await Promise.all(batch)) if (m) out.push(m);
  }
  return out;
}

function json<T>(data: Uint8Array): T {
  return JSON.parse(decoder.decode(data)) as T;
}

/** Reads the log and the consumer-facing streams of a run (and the audit chain when `audit` is set). */
export async function readRun(nc: NatsConnection, names: RunNames, opts: { audit?: boolean } = {}): Promise<RunRecord> {
  const streams = acpStreamNames(names.streamSuffix);
  const prefix = `${names.eventSubjectPrefix}.evt.`;
  const events: LoggedEvent[] = [];
  for (const m of await readStream(nc, names.eventStream)) {
    if (!m.subject.startsWith(prefix)) continue;
    const [category, id] = m.subject.slice(prefix.length).split('.');
    const commit = json<{ v: number; events: LoggedEvent['event'][] }>(m.data);
    for (const event of commit.events) events.push({ seq: m.seq, category, id, event, prev: m.prev });
  }
  const asMessages = (list: Awaited<ReturnType<typeof readStream>>): StreamMessage[] =>
    list.map((m) => ({ seq: m.seq, msgId: m.msgId, subject: m.subject, body: json<Record<string, unknown>>(m.data) }));
  const run: RunRecord = {
    events,
    decisions: asMessages(await readStream(nc, streams.decisions)),
    escalations: asMessages(await readStream(nc, streams.escalations)),
  };
  if (opts.audit) {
    const rejectionsStream = `${names.eventStream}_REJECTIONS`;
    run.audit = {
      entries: (await readStream(nc, `${names.eventStream}_AUDIT`)).map((m) => json<AuditEntry>(m.data)),
      rejections: asMessages(await readStream(nc, rejectionsStream)),
      rejectionsStream,
    };
  }
  return run;
}

/** Reads a run and checks it. */
export async function checkRun(
  nc: NatsConnection,
  names: RunNames,
  options: CheckOptions & { audit?: boolean } = {},
): Promise<CheckReport> {
  return checkInvariants(await readRun(nc, names, { audit: options.audit }), options);
}
