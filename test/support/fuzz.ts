import fc from 'fast-check';
import { ACP_ERROR_CODES, parseProposal } from '@conclave/acp-protocol';
import { COUNCIL_ERROR_CODES } from '@conclave/council-protocol';
import { ed25519Signer, jwtSigner } from '@conclave/sdk';
import { headers as natsHeaders } from 'nats';
import type { ConclaveHarness, ServiceName } from './conclave-harness';
import { Family, FAMILIES, familyArb, FuzzInput, FuzzWorld, HTTP_TARGETS, httpArb, NATS_TARGETS } from './fuzz-inputs';

/**
 * The fuzzer: sends generated inputs to every NATS request subject and HTTP route of running
 * services and judges each reply. A reply is a typed error (`ok: false` with a stable code of the
 * error catalogue, INTERNAL excepted: an input must never break the service) or a valid success
 * (its body checked against the wire schema); anything else (no reply, INTERNAL, an unknown code,
 * a success that does not parse, a success for an input that is invalid by construction) is
 * "other", kept with an example. The event log is read around every batch: an event must be
 * explained by a success of that batch or appended by a service's own reactor, never by an input
 * that got an error.
 */

/** The error catalogue: DESIGN section 5's codes and the Council's (INTERNAL is never a fine answer to an input). */
export const TYPED_CODES: ReadonlySet<string> = new Set([...ACP_ERROR_CODES, ...COUNCIL_ERROR_CODES].filter((c) => c !== 'INTERNAL'));

/** Actors of the services' own reactions (resolver, sweeper, escalation desk): they append on their own schedule. */
export const SERVICE_ACTORS: ReadonlySet<string> = new Set(['conclave-resolver', 'conclave-sweeper', 'conclave-escalation']);

export type Verdict = 'typed-error' | 'success' | 'other';

export interface Outcome {
  verdict: Verdict;
  /** Why it is "other", or the error code. */
  detail: string;
  /** Ids a success touched (proposal, run, participant): events on their streams are explained. */
  touched: string[];
}

export interface Row {
  target: string;
  inputs: number;
  typed: number;
  success: number;
  other: number;
}

export interface Example {
  target: string;
  family: Family;
  detail: string;
  input: string;
}

export interface FuzzReport {
  rows: Row[];
  byFamily: Record<string, { inputs: number; typed: number; success: number; other: number }>;
  total: Row;
  /** Inputs the client library refused to send (over the server's max_payload, a header it forbids). */
  unsendable: number;
  others: Example[];
  /** Events appended in a batch that no success of the batch explains, with the batch's error inputs. */
  logViolations: Array<{ seq: number; subject: string; type: string; actor: string; suspects: string[] }>;
  codes: Record<string, number>;
  seconds: number;
  /** Batches whose log window was not judged because one of their inputs got no reply. */
  unjudgedBatches: number;
}

export interface FuzzOptions {
  runs: number;
  seed: number;
  /** Requests in flight at once; the log is checked per batch of this size. */
  concurrency: number;
  timeoutMs: number;
  /** Keys of the participants that sign (authentication on). */
  keys?: Map<string, { privateKeyPem: string }>;
  /** Called after each chunk with the tallies so far (a long run leaves figures even if stopped). */
  progress?: (report: FuzzReport) => void;
}

const FAMILY_WEIGHTS: Record<Family, number> = { schema: 22, mutated: 33, 'wrong-type': 10, huge: 7, deep: 8, utf8: 10, headers: 10 };

const dec = new TextDecoder('utf-8', { fatal: true });

/** Renders an input for an example line: target, family, and the first bytes of its body. */
function show(input: FuzzInput): string {
  const body = input.body ? Buffer.from(input.body.subarray(0, 160)).toString('latin1') : '';
  const head = input.kind === 'http' ? `${input.method} ${input.path.slice(0, 120)}` : input.pattern;
  const hdrs = input.kind === 'nats' ? input.headers.slice(0, 4).map(([k, v]) => `${k}=${v.slice(0, 30)}`) : Object.keys(input.headers);
  return `${head} headers[${hdrs.join(',')}] body(${input.body?.length ?? 0}B)=${body}`;
}

