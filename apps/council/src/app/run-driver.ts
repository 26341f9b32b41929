import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import {
  COUNCIL_COMMAND_TYPES as C,
  ControllerAction,
  CouncilCommand,
  CouncilError,
  CouncilEvent,
  CouncilRunState,
  CouncilTaskRequest,
  MAX_REFUSALS_PER_TASK,
  MemberAnswerMessage,
  MemberVerdict,
  acceptMemberAnswer,
  cancelledTasks,
  controllerEvents,
  councilRunStream,
  decide,
  decideNextFolding,
  foldRun,
  nextWakeAt,
  pendingTaskRequests,
  taskRequests,
  validateAnswerMessage,
} from '@conclave/council-protocol';
import {
  AggregateSource,
  CommandConflictError,
  ConcurrencyError,
  Decider,
  handleCommand,
  LoadedAggregate,
  StreamVersion,
} from '@conclave/event-log';
import { CLOCK, Clock, leaseMargin, SERVICE_CONFIG, TimerQueue } from '@conclave/service-kit';
import { CouncilConfig } from './council.config';
import { RunSpans, activeContext, runTraceParent } from './council-metrics';
import { MemberTaskTransport } from './member-task-transport';
import { HeldLease, RunLeases } from './run-lease';
import { LoadedRun, RunRepository } from './run-repository';

/** Run ids are stream ids (`council-run-<id>`). */
const RUN_ID = /^[A-Za-z0-9_]{1,100}$/;
/** Version conflicts tolerated in a row before a step backs off (another writer is busy on the run). */
const MAX_CONFLICTS = 5;

/** Builds the command to decide from the run's current state and the edge's `now`. */
export type CommandBuilder = (state: CouncilRunState, now: string) => CouncilCommand;

interface LoopDeps {
  repo: RunRepository;
  transport: MemberTaskTransport;
  clock: Clock;
  config: CouncilConfig;
  logger: Logger;
  onTerminated(runId: string): void;
  /** The service's timer queue: wakes the run's loop at a time, until cancelled. */
  wakeAt(runId: string, atMs: number): void;
  cancelWake(runId: string): void;
}

class Stopped extends Error {}

/** Conflicts past the bound: nothing was decided about the command (INTERNAL to its caller: retry). */
class RunKeptChanging extends CouncilError {
  constructor() {
    super('INTERNAL', 'the run kept changing under the command; retry');
  }
}

/** An answer neither recorded nor refused (the transport answers "send it again"). */
class AnswerNotRecorded extends Error {
  constructor(cause: CouncilError) {
    super(cause.message, { cause });
    this.name = 'AnswerNotRecorded';
  }
}

/** A command with the `now` the edge stamped; built on the state it is decided on. */
interface RunCommand {
  build: CommandBuilder;
  now: string;
}
type RunDecider = Pick<Decider<CouncilRunState, RunCommand, CouncilEvent>, 'decide' | 'evolve' | 'evolveAll'>;

const foldOne = (state: CouncilRunState, event: CouncilEvent) => foldRun([event], state);

/** Just the command (a run not driven here: the driver that adopts it steps the controller). */
const commandOnly: RunDecider = {
  decide: ({ build, now }, state) => decide(build(state, now), state),
  evolve: foldOne,
  evolveAll: (state, events) => foldRun(events, state),
};

/** What the last decision of `withController` issued, and the run after all its events. */
interface Issued {
  actions: ControllerAction[];
  decided?: { on: CouncilRunState; events: readonly CouncilEvent[]; state: CouncilRunState };
}

/**
 * The command, then what the controller does next on its result, in one commit: the reply that
 * closes a stage and the next stage's tasks cost one append on the run's critical path. The
 * actions of the last decision are left in `issued`, to send once they are in the log. The run
 * is copied once per decision: the controller folds its events into the command's result in
 * place, and the pipeline's fold after the append reuses that state.
 */
function withController(subjectPrefix: string, issued: Issued): RunDecider {
  return {
    decide: ({ build, now }, state) => {
      issued.actions = [];
      issued.decided = undefined;
      const events = decide(build(state, now), state);
      if (events.length === 0) return [];
      const next = decideNextFolding(foldRun(events, state), now, { subjectPrefix }, true);
      issued.actions = next.actions;
      const all = [...events, ...controllerEvents(next.actions)];
      issued.decided = { on: state, events: all, state: next.state };
      return all;
    },
    evolve: foldOne,
    evolveAll: (state, events) =>
      issued.decided && issued.decided.on === state && issued.decided.events === events ? issued.decided.state : foldRun(events, state),
  };
}

