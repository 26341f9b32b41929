import {
  CalibrationReply,
  CancelNotice,
  CapabilityEstimatesReply,
  ConcentrationPeriod,
  ConcentrationReply,
  ConcentrationSubject,
  CouncilError,
  CouncilErrorBody,
  CouncilTaskRequest,
  isCancelNotice,
  MemberAnswerMessage,
  MemberVerdict,
  OutcomeRecordedReply,
  RunRecord,
  TaskStage,
  Usage,
  validateAnswerContent,
  validateTask,
  ValueChoiceResolved,
} from '@conclave/council-protocol';
import {
  COUNCIL_COMMANDS,
  councilSubjects,
  CouncilSubjects,
  DEFAULT_COUNCIL_PREFIX,
  isNotFound,
  MEMBER_TASK_ACK_WAIT_MS,
  memberTaskConsumerName,
  w3cTraceparent,
} from '@conclave/messaging';
import { context as otelContext, ROOT_CONTEXT, trace, type Span, type TracerProvider } from '@opentelemetry/api';
import { Consumer, ConsumerMessages, ErrorCode, headers, JsMsg, NatsConnection, NatsError } from 'nats';
import { withJetStreamApiPrefix } from './feeds';
import { DEFAULT_RATE_LIMIT_WAIT_MS, RequestRetries } from './request-retries';
import { receiveSpan, sdkTracer, withTraceHeaders } from './tracing';

const encoder = new TextEncoder();
const decoder = new TextDecoder();
/** How long the member waits for the controller's verdict on one answer. */
const VERDICT_TIMEOUT_MS = 5_000;
/** Back-off before an answer nobody received is sent again (the controller restarting). */
const RESEND_DELAY_MS = 1_000;
/** How often a member looks again for a queue the council service has not made yet. */
const QUEUE_POLL_MS = 250;

/** What a member receives on `<prefix>.v1.tasks.<member_id>` (DESIGN.md section 5). */
export type CouncilTask = CouncilTaskRequest & {
  /** Set when the previous answer to this task was refused (by the controller or the schema): fix it and answer again. */
  refusal?: CouncilErrorBody;
};

export interface CouncilTaskContext {
  readonly memberId: string;
  /**
   * Aborted at the task's deadline, when the controller cancels the task (the run ended or the
   * stage went on without it), or when the member stops. Pass it to the model call.
   */
  readonly signal: AbortSignal;
  /** Cost and tokens spent on this task, summed by the controller against the run's budget. */
  reportUsage(usage: Usage): void;
}

/**
 * Returns the stage's answer, content only: the controller stamps the ids, the author, versions
 * and owners it already knows (DESIGN.md section 5; schemas on `<prefix>.v1.schemas`).
 */
export type CouncilTaskHandler = (task: CouncilTask, context: CouncilTaskContext) => unknown | Promise<unknown>;

export interface CouncilMemberOptions {
  nc: NatsConnection;
  memberId: string;
  /** Council subject prefix of the deployment (default `council`). */
  prefix?: string;
  /** How often a refused answer is retried with the refusal in `task.refusal` (default 1). */
  maxRetries?: number;
  /** Called with every verdict on an answer (accepted, or refused with its error). */
  onVerdict?: (task: CouncilTask, verdict: CouncilVerdict) => void;
  /** Called when the controller cancels a task. */
  onCancel?: (notice: CancelNotice) => void;
  /** The JetStream stream of the task queues; found from the task subject when left out. */
  tasksStream?: string;
  /** Answers kept by task id, so a task delivered again is answered without asking the handler (default 1,000). */
  cacheSize?: number;
  /**
   * Signs each answer as this member (`ed25519Signer(memberId, privateKey)`): required where the
   * service requires authentication, since an answer is accepted only from the member it names.
   */
  signer?: (subject: string, body: Uint8Array) => Promise<Record<string, string>> | Record<string, string>;
  /**
   * How long one answer may wait, in all, to resend it after RATE_LIMITED refusals (default 10 s,
   * as for ConclaveClient; 0: never). An answer refused for its rate never reached the controller:
   * past the budget it is not settled but sent again with the task's next delivery.
   */
  rateLimitWaitMs?: number;
  /** The JetStream API prefix of the task queues in the member's NATS account (see `ConclaveClientOptions.jsApiPrefix`). */
  jsApiPrefix?: string;
  /** Where the SDK's spans go (see `ConclaveClientOptions.tracerProvider`); the global provider when absent. */
  tracerProvider?: TracerProvider;
}