export class Fuzzer {
  private readonly urls = new Map<ServiceName, string>();
  private readonly report: FuzzReport = {
    rows: [],
    byFamily: {},
    total: { target: 'total', inputs: 0, typed: 0, success: 0, other: 0 },
    unsendable: 0,
    others: [],
    logViolations: [],
    codes: {},
    seconds: 0,
    unjudgedBatches: 0,
  };
  private readonly rows = new Map<string, Row>();
  /** Milliseconds per target and family (slowest, and in all): where a run's time goes. */
  readonly slowest = new Map<string, number>();
  readonly spent = new Map<string, number>();

  constructor(
    private readonly h: ConclaveHarness,
    private readonly world: FuzzWorld,
  ) {}

  /** Generates and sends `runs` inputs, `concurrency` at a time, and returns the tallies. */
  async run(options: FuzzOptions): Promise<FuzzReport> {
    const started = performance.now();
    for (const i of this.h.instances)
      if (!this.urls.has(i.name)) this.urls.set(i.name, (await i.app.getUrl()).replace('[::1]', '127.0.0.1'));
    const chunk = 256;
    for (let done = 0, round = 0; done < options.runs; round++) {
      // Fresh timestamps and the ids created so far, each chunk.
      this.world.now = Date.now();
      const inputs = fc.sample(this.inputArb(), { seed: options.seed + round, numRuns: Math.min(chunk, options.runs - done) });
      for (let i = 0; i < inputs.length; i += options.concurrency) await this.batch(inputs.slice(i, i + options.concurrency), options);
      done += inputs.length;
      this.report.rows = [...this.rows.values()];
      this.report.seconds = (performance.now() - started) / 1000;
      options.progress?.(this.report);
    }
    this.report.rows = [...this.rows.values()];
    this.report.seconds = (performance.now() - started) / 1000;
    return this.report;
  }

  private inputArb(): fc.Arbitrary<FuzzInput> {
    const w = this.world;
    const family = fc.oneof(...FAMILIES.map((f) => ({ arbitrary: fc.constant(f), weight: FAMILY_WEIGHTS[f] })));
    const nats = fc.tuple(fc.constantFrom(...NATS_TARGETS), family).chain(([t, f]) =>
      fc.tuple(familyArb(f, t.body(w), w), fc.boolean()).map(
        ([b, jwt]): FuzzInput => ({
          kind: 'nats',
          target: `nats ${t.target}`,
          family: f,
          pattern: t.pattern,
          council: t.council,
          body: b.body,
          headers: b.headers,
          sign: b.sign ? { as: t.signer(b.value ?? {}, w), scheme: jwt && f !== 'headers' ? 'jwt' : 'ed25519' } : undefined,
          mustFail: b.mustFail,
        }),
      ),
    );
    const http = fc
      .tuple(fc.constantFrom(...HTTP_TARGETS), family)
      .chain(([t, f]) => httpArb(t, f, w).map((r): FuzzInput => ({ kind: 'http', target: `http ${t.target}`, family: f, ...r })));
    return fc.oneof({ arbitrary: nats, weight: NATS_TARGETS.length }, { arbitrary: http, weight: HTTP_TARGETS.length });
  }

  /** The log's last sequence after the previous batch: events appended between batches are checked with the next. */
  private seq: number | undefined;