/** The one command pipeline over a run's stream; a run that keeps changing is a retryable refusal. */
async function pipeline(source: AggregateSource<CouncilRunState, CouncilEvent>, runId: string, decider: RunDecider, command: RunCommand) {
  try {
    return await handleCommand(source, councilRunStream(runId), decider, command, { maxAttempts: MAX_CONFLICTS + 1 });
  } catch (err) {
    if (err instanceof CommandConflictError) throw new RunKeptChanging();
    throw err;
  }
}

/**
 * One running Council run, driven by this process: the service loop of the council-protocol
 * README. Everything that reads or changes the run's state goes through `exec`, one at a time:
 * decideNext → append the controller's events atomically with the expected version → only then
 * send the tasks; member replies and human commands go through `decide` the same way; the timer
 * wakes the loop at `nextWakeAt` for deadlines and the run budget.
 */
class RunLoop {
  private chain: Promise<unknown> = Promise.resolve();
  private stopped = false;
  /** Tasks whose publish failed: sent again on the next step. */
  private readonly unsent = new Set<string>();
  private readonly subjectPrefix: string;

  constructor(
    readonly runId: string,
    public state: CouncilRunState,
    public version: StreamVersion | 'no_stream',
    private readonly deps: LoopDeps,
    private readonly spans: RunSpans,
  ) {
    this.subjectPrefix = `${deps.config.councilPrefix}.v1`;
  }

  /** Serialises everything that reads or changes this run's state. */
  exec<T>(fn: () => Promise<T>): Promise<T> {
    const result = this.chain.then(async () => {
      if (this.stopped) throw new Stopped('controller stopping');
      const before = this.state;
      try {
        return await this.spans.within(fn);
      } finally {
        if (before !== this.state) this.spans.reconcile(this.state);
        this.cancelSettled(before);
      }
    });
    this.chain = result.catch(() => undefined);
    return result;
  }

  /** Steps the controller; with `resend`, first resends the tasks issued but unanswered (after a restart). */
  kick(resend = false): void {
    this.exec(async () => {
      if (resend) {
        // The run's spans first: a resent task carries its task span's traceparent.
        this.spans.reconcile(this.state);
        for (const t of pendingTaskRequests(this.state, this.subjectPrefix)) this.send(t.request);
      }
      await this.step();
    }).catch((err: unknown) => this.failed('step', err));
  }

  /**
   * An event appeared in the log: unless the loop holds it already, another writer appended to the
   * run, so re-read it and step. Checked in turn, not when the event is seen: the index may see the
   * loop's own append before the loop has its acknowledgement.
   */
  refresh(eventId: string): void {
    this.exec(async () => {
      if (this.state.status !== 'empty' && this.state.applied_event_ids[eventId]) return;
      await this.reload();
      await this.step();
    }).catch((err: unknown) => this.failed('refresh', err));
  }

  /**
   * Decides a command from outside the loop (a member's reply, a human), then what the controller
   * does next on the resulting state, and appends both in one atomic commit: the reply that
   * closes a stage and the next stage's tasks cost one append on the run's critical path.
   */
  async execute(build: CommandBuilder): Promise<CouncilRunState> {
    return this.exec(async () => {
      const issued: Issued = { actions: [] };
      const before = this.state;
      let outcome: Awaited<ReturnType<typeof pipeline>>;
      try {
        outcome = await pipeline(this.source(issued), this.runId, withController(this.subjectPrefix, issued), {
          build,
          now: this.now(),
        });
      } catch (refusal) {
        // A refusal decided on a re-read run (another replica's append, say the stage's last
        // answer) still steps on what it read: the index's notice of that append finds the event
        // applied and does not step again, and the run would wait for its deadline.
        if (this.state !== before) await this.step().catch((err: unknown) => this.failed('step', err));
        throw refusal;
      }
      if (outcome.events.length > 0) {
        if (outcome.duplicate) await this.reload();
        else {
          this.state = outcome.state;
          this.version = outcome.version;
          this.spans.record(outcome.events, this.state);
        }
        this.sendIssued(issued.actions);
      }
      await this.step();
      return this.state;
    });
  }

