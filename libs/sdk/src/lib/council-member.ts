import type { CouncilErrorBody, CouncilTaskRequest, RunRecord, TaskStage, Usage } from '@conclave/council-protocol';
import { COUNCIL_COMMANDS, councilSubjects, CouncilSubjects, DEFAULT_COUNCIL_PREFIX, inboxOf } from '@conclave/messaging';
import { Msg, NatsConnection, Subscription } from 'nats';
import { withTraceHeaders } from './tracing';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** What a member receives on `<prefix>.v1.tasks.<member_id>` (DESIGN.md section 5). */
export type CouncilTask = CouncilTaskRequest & {
  /** Set when the controller refused the previous answer to this task: fix it and answer again. */
  refusal?: CouncilErrorBody;
};

export interface CouncilTaskContext {
  readonly memberId: string;
  /** Cost and tokens spent on this task, summed by the controller against the run's budget. */
  reportUsage(usage: Usage): void;
}

/** Returns the artifact for the task (CandidateArtifact, reviews, RevisionArtifact, ...). */
export type CouncilTaskHandler = (task: CouncilTask, context: CouncilTaskContext) => unknown | Promise<unknown>;

export interface CouncilMemberOptions {
  nc: NatsConnection;
  memberId: string;
  /** Council subject prefix of the deployment (default `council`). */
  prefix?: string;
  /** How often a refused answer is retried with the refusal in `task.refusal` (default 1). */
  maxRetries?: number;
  /** Called with every controller verdict on an answer (accepted or refused with its error). */
  onVerdict?: (task: CouncilTask, verdict: CouncilVerdict) => void;
}

export type CouncilVerdict = { ok: true } | { ok: false; error: CouncilErrorBody };

/**
 * One agent on a Council panel: one handler per stage, so that joining takes a few lines.
 *
 * ```ts
 * new CouncilMember({ nc, memberId: 'member-skeptic-01' })
 *   .onPropose(async (task) => candidate)
 *   .onReview(async (task) => reviews)
 *   .onRevise(async (task) => revision)
 *   .start();
 * ```
 *
 * The wire protocol (any language can speak it): the controller sends the task as a request; the
 * member replies with the artifact JSON, or `{ok: true, artifact, usage}` to report usage, or
 * `{ok: false, error: {code, message}}` to report that it cannot do the task. A reply sent with a
 * reply subject gets the controller's verdict there (`{ok: true}` or `{ok: false, error}`); a
 * refused answer may be corrected by replying to the verdict message, until the task's deadline.
 */
export class CouncilMember {
  readonly memberId: string;
  private readonly subjects: CouncilSubjects;
  private readonly handlers = new Map<TaskStage, CouncilTaskHandler>();
  private subscription: Subscription | undefined;
  private stopped = false;
  private readonly verdictWaits = new Set<Subscription>();
  private readonly inFlight = new Set<Promise<void>>();