  private async batch(inputs: FuzzInput[], options: FuzzOptions): Promise<void> {
    const before = this.seq ?? (await this.lastSeq());
    const outcomes = await Promise.all(
      inputs.map(async (i) => {
        const t0 = performance.now();
        const o = await this.send(i, options);
        const ms = performance.now() - t0;
        const key = `${i.target} ${i.family}`;
        this.slowest.set(key, Math.max(this.slowest.get(key) ?? 0, ms));
        this.spent.set(key, (this.spent.get(key) ?? 0) + ms);
        return o;
      }),
    );
    const after = await this.lastSeq();
    this.seq = after;
    const touched = new Set<string>();
    const suspects: string[] = [];
    outcomes.forEach((o, k) => {
      const input = inputs[k];
      if (o === 'unsendable') {
        this.report.unsendable++;
        return;
      }
      if (o.verdict === 'success') o.touched.forEach((id) => touched.add(id));
      if (o.verdict === 'typed-error') suspects.push(`${input.target} ${input.family}: ${show(input)}`);
      this.tally(input, o);
    });
    // An input that got no reply may have been applied: what it appended cannot be told apart, so
    // that batch's window is not judged (the missing reply already fails the run as "other").
    const unanswered = outcomes.some((o) => o !== 'unsendable' && o.detail.startsWith('no reply'));
    if (unanswered) this.report.unjudgedBatches++;
    else if (after > before) await this.explain(before, after, touched, suspects);
  }

  private tally(input: FuzzInput, o: Outcome): void {
    const row = this.rows.get(input.target) ?? { target: input.target, inputs: 0, typed: 0, success: 0, other: 0 };
    this.rows.set(input.target, row);
    const fam = (this.report.byFamily[input.family] ??= { inputs: 0, typed: 0, success: 0, other: 0 });
    for (const r of [row, fam, this.report.total]) {
      r.inputs++;
      if (o.verdict === 'typed-error') r.typed++;
      else if (o.verdict === 'success') r.success++;
      else r.other++;
    }
    if (o.verdict === 'typed-error') this.report.codes[o.detail] = (this.report.codes[o.detail] ?? 0) + 1;
    if (o.verdict === 'other') {
      const seen = this.report.others.filter((e) => e.target === input.target && e.detail === o.detail).length;
      if (seen < 3 && this.report.others.length < 200)
        this.report.others.push({ target: input.target, family: input.family, detail: o.detail, input: show(input) });
    }
  }

  // ------------------------------------------------------------------ sending

  private async send(input: FuzzInput, options: FuzzOptions): Promise<Outcome | 'unsendable'> {
    return input.kind === 'nats' ? this.sendNats(input, options) : this.sendHttp(input, options);
  }