  /** The loop's own state as the pipeline's source: decided on as it is, reread on a conflict. */
  private source(issued: Issued): AggregateSource<CouncilRunState, CouncilEvent> {
    const stream = councilRunStream(this.runId);
    const current = (): LoadedAggregate<CouncilRunState> => ({ stream, state: this.state, version: this.version, cached: true });
    return {
      load: async () => current(),
      reload: async () => {
        await this.reload();
        return current();
      },
      isCurrent: async (loaded) => (await this.deps.repo.version(this.runId)) === loaded.version,
      append: (_stream, events, expected) =>
        this.deps.repo.append(this.runId, events, expected, issued.decided?.events === events ? issued.decided.state : undefined),
    };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.deps.cancelWake(this.runId);
    await this.chain;
    this.spans.end();
  }

  private now(): string {
    return this.deps.clock.now().toISOString();
  }

  private async step(): Promise<void> {
    if (this.unsent.size > 0)
      for (const t of pendingTaskRequests(this.state, this.subjectPrefix)) if (this.unsent.has(t.request.task_id)) this.send(t.request);
    let conflicts = 0;
    while (!this.stopped && this.state.status === 'running') {
      const { actions, state } = decideNextFolding(this.state, this.now(), { subjectPrefix: this.subjectPrefix });
      if (actions.length === 0) break;
      if (!(await this.append(controllerEvents(actions), state))) {
        if (++conflicts > MAX_CONFLICTS) return this.retryLater();
        continue;
      }
      this.sendIssued(actions);
    }
    if (this.state.status !== 'running') {
      this.deps.cancelWake(this.runId);
      this.deps.onTerminated(this.runId);
      return;
    }
    this.schedule();
  }

  /**
   * Only once the decision is in the log: sends the tasks it issued, from the logged task, so a
   * retry after a duplicate append sends exactly what the log holds.
   */
  private sendIssued(actions: ControllerAction[]): void {
    const issued = new Set(taskRequests(actions).map((t) => t.request.task_id));
    if (issued.size === 0) return;
    for (const t of pendingTaskRequests(this.state, this.subjectPrefix)) if (issued.has(t.request.task_id)) this.send(t.request);
  }

  /** Appends events decided on `this.state`. False when the log had moved on (the state is reloaded). */
  private async append(events: CouncilEvent[], folded?: CouncilRunState): Promise<boolean> {
    try {
      const after = folded ?? foldRun(events, this.state);
      const result = await this.deps.repo.append(this.runId, events, this.version, after);
      if (result.duplicate) {
        await this.reload();
        return true;
      }
      this.state = after;
      this.version = result.version;
      this.spans.record(events, this.state);
      return true;
    } catch (err) {
      if (!(err instanceof ConcurrencyError)) throw err;
      await this.reload();
      return false;
    }
  }

  private async reload(): Promise<void> {
    const loaded = await this.deps.repo.load(this.runId);
    this.state = loaded.state;
    this.version = loaded.version;
  }

  private schedule(): void {
    if (this.stopped || this.state.status !== 'running') return this.deps.cancelWake(this.runId);
    const wake = nextWakeAt(this.state);
    if (wake === null) return this.deps.cancelWake(this.runId);
    this.deps.wakeAt(this.runId, Date.parse(wake) + 1);
  }

  private retryLater(): void {
    if (!this.stopped) this.deps.wakeAt(this.runId, this.deps.clock.now().getTime() + this.deps.config.retryMs);
  }

  private failed(what: string, err: unknown): void {
    if (err instanceof Stopped || this.stopped) return;
    this.deps.logger.error(`run ${this.runId}: ${what} failed, retrying in ${this.deps.config.retryMs} ms: ${(err as Error).message}`);
    this.retryLater();
  }

  /**
   * Queues one task on its member's durable queue. A failed publish (JetStream unavailable) is
   * retried on the next step, until the task's deadline.
   */
  private send(request: CouncilTaskRequest): void {
    if (this.stopped || this.state.status !== 'running') return;
    const task = this.state.tasks[request.task_id];
    if (!task || Date.parse(request.deadline) <= this.deps.clock.now().getTime()) return;
    this.unsent.delete(request.task_id);
    this.deps.transport.publishTask(task.member_id, request).catch((err: Error) => {
      this.unsent.add(request.task_id);
      this.failed(`publish of task ${request.task_id}`, err);
    });
  }