export type CouncilVerdict = MemberVerdict;

class Abandoned extends Error {}

/** An answer as the member last sent it, and whether the controller has settled it. */
interface CachedAnswer {
  message: MemberAnswerMessage;
  settled: boolean;
}

/**
 * One agent on a Council panel: one handler per stage, so that joining takes a few lines.
 *
 * ```ts
 * new CouncilMember({ nc, memberId: 'member-skeptic-01' })
 *   .onPropose(async (task, { signal }) => candidateContent)
 *   .onReview(async (task) => ({ reviews }))
 *   .onRevise(async (task) => revisionContent)
 *   .start();
 * ```
 *
 * The wire protocol (any language can speak it; JSON Schemas on `<prefix>.v1.schemas`): tasks
 * wait in the member's durable JetStream queue (`<prefix>.v1.tasks.<member_id>`, pull consumer
 * `member-<member_id>`, made by the council service before the member's first task; the member
 * binds to it and pulls, and waits while it does not exist yet) until acknowledged, so a member that is offline for a while gets them when
 * it returns; a cancel notice (`{notice: 'cancel', task_id}`) in the same queue says to stop. The
 * member answers by request on `<prefix>.v1.answers.<member_id>` with `{run_id, task_id, ok: true,
 * artifact, usage?}` or `{run_id, task_id, ok: false, error, usage?}`; the reply is the verdict
 * `{ok, retry, error?}`. A refused answer with `retry: true` may be corrected until the deadline.
 *
 * This SDK acknowledges a task once it has a verdict; validates each task and each answer against
 * the schemas; aborts the handler's `signal` at the deadline or on a cancel; and answers a task it
 * already answered (delivered again after a restart of the controller) from its cache, without
 * asking the handler again.
 *
 * Tracing: a task message with a `traceparent` header (the controller's `council.task` span, when
 * the council service traces) gets a CONSUMER span `receive <task subject>` in that trace, around
 * the handler (active while it runs, so the member's own spans join the run's trace) and the
 * answer, whose request carries that span's `traceparent`. Recorded only where the application
 * registered an OpenTelemetry SDK, as for the feeds' `receive` spans.
 */
export class CouncilMember {
  readonly memberId: string;
  private readonly subjects: CouncilSubjects;
  private readonly answerRetries: RequestRetries;
  private readonly handlers = new Map<TaskStage, CouncilTaskHandler>();
  private messages: ConsumerMessages | undefined;
  private attached: Promise<void> | undefined;
  private stopped = true;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly working = new Map<string, AbortController>();
  private readonly pending = new Map<string, Promise<'done' | 'later'>>();
  private readonly cache = new Map<string, CachedAnswer>();
  private readonly cancelled = new Set<string>();
  /** Tasks abandoned by stop(): handed back to the queue once this session no longer pulls. */
  private readonly handBack: JsMsg[] = [];
  private readyResolve!: () => void;
  /** Resolves once the member consumes its queue. */
  readonly ready: Promise<void> = new Promise((r) => (this.readyResolve = r));

  constructor(private readonly options: CouncilMemberOptions) {
    if (options.jsApiPrefix) this.options = { ...options, nc: withJetStreamApiPrefix(options.nc, options.jsApiPrefix) };
    this.memberId = options.memberId;
    this.subjects = councilSubjects(options.prefix ?? DEFAULT_COUNCIL_PREFIX);
    this.answerRetries = new RequestRetries(options.rateLimitWaitMs ?? DEFAULT_RATE_LIMIT_WAIT_MS);
  }

  onPropose(handler: CouncilTaskHandler): this {
    return this.on('proposal', handler);
  }
  onReview(handler: CouncilTaskHandler): this {
    return this.on('review', handler);
  }
  onRevise(handler: CouncilTaskHandler): this {
    return this.on('revision', handler);
  }
  /** The moderator's ConflictMap (the chair draws it when the panel has no moderator). */
  onConflictMap(handler: CouncilTaskHandler): this {
    return this.on('conflict-map', handler);
  }
  onFrameCheck(handler: CouncilTaskHandler): this {
    return this.on('frame-check', handler);
  }
  /** The chair's DecisionRecord (synthesis). */
  onChair(handler: CouncilTaskHandler): this {
    return this.on('synthesis', handler);
  }
  on(stage: TaskStage, handler: CouncilTaskHandler): this {
    this.handlers.set(stage, handler);
    return this;
  }