  private async sendNats(input: Extract<FuzzInput, { kind: 'nats' }>, options: FuzzOptions): Promise<Outcome | 'unsendable'> {
    const prefix = input.council ? this.h.env['CONCLAVE_COUNCIL_PREFIX'] : this.h.prefix;
    const subject = `${prefix}.${input.pattern}`;
    let hdrs;
    try {
      hdrs = natsHeaders();
      const key = input.sign && options.keys?.get(input.sign.as);
      if (key && input.sign) {
        const signed =
          input.sign.scheme === 'jwt'
            ? await jwtSigner(input.sign.as, key.privateKeyPem)(subject, input.body)
            : ed25519Signer(input.sign.as, key.privateKeyPem)(subject, input.body);
        for (const [k, v] of Object.entries(signed)) hdrs.set(k, v);
      }
      for (const [k, v] of input.headers) hdrs.append(k, v);
      if (input.body.length > (this.h.nc.info?.max_payload ?? 1024 * 1024) - 1024) return 'unsendable';
    } catch {
      return 'unsendable';
    }
    let data: Uint8Array;
    try {
      data = (await this.h.nc.request(subject, input.body, { timeout: options.timeoutMs, headers: hdrs })).data;
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === 'BAD_HEADER' || code === 'MAX_PAYLOAD_EXCEEDED' || code === 'BAD_PAYLOAD') return 'unsendable';
      return { verdict: 'other', detail: `no reply: ${code ?? (err as Error).message}`, touched: [] };
    }
    let reply: unknown;
    try {
      reply = JSON.parse(dec.decode(data));
    } catch {
      return { verdict: 'other', detail: 'reply is not JSON', touched: [] };
    }
    return judge(input.target, reply, input.mustFail, input.body);
  }

  private async sendHttp(input: Extract<FuzzInput, { kind: 'http' }>, options: FuzzOptions): Promise<Outcome | 'unsendable'> {
    const base = this.urls.get(input.service);
    if (!base) return 'unsendable';
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), options.timeoutMs);
    let res: Response;
    const request = () =>
      fetch(base + input.path, {
        method: input.method,
        headers: input.headers,
        body: input.body ? Buffer.from(input.body) : undefined,
        signal: abort.signal,
      });
    try {
      res = await request().catch((err: unknown) => {
        // A reused keep-alive socket the server closed at that moment resets; a GET is sent again once.
        const code = (err as { cause?: { code?: string } }).cause?.code;
        if (input.method === 'GET' && (code === 'ECONNRESET' || code === 'UND_ERR_SOCKET')) return request();
        throw err;
      });
    } catch (err) {
      clearTimeout(timer);
      // Headers or URLs that fetch itself refuses never reach the service.
      if (err instanceof TypeError && !/fetch failed/.test(err.message)) return 'unsendable';
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      return { verdict: 'other', detail: `no reply: ${cause?.code ?? (err as Error).name}`, touched: [] };
    }
    try {
      const type = res.headers.get('content-type') ?? '';
      if (input.stream && res.status === 200) {
        abort.abort();
        return type.startsWith('text/event-stream') && !input.mustFail
          ? { verdict: 'success', detail: 'stream', touched: [] }
          : { verdict: 'other', detail: `200 ${type}`, touched: [] };
      }
      const text = await res.text();
      return judgeHttp(input.target, res.status, type, text, input.mustFail);
    } catch (err) {
      return { verdict: 'other', detail: `reply cut: ${(err as Error).name}`, touched: [] };
    } finally {
      clearTimeout(timer);
      abort.abort();
    }
  }

  // ------------------------------------------------------------------ the event log

  private async lastSeq(): Promise<number> {
    const jsm = await this.h.nc.jetstreamManager();
    return (await jsm.streams.info(this.h.env['CONCLAVE_EVENT_STREAM'])).state.last_seq;
  }

  /** Every event appended in (before, after]: appended by a service's reactor, or on a stream a success of the batch touched. */
  private async explain(before: number, after: number, touched: Set<string>, suspects: string[]): Promise<void> {
    const jsm = await this.h.nc.jetstreamManager();
    for (let seq = before + 1; seq <= after; seq++) {
      const m = await jsm.streams.getMessage(this.h.env['CONCLAVE_EVENT_STREAM'], { seq }).catch(() => undefined);
      if (!m) continue;
      const id = m.subject.split('.').pop() ?? '';
      const category = m.subject.split('.').slice(-2)[0];
      let events: Array<{ type?: string; actor?: string; data?: { run_id?: string } }> = [];
      try {
        events = (m.json() as { events: typeof events }).events ?? [];
      } catch {
        events = [{ type: '(unreadable)' }];
      }
      for (const e of events) {
        const byService = SERVICE_ACTORS.has(e.actor ?? '');
        // A council run's controller appends its stage events on its own schedule, for runs that exist.
        const councilOwn = category === 'council-run' && this.world.runIds.includes(id) && !touchedByClient(e);
        if (byService || councilOwn || touched.has(id) || touched.has(escapeId(id))) continue;
        if (this.report.logViolations.length < 50)
          this.report.logViolations.push({
            seq,
            subject: m.subject,
            type: e.type ?? '?',
            actor: e.actor ?? '?',
            suspects: suspects.slice(0, 4),
          });
        else this.report.logViolations.length++;
      }
    }
  }

  /** Remembers what a success created, so later inputs can refer to it. */
  learn(target: string, reply: Record<string, unknown>): void {
    const p = reply['proposal'] as { proposal_id?: string; status?: string } | undefined;
    if (p?.proposal_id && !this.world.proposalIds.includes(p.proposal_id) && this.world.proposalIds.length < 500)
      this.world.proposalIds.push(p.proposal_id);
    if (p?.status === 'escalated' && p.proposal_id && !this.world.escalatedIds.includes(p.proposal_id))
      this.world.escalatedIds.push(p.proposal_id);
    const run = reply['run_id'];
    if (target.endsWith('council start') && typeof run === 'string' && this.world.runIds.length < 200) this.world.runIds.push(run);
  }
}