  /** A task the run went on without (timed out, or the run ended): its member is told to stop. */
  private cancelSettled(before: CouncilRunState): void {
    if (before === this.state) return;
    for (const { member_id, notice } of cancelledTasks(before, this.state)) {
      this.unsent.delete(notice.task_id);
      this.deps.transport
        .publishCancel(member_id, notice)
        .catch((err: Error) => this.deps.logger.warn(`run ${this.runId}: cancel notice for ${notice.task_id} not sent: ${err.message}`));
    }
  }
}

/**
 * The runs this process drives. A run is adopted when it starts here, when a command reaches a
 * running run nobody drives, at boot for every run the index finds unterminated, and when the
 * replica that drove it stops renewing its lease. One replica drives a run at a time: adopting
 * takes the run's lease (RunLeases), a loop renews it every third of the lease time, and a loop
 * whose lease was taken over stops.
 */
@Injectable()
export class RunDriver implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('CouncilController');
  private readonly loops = new Map<string, RunLoop>();
  private readonly held = new Map<string, HeldRun>();
  private readonly adopting = new Set<string>();
  /** The last command queued on each run not driven here (see oneAtATime). */
  private readonly outside = new Map<string, Promise<void>>();
  private renewTimer: NodeJS.Timeout | undefined;
  private stopping = false;
  private readonly deps: LoopDeps;
  private readonly timers: TimerQueue;

  constructor(
    private readonly repo: RunRepository,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(SERVICE_CONFIG) config: CouncilConfig,
    private readonly leases: RunLeases,
    private readonly transport: MemberTaskTransport,
  ) {
    // Deadlines and budget wake-ups of every run in one timer queue: a wake-up kicks the loop.
    this.timers = new TimerQueue({
      clock,
      run: async (key) => {
        if (key.startsWith(LEASE_DEADLINE)) await this.leaseLapsed(key.slice(LEASE_DEADLINE.length));
        else this.loops.get(key)?.kick();
        return 'done';
      },
    });
    this.timers.start();
    this.deps = {
      repo,
      transport,
      clock,
      config,
      logger: this.logger,
      onTerminated: (id) => void this.drop(id),
      wakeAt: (id, atMs) => this.timers.schedule(id, atMs),
      cancelWake: (id) => this.timers.cancel(id),
    };
  }

  get activeRuns(): number {
    return this.loops.size;
  }

  /** Does this replica drive the run? */
  drives(runId: string): boolean {
    return this.loops.has(runId);
  }

  /**
   * Starts driving a run already in the log, if its lease is free (`resend`: the tasks it had
   * issued go out again, same task ids). The run is read again unless the caller's state is still
   * the log's, so a state loaded before another holder's last append is never driven.
   */
  async adopt(runId: string, loaded: LoadedRun, resend = false): Promise<boolean> {
    if (this.stopping || loaded.state.status !== 'running') return false;
    if (this.loops.has(runId) || this.adopting.has(runId)) return true;
    this.adopting.add(runId);
    try {
      const writtenAt = this.clock.now().getTime();
      const lease = await this.leases.acquire(runId);
      if (!lease) return false;
      // The caller's state may predate another replica's appends (it drove the run, perhaps to
      // its end, and released the lease): driven only if it is still the log's.
      const fresh = !lease.tookOver && (await this.repo.version(runId)) === loaded.version ? loaded : await this.repo.load(runId);
      if (this.stopping || fresh.state.status !== 'running') {
        await this.leases.release(lease);
        return false;
      }
      // The run's spans continue the trace its first events were recorded in, else the caller's.
      const spans = new RunSpans(runId, runTraceParent(fresh.origin ?? loaded.origin) ?? activeContext());
      const loop = new RunLoop(runId, fresh.state, fresh.version, this.deps, spans);
      this.loops.set(runId, loop);
      this.held.set(runId, { lease, renewing: false });
      this.holdUntil(runId, writtenAt);
      this.scheduleRenewals();
      loop.kick(resend);
      return true;
    } finally {
      this.adopting.delete(runId);
    }
  }

  /** After a restart or a takeover: fold the run from the log and continue it. Answered tasks are never re-issued. */
  async resume(runId: string): Promise<void> {
    if (this.loops.has(runId) || this.adopting.has(runId)) return;
    const holder = await this.leases.holderOf(runId);
    if (holder && holder.holder !== this.leases.holder && Date.parse(holder.expires_at) > this.clock.now().getTime()) return;
    await this.adopt(runId, await this.repo.load(runId), true);
  }

  /** The live state of a run driven here, or undefined. */
  stateOf(runId: string): CouncilRunState | undefined {
    return this.loops.get(runId)?.state;
  }

  /** An event appeared in the log: if a run driven here did not write it, re-read and step. */
  observed(runId: string, eventId: string): void {
    const loop = this.loops.get(runId);
    if (loop && (loop.state.status === 'empty' || !loop.state.applied_event_ids[eventId])) loop.refresh(eventId);
  }

  /**
   * Decides a command on a run: in the run's own loop when driven here, else read, decide and
   * append with the expected version (retried on a conflict), adopting the run if it still runs
   * and nobody holds its lease. Throws the CouncilError of a refused command.
   */
  async execute(runId: string, build: CommandBuilder): Promise<CouncilRunState> {
    const loop = this.loops.get(runId);
    if (loop) return loop.execute(build);
    // Only the decision and its append are queued: adopting waits for the lease, which must not
    // hold up the run's other commands here (the driver may be slow to give the lease up).
    const appended = await this.oneAtATime(runId, async (): Promise<{ state: CouncilRunState; adopt?: LoadedRun }> => {
      const adopted = this.loops.get(runId);
      if (adopted) return { state: await adopted.execute(build) };
      const outcome = await pipeline(this.repo.source(runId), runId, commandOnly, { build, now: this.clock.now().toISOString() });
      if (outcome.events.length === 0) return { state: outcome.state };
      const after = outcome.duplicate ? await this.repo.load(runId) : { state: outcome.state, version: outcome.version };
      return { state: after.state, adopt: after };
    });
    if (appended.adopt) await this.adopt(runId, appended.adopt);
    return appended.state;
  }

  /**
   * Commands on a run not driven here, one at a time per run: a burst of answers to one stage
   * would otherwise race each other's appends in this process as well as the driver's.
   */
  private oneAtATime<T>(runId: string, fn: () => Promise<T>): Promise<T> {
    const result = (this.outside.get(runId) ?? Promise.resolve()).then(fn);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.outside.set(runId, tail);
    void tail.then(() => {
      if (this.outside.get(runId) === tail) this.outside.delete(runId);
    });
    return result;
  }

  onApplicationBootstrap(): void {
    this.transport.serveAnswers((memberId, body) => this.answer(memberId, body));
  }

  /**
   * A member's answer (`<prefix>.v1.answers.<member_id>`): its content validated against the
   * stage's schema and stamped with the bookkeeping (acceptMemberAnswer), then decided like any
   * command. A refused answer is recorded with its spend; the verdict says whether the member may
   * correct it (the task is still open, in time, and under the refusal cap). The same answer sent
   * twice is accepted once (the task's result event id).
   */
  async answer(memberId: string, body: unknown): Promise<MemberVerdict> {
    const m: MemberAnswerMessage = validateAnswerMessage(body);
    if (!RUN_ID.test(m.run_id)) throw new CouncilError('SCHEMA_VIOLATION', 'not a run id', 'run_id');
    const build: CommandBuilder = m.ok
      ? (s, now) => ({
          type: C.SubmitTaskResult,
          task_id: m.task_id,
          member_id: memberId,
          artifact: acceptMemberAnswer(s, m.task_id, memberId, m.artifact),
          usage: m.usage,
          now,
        })
      : (_s, now) => ({
          type: C.ReportTaskFailure,
          task_id: m.task_id,
          member_id: memberId,
          detail: `${m.error.code}: ${m.error.message}`,
          usage: m.usage,
          now,
        });
    try {
      await this.execute(m.run_id, build);
      return { ok: true, retry: false };
    } catch (err) {
      // The run kept changing under the answer (other answers racing it): nothing was decided
      // about this one. Not a refusal to record with its spend; the member sends it again.
      if (err instanceof RunKeptChanging) throw new AnswerNotRecorded(err);
      if (!(err instanceof CouncilError) || !m.ok) throw err;
      const error = err.toJSON();
      // A refused answer is a fact of the run, with its spend (the member may still correct it).
      await this.execute(m.run_id, (_s, now) => ({
        type: C.RecordRefusedAnswer,
        task_id: m.task_id,
        member_id: memberId,
        error,
        usage: m.usage,
        now,
      })).catch((e: unknown) => {
        if (!(e instanceof CouncilError) && !(e instanceof Stopped))
          this.logger.warn(`refusal of ${m.task_id} not recorded: ${(e as Error).message}`);
      });
      const state = this.stateOf(m.run_id) ?? (await this.repo.load(m.run_id)).state;
      const task = state.status === 'running' ? state.tasks[m.task_id] : undefined;
      const refusals = state.status === 'empty' ? 0 : state.refusals.filter((r) => r.task_id === m.task_id).length;
      const retry =
        task !== undefined &&
        task.status === 'issued' &&
        task.member_id === memberId &&
        Date.parse(task.deadline) > this.clock.now().getTime() &&
        refusals < MAX_REFUSALS_PER_TASK;
      return { ok: false, retry, error };
    }
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.renewTimer);
    await this.timers.stop();
    await Promise.all([...this.loops.values()].map((l) => l.stop()));
    this.loops.clear();
    // Released at once, so another replica takes the runs over without waiting for expiry.
    await Promise.all([...this.held.values()].map((h) => this.leases.release(h.lease).catch(() => undefined)));
    this.held.clear();
  }

  /** The run ended (or its lease was lost): stop driving and give the lease up. */
  private async drop(runId: string, release = true): Promise<void> {
    const loop = this.loops.get(runId);
    this.loops.delete(runId);
    const held = this.held.get(runId);
    this.held.delete(runId);
    this.timers.cancel(LEASE_DEADLINE + runId);
    if (!release && loop) await loop.stop();
    if (release && held)
      await this.leases.release(held.lease).catch((err: Error) => this.logger.warn(`lease of run ${runId} not released: ${err.message}`));
  }

  /**
   * The lease written at `writtenAt` (this clock, before the write) lasts until writtenAt +
   * lease time by the clock of whoever takes it over: this replica stops driving a margin before
   * that unless a renewal lands first, whether renewals fail, hang or never get a reply.
   */
  private holdUntil(runId: string, writtenAt: number): void {
    this.timers.schedule(LEASE_DEADLINE + runId, writtenAt + this.leases.leaseMs - leaseMargin(this.leases.leaseMs));
  }

  private async leaseLapsed(runId: string): Promise<void> {
    if (!this.held.has(runId)) return;
    this.logger.warn(`run ${runId}: lease not renewed within ${this.leases.leaseMs} ms; no longer driving it`);
    // The loop stops sending at once (drop's first, synchronous part); its step still in flight is
    // not waited for here, or one stuck append would hold up the timers that fell due with it
    // (other runs' lapsed leases in a partition).
    void this.drop(runId, false).catch((err: Error) => this.logger.warn(`run ${runId}: stopping failed: ${err.message}`));
  }

  /**
   * Renews every held lease every third of the lease time, each renewal on its own: one waiting
   * for its reply holds up neither the others nor the next round (which skips it).
   */
  private scheduleRenewals(): void {
    if (this.renewTimer || this.stopping) return;
    this.renewTimer = setTimeout(
      () => {
        this.renewTimer = undefined;
        for (const [runId, h] of this.held)
          void this.renew(runId, h).catch((err: Error) => this.logger.warn(`run ${runId}: lease renewal failed: ${err.message}`));
        if (this.held.size > 0) this.scheduleRenewals();
      },
      Math.max(Math.floor(this.leases.leaseMs / 3), 50),
    );
    this.renewTimer.unref?.();
  }

  private async renew(runId: string, h: HeldRun): Promise<void> {
    // A renewal still waiting for its reply: a second one would race it for the same revision.
    if (h.renewing || this.stopping) return;
    h.renewing = true;
    const writtenAt = this.clock.now().getTime();
    try {
      const renewed = await this.leases.renew(h.lease);
      if (this.held.get(runId) !== h) {
        // Given up while the renewal was on its way (its deadline passed): let another replica
        // take the run at once rather than at the renewed expiry.
        if (renewed) await this.leases.release(h.lease).catch(() => undefined);
        return;
      }
      if (renewed) {
        this.holdUntil(runId, writtenAt);
        return;
      }
      this.logger.warn(`run ${runId}: lease taken over by another replica; no longer driving it`);
      await this.drop(runId, false);
    } catch (err) {
      // KV unreachable or slow: the lease's deadline (holdUntil) stops the driving in time.
      this.logger.warn(`run ${runId}: lease not renewed yet: ${(err as Error).message}`);
    } finally {
      h.renewing = false;
    }
  }
}

/** A run's lease as this replica holds it. */
interface HeldRun {
  lease: HeldLease;
  /** A renewal is waiting for its reply. */
  renewing: boolean;
}

/** The timer queue's key of a held lease's deadline (beside the runs' wake-ups, keyed by run id). */
const LEASE_DEADLINE = 'lease:';