  /** Starts consuming `<prefix>.v1.tasks.<member_id>` (in the background: tasks wait in the queue meanwhile). */
  start(): this {
    if (!this.stopped) return this;
    this.stopped = false;
    this.attached = this.consume().catch(() => undefined);
    return this;
  }

  /** Stops taking tasks; a task in progress is abandoned and handed back to the queue for the next session. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    for (const c of this.working.values()) c.abort(new Abandoned('member stopping'));
    await this.messages?.close().catch(() => undefined);
    await this.attached;
    await Promise.all([...this.inFlight]);
    // Handed back only now: a redelivery while this session still pulled would come back to it.
    for (const m of this.handBack.splice(0)) m.nak();
  }

  private async consume(): Promise<void> {
    const nc = this.options.nc;
    const jsm = await nc.jetstreamManager();
    const subject = this.subjects.task(this.memberId);
    let stream = this.options.tasksStream;
    // The controller creates the stream at its start; a member may come up first.
    while (!stream && !this.stopped) {
      stream = await jsm.streams.find(subject).catch(() => undefined);
      if (!stream) await new Promise((r) => setTimeout(r, 250));
    }
    if (!stream || this.stopped) return;
    const consumer = await this.bind(stream);
    if (!consumer) return;
    const messages = await consumer.consume({ max_messages: 64 });
    this.messages = messages;
    if (this.stopped) return void (await messages.close().catch(() => undefined));
    this.readyResolve();
    for await (const m of messages) {
      const work = this.handle(m).catch(() => m.nak(RESEND_DELAY_MS));
      this.inFlight.add(work);
      void work.finally(() => this.inFlight.delete(work));
    }
  }

  /**
   * The member's queue, made by the council service before its first task: the member never
   * creates it (NATS accounts refuse members any consumer create), so until then it looks again.
   */
  private async bind(stream: string): Promise<Consumer | undefined> {
    const js = this.options.nc.jetstream();
    const durable = memberTaskConsumerName(this.memberId);
    while (!this.stopped) {
      try {
        return await js.consumers.get(stream, durable);
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
      await new Promise((r) => setTimeout(r, QUEUE_POLL_MS));
    }
    return undefined;
  }

  private async handle(m: JsMsg): Promise<void> {
    let body: unknown;
    try {
      body = JSON.parse(decoder.decode(m.data));
    } catch {
      return m.term();
    }
    if (isCancelNotice(body)) {
      const notice = body as CancelNotice;
      this.remember(this.cancelled, notice.task_id);
      this.working.get(notice.task_id)?.abort(new Abandoned(`cancelled: ${notice.reason}`));
      this.options.onCancel?.(notice);
      return m.ack();
    }
    const task = body as CouncilTask;
    try {
      validateTask(task);
    } catch (err) {
      // Not a task this SDK understands: tell the controller (the task fails now, not at its deadline).
      if (typeof task?.task_id === 'string' && typeof task?.run_id === 'string') {
        const error = { code: 'SCHEMA_VIOLATION', message: `the member refused the task: ${(err as Error).message}` };
        await this.submit({ run_id: task.run_id, task_id: task.task_id, ok: false, error });
      }
      return m.term();
    }
    if (this.cancelled.has(task.task_id) || Date.parse(task.deadline) <= Date.now()) return m.term();
    // Keeps the task ours while the handler works (a model call may outlast the ack wait).
    const beat = setInterval(() => m.working(), Math.floor(MEMBER_TASK_ACK_WAIT_MS / 3));
    try {
      let run = this.pending.get(task.task_id);
      if (!run) {
        const received = receiveSpan(sdkTracer(this.options.tracerProvider), m.subject, m.headers);
        if (received?.isRecording())
          received.setAttributes({
            'conclave.run_id': task.run_id,
            'conclave.council.task_id': task.task_id,
            'conclave.council.stage': task.stage,
            'conclave.council.member_id': this.memberId,
          });
        run = (
          received ? otelContext.with(trace.setSpan(ROOT_CONTEXT, received), () => this.serve(task, received)) : this.serve(task)
        ).finally(() => {
          received?.end();
          this.pending.delete(task.task_id);
        });
        this.pending.set(task.task_id, run);
      }
      const outcome = await run;
      if (outcome === 'done') m.ack();
      else if (this.stopped) this.handBack.push(m);
      else m.nak(RESEND_DELAY_MS);
    } finally {
      clearInterval(beat);
    }
  }

  /** Answers one task: from the cache when it was answered before, else by the handler; then the verdict. */
  private async serve(task: CouncilTask, span?: Span): Promise<'done' | 'later'> {
    const cached = this.cache.get(task.task_id);
    if (cached?.settled) return 'done';
    const control = new AbortController();
    this.working.set(task.task_id, control);
    const timer = setTimeout(() => control.abort(new Abandoned('deadline passed')), Math.max(Date.parse(task.deadline) - Date.now(), 0));
    try {
      let message = cached?.message;
      let current = task;
      for (let attempt = 0; ; attempt++) {
        if (!message) {
          const produced = await this.produce(current, control.signal);
          if (produced === undefined) return this.stopped ? 'later' : 'done';
          if ('local' in produced && attempt < this.retries) {
            // Refused by the schema before sending: the handler may fix it, as for a controller refusal.
            this.options.onVerdict?.(current, produced.local);
            current = { ...task, refusal: produced.local.error as CouncilErrorBody };
            continue;
          }
          message = produced.message;
          this.cache.set(task.task_id, { message, settled: false });
          this.trimCache();
        }
        const verdict = await this.submit(message, span, control.signal);
        if (!verdict) return 'later';
        this.options.onVerdict?.(current, verdict);
        if (verdict.ok || !verdict.retry || !message.ok || attempt >= this.retries || control.signal.aborted) {
          this.cache.set(task.task_id, { message, settled: true });
          return 'done';
        }
        current = { ...task, refusal: verdict.error as CouncilErrorBody };
        message = undefined;
      }
    } finally {
      clearTimeout(timer);
      this.working.delete(task.task_id);
    }
  }

  private get retries(): number {
    return this.options.maxRetries ?? 1;
  }

  /** Runs the handler under the task's signal; undefined when the task was abandoned (deadline, cancel, stop). */
  private async produce(
    task: CouncilTask,
    signal: AbortSignal,
  ): Promise<
    { message: MemberAnswerMessage } | { message: MemberAnswerMessage; local: Extract<MemberVerdict, { ok: false }> } | undefined
  > {
    const ids = { run_id: task.run_id, task_id: task.task_id };
    const handler = this.handlers.get(task.stage);
    if (!handler) {
      const error = { code: 'UNSUPPORTED_STAGE', message: `${this.memberId} has no handler for ${task.stage}` };
      return { message: { ...ids, ok: false, error } };
    }
    let usage: Usage | undefined;
    const context: CouncilTaskContext = { memberId: this.memberId, signal, reportUsage: (u) => (usage = u) };
    const withUsage = <T extends object>(m: T) => (usage ? { ...m, usage } : m);
    let artifact: unknown;
    try {
      artifact = await abortable(
        Promise.resolve().then(() => handler(task, context)),
        signal,
      );
    } catch (err) {
      if (signal.aborted) return undefined;
      // Spend before the failure still counts against the run's budget.
      const error = { code: 'MEMBER_FAILURE', message: (err as Error)?.message ?? String(err) };
      return { message: withUsage({ ...ids, ok: false as const, error }) };
    }
    const message = withUsage({ ...ids, ok: true as const, artifact });
    try {
      validateAnswerContent(task.stage, artifact);
      return { message };
    } catch (err) {
      if (!(err instanceof CouncilError)) throw err;
      return { message, local: { ok: false, retry: true, error: err.toJSON() } };
    }
  }

  /**
   * Sends an answer and waits for the verdict; undefined when no controller took it (answer again
   * later). Under the task's span, the answer carries its `traceparent` (not signed: it names a
   * trace, it authorizes nothing). A RATE_LIMITED refusal is the edge's, before the controller
   * saw the answer: it is resent after the hint, as ConclaveClient resends, until the budget is
   * spent or the task is abandoned (`signal`), and then answered again later.
   */
  private async submit(message: MemberAnswerMessage, span?: Span, signal?: AbortSignal): Promise<MemberVerdict | undefined> {
    try {
      return await this.answerRetries.run(() => this.submitOnce(message, span), undefined, signal);
    } catch (err) {
      if (err instanceof CouncilRequestError && err.code === 'RATE_LIMITED') return undefined;
      throw err;
    }
  }

  private async submitOnce(message: MemberAnswerMessage, span?: Span): Promise<MemberVerdict | undefined> {
    const nc = this.options.nc;
    if (nc.isClosed()) return undefined;
    const subject = this.subjects.answer(this.memberId);
    const bytes = encoder.encode(JSON.stringify(message));
    // Signed afresh at every attempt: a resend carries a new nonce, never a replayed one.
    const signed = this.options.signer ? await this.options.signer(subject, bytes) : undefined;
    const traced = span ? traceHeadersOf(span) : undefined;
    const h = signed || traced ? headers() : undefined;
    for (const [k, v] of Object.entries({ ...signed, ...traced })) h?.set(k, v);
    if (!message.ok && span?.isRecording()) span.setAttribute('conclave.error_code', message.error.code);
    try {
      const reply = await nc.request(subject, bytes, { timeout: VERDICT_TIMEOUT_MS, headers: h });
      const verdict = JSON.parse(decoder.decode(reply.data)) as MemberVerdict;
      // A controller that could not record the answer (stopping, log unavailable): send it again later.
      if (!verdict.ok && verdict.retry && verdict.error?.code === 'INTERNAL') return undefined;
      if (!verdict.ok && verdict.error?.code === 'RATE_LIMITED') throw new CouncilRequestError(verdict.error);
      return verdict;
    } catch (err) {
      const code = (err as NatsError).code;
      if (code === ErrorCode.NoResponders || code === ErrorCode.Timeout) return undefined;
      throw err;
    }
  }

  private remember(set: Set<string>, id: string): void {
    set.add(id);
    if (set.size > (this.options.cacheSize ?? 1_000)) set.delete(set.values().next().value as string);
  }

  private trimCache(): void {
    const max = this.options.cacheSize ?? 1_000;
    while (this.cache.size > max) this.cache.delete(this.cache.keys().next().value as string);
  }
}

/** The W3C trace context of a span, as headers; none for a span without valid ids. */
function traceHeadersOf(span: Span): Record<string, string> | undefined {
  const c = span.spanContext();
  if (!trace.isSpanContextValid(c)) return undefined;
  const out: Record<string, string> = { traceparent: w3cTraceparent(c) };
  const state = c.traceState?.serialize();
  if (state) out['tracestate'] = state;
  return out;
}

/** Settles with the promise, or rejects as soon as the signal aborts (the handler may ignore it). */
function abortable<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (v) => (signal.removeEventListener('abort', onAbort), resolve(v)),
      (e) => (signal.removeEventListener('abort', onAbort), reject(e)),
    );
  });
}