/** Events a person or agent asked for (the owner's interrupt or outcome), as opposed to the controller's own. */
function touchedByClient(e: { type?: string }): boolean {
  return /Interrupt|Outcome|GoalContract|FrameChallengeDeclined|RunStarted/i.test(e.type ?? '');
}

function escapeId(id: string): string {
  return id.replace(/_([0-9A-F]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)));
}

let learner: Fuzzer | undefined;
/** The fuzzer that learns ids from successes (one at a time runs in a process). */
export function setLearner(f: Fuzzer | undefined): void {
  learner = f;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A typed error, a valid success for this target, or other (with why). */
export function judge(target: string, reply: unknown, mustFail: boolean, _body?: Uint8Array): Outcome {
  if (!isRecord(reply)) return { verdict: 'other', detail: 'reply is not an object', touched: [] };
  if (reply['ok'] === false) {
    const error = reply['error'];
    if (!isRecord(error) || typeof error['code'] !== 'string' || typeof error['message'] !== 'string')
      return { verdict: 'other', detail: 'error without code and message', touched: [] };
    if (!TYPED_CODES.has(error['code'])) return { verdict: 'other', detail: `code ${error['code']}`, touched: [] };
    return { verdict: 'typed-error', detail: error['code'], touched: [] };
  }
  if (reply['ok'] !== true) return { verdict: 'other', detail: 'reply without ok', touched: [] };
  if (mustFail) return { verdict: 'other', detail: 'invalid input accepted', touched: [] };
  const problem = successProblem(target, reply);
  if (problem) return { verdict: 'other', detail: `bad success: ${problem}`, touched: [] };
  learner?.learn(target, reply);
  return { verdict: 'success', detail: 'ok', touched: touchedIds(reply) };
}

function touchedIds(reply: Record<string, unknown>): string[] {
  const ids: string[] = [];
  const p = reply['proposal'];
  if (isRecord(p) && typeof p['proposal_id'] === 'string') ids.push(p['proposal_id']);
  if (typeof reply['run_id'] === 'string') ids.push(reply['run_id']);
  const participant = reply['participant'];
  if (isRecord(participant) && typeof participant['participant_id'] === 'string') ids.push(participant['participant_id']);
  return ids;
}

/** Why a success reply does not match its subject's contract, or undefined when it does. */
function successProblem(target: string, reply: Record<string, unknown>): string | undefined {
  const proposal = (p: unknown) => {
    try {
      parseProposal(p);
      return undefined;
    } catch (e) {
      return `proposal does not parse: ${(e as Error).message}`;
    }
  };
  if (/nats acp (propose|respond|escalate|resolve|get)$/.test(target) || target === 'nats escalation get')
    return proposal(reply['proposal']);
  if (target === 'nats escalation list') return Array.isArray(reply['escalations']) ? undefined : 'no escalations array';
  if (target === 'nats acp list') {
    if (!Array.isArray(reply['proposals'])) return 'no proposals array';
    for (const p of reply['proposals']) {
      const bad = proposal(p);
      if (bad) return bad;
    }
    return undefined;
  }
  if (target === 'nats council start') return typeof reply['run_id'] === 'string' ? undefined : 'no run_id';
  if (target === 'nats council get') return isRecord(reply['run_record']) ? undefined : 'no run_record';
  return undefined;
}

/** The HTTP side: a typed error is a 4xx with `{ok: false, error}`; success is what each route promises. */
export function judgeHttp(target: string, status: number, type: string, text: string, mustFail: boolean): Outcome {
  let body: unknown;
  try {
    body = type.includes('json') ? JSON.parse(text) : undefined;
  } catch {
    return { verdict: 'other', detail: `${status} JSON that does not parse`, touched: [] };
  }
  // Readiness answers 503 with its checks while a reactor catches up: that is its contract, not an error.
  if (target === 'http GET /readyz' && (status === 200 || status === 503) && isRecord(body) && typeof body['ready'] === 'boolean')
    return mustFail
      ? { verdict: 'other', detail: 'invalid input accepted', touched: [] }
      : { verdict: 'success', detail: 'ok', touched: [] };
  if (status >= 400) {
    if (status >= 500) return { verdict: 'other', detail: `${status}`, touched: [] };
    if (isRecord(body) && body['ok'] === false) {
      const o = judge(target, body, false);
      return o.verdict === 'typed-error' ? o : { ...o, detail: `${status} ${o.detail}` };
    }
    return { verdict: 'other', detail: `${status} untyped: ${text.slice(0, 80)}`, touched: [] };
  }
  if (mustFail) return { verdict: 'other', detail: `${status} invalid input accepted`, touched: [] };
  if (status !== 200) return { verdict: 'other', detail: `status ${status}`, touched: [] };
  if (/escalations/.test(target)) {
    if (!isRecord(body) || body['ok'] !== true) return { verdict: 'other', detail: 'escalation reply without ok', touched: [] };
    learner?.learn(target, body);
    return { verdict: 'success', detail: 'ok', touched: touchedIds(body) };
  }
  if (target === 'http GET /metrics' && !/^# (HELP|TYPE) /m.test(text))
    return { verdict: 'other', detail: 'not an exposition', touched: [] };
  if (target === 'http GET /healthz' && !(isRecord(body) && body['ok'] === true))
    return { verdict: 'other', detail: 'healthz body', touched: [] };
  return { verdict: 'success', detail: 'ok', touched: [] };
}

/** The summary table: one row per target, then per family, then the total. */
export function formatReport(title: string, r: FuzzReport): string {
  const pad = (s: string | number, n: number) => String(s).padStart(n);
  const line = (x: Row) => `${x.target.padEnd(38)}${pad(x.inputs, 9)}${pad(x.typed, 14)}${pad(x.success, 11)}${pad(x.other, 8)}`;
  const out = [
    `fuzz: ${title}: ${r.total.inputs} inputs in ${r.seconds.toFixed(1)} s (${r.unsendable} refused by the client library, not counted)`,
    `${'subject'.padEnd(38)}${pad('inputs', 9)}${pad('typed errors', 14)}${pad('successes', 11)}${pad('other', 8)}`,
    ...[...r.rows].sort((a, b) => a.target.localeCompare(b.target)).map(line),
    ...Object.entries(r.byFamily).map(([f, x]) => line({ target: `  family ${f}`, ...x })),
    line(r.total),
    `log: ${r.logViolations.length} events appended by inputs that got an error (${r.unjudgedBatches} batches not judged: an input got no reply)`,
    `codes: ${Object.entries(r.codes)
      .sort((a, b) => b[1] - a[1])
      .map(([c, n]) => `${c} ${n}`)
      .join(', ')}`,
    ...r.others.slice(0, 20).map((e) => `other: ${e.target} [${e.family}] ${e.detail} <- ${e.input}`),
    ...r.logViolations
      .slice(0, 10)
      .map((v) => `log: seq ${v.seq} ${v.type} by ${v.actor} on ${v.subject}; batch errors: ${v.suspects.join(' | ')}`),
  ];
  return out.join('\n');
}