  constructor(private readonly options: CouncilMemberOptions) {
    this.memberId = options.memberId;
    this.subjects = councilSubjects(options.prefix ?? DEFAULT_COUNCIL_PREFIX);
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

  /** Subscribes to `<prefix>.v1.tasks.<member_id>`. */
  start(): this {
    if (this.subscription) return this;
    this.stopped = false;
    this.subscription = this.options.nc.subscribe(this.subjects.task(this.memberId), {
      callback: (err, msg) => {
        if (err) return;
        const work = this.serve(msg).catch(() => undefined);
        this.inFlight.add(work);
        void work.finally(() => this.inFlight.delete(work));
      },
    });
    return this;
  }

  /** Stops taking tasks and waits for the ones in progress. */
  async stop(): Promise<void> {
    const sub = this.subscription;
    this.subscription = undefined;
    this.stopped = true;
    for (const wait of this.verdictWaits) wait.unsubscribe();
    if (sub && !this.options.nc.isClosed()) await sub.drain().catch(() => undefined);
    await Promise.all([...this.inFlight]);
  }

  private async serve(msg: Msg): Promise<void> {
    let task: CouncilTask;
    try {
      task = JSON.parse(decoder.decode(msg.data)) as CouncilTask;
    } catch {
      return;
    }
    let target: Msg = msg;
    const retries = this.options.maxRetries ?? 1;
    for (let attempt = 0; attempt <= retries; attempt++) {
      const body = await this.answer(task);
      if (this.stopped) return;
      const verdict = await this.respond(target, body, task.deadline);
      if (!verdict) return;
      this.options.onVerdict?.(task, verdict.verdict);
      if (verdict.verdict.ok || body['ok'] === false || !verdict.msg.reply) return;
      task = { ...task, refusal: verdict.verdict.error };
      target = verdict.msg;
    }
  }

  private async answer(task: CouncilTask): Promise<Record<string, unknown>> {
    const handler = this.handlers.get(task.stage);
    if (!handler) return { ok: false, error: { code: 'UNSUPPORTED_STAGE', message: `${this.memberId} has no handler for ${task.stage}` } };
    let usage: Usage | undefined;
    const context: CouncilTaskContext = { memberId: this.memberId, reportUsage: (u) => (usage = u) };
    try {
      const artifact = await handler(task, context);
      return usage ? { ok: true, artifact, usage } : { ok: true, artifact };
    } catch (err) {
      // Spend before the failure still counts against the run's budget.
      const error = { code: 'MEMBER_FAILURE', message: (err as Error)?.message ?? String(err) };
      return usage ? { ok: false, error, usage } : { ok: false, error };
    }
  }

  /** Replies with a reply subject of our own and waits for the controller's verdict (until the deadline). */
  private async respond(
    target: Msg,
    body: Record<string, unknown>,
    deadline: string,
  ): Promise<{ verdict: CouncilVerdict; msg: Msg } | undefined> {
    const nc = this.options.nc;
    if (nc.isClosed()) return undefined;
    const wire = body['ok'] === true && body['usage'] === undefined ? body['artifact'] : body;
    const inbox = inboxOf(nc);
    const sub = nc.subscribe(inbox, { max: 1 });
    this.verdictWaits.add(sub);
    const wait = Math.max(Date.parse(deadline) - Date.now(), 0) + 2_000;
    const timer = setTimeout(() => sub.unsubscribe(), wait);
    try {
      if (!target.respond(encoder.encode(JSON.stringify(wire)), { reply: inbox })) return undefined;
      for await (const m of sub) {
        return { verdict: JSON.parse(decoder.decode(m.data)) as CouncilVerdict, msg: m };
      }
      return undefined;
    } catch {
      return undefined;
    } finally {
      clearTimeout(timer);
      sub.unsubscribe();
      this.verdictWaits.delete(sub);
    }
  }
}

/** A refusal of the Council API, with its stable code (DESIGN.md section 5). */
export class CouncilRequestError extends Error {
  override readonly name = 'CouncilRequestError';
  readonly code: string;
  readonly field?: string;
  constructor(body: { code: string; message: string; field?: string }) {
    super(`${body.code}: ${body.message}${body.field ? ` (${body.field})` : ''}`);
    this.code = body.code;
    this.field = body.field;
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
}

export interface CouncilClientOptions {
  timeoutMs?: number;
  /**
   * Signs every command as a registered participant, as for ConclaveClient:
   * `signer: ed25519Signer(participantId, privateKey)` (required when the service requires authentication).
   */
  signer?: (subject: string, body: Uint8Array) => Promise<Record<string, string>> | Record<string, string>;
}

/**
 * The owner's side of the Council API: start a run, read its RunRecord, revise its GoalContract
 * after a frame challenge, decline a challenge, interrupt, record a later outcome.
 */
export class CouncilClient {
  readonly subjects: CouncilSubjects;
  private readonly timeoutMs: number;
  private readonly signer: CouncilClientOptions['signer'];
  constructor(
    readonly nc: NatsConnection,
    prefix: string = DEFAULT_COUNCIL_PREFIX,
    options: number | CouncilClientOptions = {},
  ) {
    this.subjects = councilSubjects(prefix);
    const o = typeof options === 'number' ? { timeoutMs: options } : options;
    this.timeoutMs = o.timeoutMs ?? 5_000;
    this.signer = o.signer;
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

  async recordOutcome(body: { run_id: string; outcome: unknown; actor: string }): Promise<void> {
    await this.request(this.subjects.outcome, body);
  }

  private async request<T extends object>(subject: string, body: unknown): Promise<T> {
    const bytes = encoder.encode(JSON.stringify(body));
    const extra = this.signer ? await this.signer(subject, bytes) : undefined;
    return withTraceHeaders(subject, async (h) => {
      if (extra) for (const [k, v] of Object.entries(extra)) h.set(k, v);
      const msg = await this.nc.request(subject, bytes, { timeout: this.timeoutMs, headers: h });
      const reply = JSON.parse(decoder.decode(msg.data)) as
        | ({ ok: true } & T)
        | { ok: false; error: { code: string; message: string; field?: string } };
      if (!reply.ok) throw new CouncilRequestError(reply.error);
      return reply;
    });
  }
}