/** A refusal of the Council API, with its stable code (DESIGN.md section 5). */
export class CouncilRequestError extends Error {
  override readonly name = 'CouncilRequestError';
  readonly code: string;
  readonly field?: string;
  /** RATE_LIMITED: wait this long before retrying. */
  readonly retryAfterMs?: number;
  constructor(body: { code: string; message: string; field?: string; retry_after_ms?: number }) {
    super(`${body.code}: ${body.message}${body.field ? ` (${body.field})` : ''}`);
    this.code = body.code;
    this.field = body.field;
    if (typeof body.retry_after_ms === 'number') this.retryAfterMs = body.retry_after_ms;
  }
}

export interface CouncilDecisionMessage {
  event_id: string;
  run_id: string;
  goal_contract_id: string;
  terminal_state: string;
  reason: string;
  best_checkpoint_id: string | null;
  decided_at: string;
  decision_record: Record<string, unknown> | null;
  note?: string;
  /**
   * On the run's second message, after its decision owner settled a value choice through ACP:
   * the choice, and the run's terminal state after it (`terminal_state` above says the same).
   */
  value_choice?: ValueChoiceResolved['data'];
}

export interface CouncilClientOptions {
  timeoutMs?: number;
  /** As for ConclaveClient: how long one call may wait, in all, to resend a RATE_LIMITED refusal (default 10 s; 0: never). */
  rateLimitWaitMs?: number;
  /**
   * Signs every command as a registered participant, as for ConclaveClient:
   * `signer: ed25519Signer(participantId, privateKey)` (required when the service requires authentication).
   */
  signer?: (subject: string, body: Uint8Array) => Promise<Record<string, string>> | Record<string, string>;
  /** Where the SDK's spans go (see `ConclaveClientOptions.tracerProvider`); the global provider when absent. */
  tracerProvider?: TracerProvider;
}

/**
 * The owner's side of the Council API: start a run, read its RunRecord, revise its GoalContract
 * after a frame challenge, decline a challenge, interrupt, record a later outcome.
 */
export class CouncilClient {
  readonly subjects: CouncilSubjects;
  private readonly timeoutMs: number;
  private readonly signer: CouncilClientOptions['signer'];
  private readonly tracerProvider: CouncilClientOptions['tracerProvider'];
  private readonly retries: RequestRetries;
  constructor(
    readonly nc: NatsConnection,
    prefix: string = DEFAULT_COUNCIL_PREFIX,
    options: number | CouncilClientOptions = {},
  ) {
    this.subjects = councilSubjects(prefix);
    const o = typeof options === 'number' ? { timeoutMs: options } : options;
    this.timeoutMs = o.timeoutMs ?? 5_000;
    this.signer = o.signer;
    this.tracerProvider = o.tracerProvider;
    this.retries = new RequestRetries(o.rateLimitWaitMs ?? DEFAULT_RATE_LIMIT_WAIT_MS);
  }

  async start(body: { goal_contract: unknown; panel: unknown[]; policy?: unknown; actor?: string; run_id?: string }): Promise<string> {
    return (await this.request<{ run_id: string }>(this.subjects.start, body)).run_id;
  }

  /**
   * The RunRecord. The anonymisation mapping and author ids are only in the owner's copy once the
   * run has ended; `actor` is who reads (taken from the signature when authentication is on).
   */
  async get(runId: string, actor?: string): Promise<RunRecord> {
    return (
      await this.request<{ run_record: RunRecord }>(this.subjects.get, actor === undefined ? { run_id: runId } : { run_id: runId, actor })
    ).run_record;
  }

  async reviseGoalContract(body: { run_id: string; goal_contract: unknown; frame_check_id?: string; actor: string }): Promise<void> {
    await this.request(`${this.subjects.prefix}.${COUNCIL_COMMANDS.goalContract}`, body);
  }

  async declineFrameChallenge(body: { run_id: string; frame_check_id: string; reason: string; actor: string }): Promise<void> {
    await this.request(`${this.subjects.prefix}.${COUNCIL_COMMANDS.declineFrame}`, body);
  }

  async interrupt(body: { run_id: string; reason: string; actor: string }): Promise<void> {
    await this.request(`${this.subjects.prefix}.${COUNCIL_COMMANDS.interrupt}`, body);
  }

  /** Records a structured outcome (council:L5); `actor` is taken from the signature when authentication is on. */
  async recordOutcome(body: { run_id: string; outcome: unknown; actor?: string }): Promise<OutcomeRecordedReply> {
    const { run_id, outcome_id } = await this.request<OutcomeRecordedReply>(this.subjects.outcome, body);
    return { run_id, outcome_id };
  }

  /**
   * Capability estimates (council:L4) of the domains the caller may read; `rebuild` folds the
   * whole log again (administrators only).
   */
  estimates(query: { domain?: string; rebuild?: boolean } = {}): Promise<CapabilityEstimatesReply> {
    return this.request(`${this.subjects.prefix}.${COUNCIL_COMMANDS.estimates}`, query);
  }

  /** Calibration (council:L5): Brier score, log loss and reliability per member × role × domain. */
  calibration(query: { domain?: string; confidence_probabilities?: Record<string, number> } = {}): Promise<CalibrationReply> {
    return this.request(`${this.subjects.prefix}.${COUNCIL_COMMANDS.calibration}`, query);
  }

  /** The concentration audit (spec 16.7) per domain and period. */
  concentration(
    query: { domain?: string; period?: ConcentrationPeriod; subject?: ConcentrationSubject } = {},
  ): Promise<ConcentrationReply> {
    return this.request(`${this.subjects.prefix}.${COUNCIL_COMMANDS.concentration}`, query);
  }

  /** Every call resends a RATE_LIMITED refusal, signed afresh, as ConclaveClient does; nothing else is resent. */
  private request<T extends object>(subject: string, body: unknown): Promise<T> {
    return this.retries.run(() => this.requestOnce<T>(subject, body));
  }

  private async requestOnce<T extends object>(subject: string, body: unknown): Promise<T> {
    const bytes = encoder.encode(JSON.stringify(body));
    const extra = this.signer ? await this.signer(subject, bytes) : undefined;
    return withTraceHeaders(sdkTracer(this.tracerProvider), subject, async (h) => {
      if (extra) for (const [k, v] of Object.entries(extra)) h.set(k, v);
      const msg = await this.nc.request(subject, bytes, { timeout: this.timeoutMs, headers: h });
      const reply = JSON.parse(decoder.decode(msg.data)) as
        | ({ ok: true } & T)
        | { ok: false; error: { code: string; message: string; field?: string; retry_after_ms?: number } };
      if (!reply.ok) throw new CouncilRequestError(reply.error);
      return reply;
    });
  }
}
