import { Inject, Injectable } from '@nestjs/common';
import { AcpError } from '@conclave/acp-protocol';
import {
  COUNCIL_COMMAND_TYPES as C,
  COUNCIL_EVENT_TYPES as E,
  CouncilError,
  CouncilEvent,
  DeliberationRequest,
  EMPTY_RUN,
  RunRecord,
  RunStarted,
  decide,
  foldRun,
  isSameStart,
  runDomain,
  runReaderRole,
  runRecordFor,
} from '@conclave/council-protocol';
import { ConcurrencyError } from '@conclave/event-log';
import { CommandContext, IDS, IdGenerator, Identity, ParticipantDirectory } from '@conclave/service-kit';
import { EvaluationCommands } from './evaluation-commands';
import { RunDriver } from './run-driver';
import { RunRepository } from './run-repository';

/** Run ids are stream ids (`council-run-<id>`): letters, digits and `_` (a ULID by default). */
const RUN_ID = /^[A-Za-z0-9_]{1,100}$/;

function body(input: unknown): Record<string, unknown> {
  if (input === null || typeof input !== 'object' || Array.isArray(input))
    throw new CouncilError('SCHEMA_VIOLATION', 'the request body must be a JSON object');
  return input as Record<string, unknown>;
}

function text(o: Record<string, unknown>, field: string): string {
  const v = o[field];
  if (typeof v !== 'string' || v.trim() === '') throw new CouncilError('SCHEMA_VIOLATION', 'must be a non-empty string', field);
  return v;
}

function runIdOf(o: Record<string, unknown>): string {
  const id = text(o, 'run_id');
  if (!RUN_ID.test(id))
    throw new CouncilError('SCHEMA_VIOLATION', 'must be letters, digits and _ (it names the stream council-run-<id>)', 'run_id');
  return id;
}

/** The actor a body declares, if any: with authentication on it must be the signer. */
export function declaredActor(input: unknown): string | undefined {
  const v = input !== null && typeof input === 'object' ? (input as Record<string, unknown>)['actor'] : undefined;
  return typeof v === 'string' ? v : undefined;
}

/**
 * The use cases behind the Council subjects. Each takes the identity the edge authenticated
 * (CommandContext, the same seam as ACP commands), parses the body, stamps time and ids, and
 * runs the pure decider, which checks the run's rights (owner, chair); a broken rule is a
 * CouncilError, mapped to the reply by the controller.
 */
@Injectable()
export class CouncilCommands {
  constructor(
    private readonly repo: RunRepository,
    private readonly driver: RunDriver,
    private readonly context: CommandContext,
    @Inject(IDS) private readonly ids: IdGenerator,
    private readonly evaluation: EvaluationCommands,
    private readonly directory: ParticipantDirectory,
  ) {}

  /**
   * `council.v1.start`: `{goal_contract, panel, policy?, actor?, run_id?}` → `{run_id}`; only the
   * decision owner starts, and only with a grant to propose in the run's domain (RFC 14.2).
   */
  async start(input: unknown, identity: Identity): Promise<{ run_id: string }> {
    const o = body(input);
    const run_id = o['run_id'] === undefined ? this.ids.next() : runIdOf(o);
    const actor = await this.actorIdentity(identity, o);
    return this.startRun(run_id, o, actor);
  }

  /**
   * A run an ACP proposal asked for (`payload.deliberate`), started by the service's reactor: the
   * proposal's author, whom ACP intake authenticated and authorised to propose in the proposal's
   * domain, is the actor, and StartRun holds it to being the decision owner. The domain is not
   * authorised again: StartRun refuses a GoalContract naming another domain than the proposal's
   * (NOT_AUTHORIZED_ROLE at `goal_contract.domain`), so the run decides, and the bridge posts,
   * exactly where intake's `authorize` let the author in; a second grant check would be a second
   * rule for the same hole. Its panel is checked like any other.
   */
  async startFromAcp(request: DeliberationRequest): Promise<{ run_id: string }> {
    const o = {
      goal_contract: request.goal_contract,
      panel: request.panel,
      ...(request.policy !== undefined ? { policy: request.policy } : {}),
    };
    return this.startRun(request.run_id, o, request.actor, request.acp_origin);
  }

  /** `starter`: the identity to authorise in the run's domain (none when ACP intake already did). */
  private async startRun(
    run_id: string,
    o: Record<string, unknown>,
    starter: Identity | string,
    acp_origin?: unknown,
  ): Promise<{ run_id: string }> {
    const actor = typeof starter === 'string' ? starter : starter.participant_id;
    const seed = this.ids.next();
    // council:L4: the chair comes from the capability projection, recorded in RunStarted.
    const chair_selection = this.evaluation.chairFor(o, seed);
    const events = decide(
      {
        type: C.StartRun,
        run_id,
        goal_contract: o['goal_contract'],
        panel: o['panel'],
        policy: o['policy'],
        seed,
        ...(chair_selection ? { chair_selection } : {}),
        ...(acp_origin !== undefined ? { acp_origin } : {}),
        actor,
        now: this.context.now(),
      },
      EMPTY_RUN,
    );
    // After StartRun parsed the body (a malformed one is SCHEMA_VIOLATION) and before anything is appended.
    const run = started(events);
    if (typeof starter !== 'string') this.authorizeDomain(starter, run);
    await this.requireRegisteredPanel(run);
    try {
      const result = await this.repo.append(run_id, events, 'no_stream');
      const loaded = result.duplicate ? await this.repo.load(run_id) : { state: foldRun(events), version: result.version };
      if (result.duplicate && !isSameStart(loaded.state, run))
        throw new CouncilError('RUN_ALREADY_STARTED', `run ${run_id} already started, with another request`, 'run_id');
      await this.driver.adopt(run_id, loaded);
    } catch (err) {
      if (err instanceof ConcurrencyError) throw new CouncilError('RUN_ALREADY_STARTED', `run ${run_id} already started`, 'run_id');
      throw err;
    }
    return { run_id };
  }

  /**
   * `council.v1.get`: `{run_id, actor?}` → `{run_record}` as the reader may see it: the owner's
   * copy carries the anonymisation mapping once the run has ended; panel members and chairs, the
   * owner too when it deliberates, read only after the run; observers named by the policy read
   * without the mapping; anyone else is refused. With authentication off a reader with no role in
   * the run is treated as an observer (declared identities prove nothing there).
   */
  async get(input: unknown, identity: Identity): Promise<{ run_record: RunRecord }> {
    const o = body(input);
    const runId = runIdOf(o);
    const reader = await this.actor(identity, o);
    const state = this.driver.stateOf(runId) ?? (await this.repo.load(runId)).state;
    if (state.status === 'empty') throw new CouncilError('RUN_NOT_FOUND', `no run ${runId}`, 'run_id');
    const role = runReaderRole(state, reader) ?? (this.context.authRequired ? null : 'observer');
    if (role === null) throw new CouncilError('NOT_AUTHORIZED_ROLE', `${reader} has no role in run ${runId}`, 'run_id');
    return { run_record: runRecordFor(state, role) };
  }

  /** `council.v1.outcome`: `{run_id, outcome: {outcome_id, observed_at, summary, source, evidence_refs?}, actor?}`; the owner's. */
  async outcome(input: unknown, identity: Identity): Promise<{ run_id: string }> {
    const o = body(input);
    const runId = runIdOf(o);
    const actor = await this.actor(identity, o);
    await this.driver.execute(runId, (_s, now) => ({ type: C.RecordOutcome, outcome: o['outcome'], actor, now }));
    return { run_id: runId };
  }

  /** `council.v1.goal-contract`: the owner revises the GoalContract, or the chair accepts a comparable frame challenge. */
  async reviseGoalContract(input: unknown, identity: Identity): Promise<{ run_id: string }> {
    const o = body(input);
    const runId = runIdOf(o);
    const actor = await this.actor(identity, o);
    const frameCheckId = o['frame_check_id'] === undefined ? undefined : text(o, 'frame_check_id');
    await this.driver.execute(runId, (_s, now) => ({
      type: C.ReviseGoalContract,
      goal_contract: o['goal_contract'],
      ...(frameCheckId ? { frame_check_id: frameCheckId } : {}),
      actor,
      now,
    }));
    return { run_id: runId };
  }

  /** `council.v1.frame-decline`: `{run_id, frame_check_id, reason, actor?}`; owner or chair. */
  async declineFrameChallenge(input: unknown, identity: Identity): Promise<{ run_id: string }> {
    const o = body(input);
    const runId = runIdOf(o);
    const actor = await this.actor(identity, o);
    const frameCheckId = text(o, 'frame_check_id');
    await this.driver.execute(runId, (_s, now) => ({
      type: C.DeclineFrameChallenge,
      frame_check_id: frameCheckId,
      reason: text(o, 'reason'),
      actor,
      now,
      // Frame check ids are the member's: prefix the event id with the run's, so it is unique in the log.
      event_id: `${runId}:${frameCheckId}:declined`,
    }));
    return { run_id: runId };
  }

  /** `council.v1.interrupt`: `{run_id, reason, actor?}`: the owner's stop (17.1), best checkpoint kept. */
  async interrupt(input: unknown, identity: Identity): Promise<{ run_id: string }> {
    const o = body(input);
    const runId = runIdOf(o);
    const actor = await this.actor(identity, o);
    await this.driver.execute(runId, (_s, now) => ({ type: C.InterruptRun, reason: text(o, 'reason'), actor, now }));
    return { run_id: runId };
  }

  /**
   * RFC 14.2: who starts a run proposes in its domain (the GoalContract's, `general` when it names
   * none), and another domain needs its own grant: FORBIDDEN naming `goal_contract.domain`.
   */
  private authorizeDomain(who: Identity, run: RunStarted): void {
    try {
      this.context.authorize(who, 'propose', runDomain(run.data.goal_contract));
    } catch (err) {
      if (err instanceof AcpError && err.code === 'FORBIDDEN') throw new AcpError('FORBIDDEN', err.message, 'goal_contract.domain');
      throw err;
    }
  }

  /**
   * With authentication required, every panel member is an active participant of the registry,
   * so no task is queued for an id nobody holds, nor for one deactivated (UNKNOWN_REFERENCE, `panel`).
   */
  private async requireRegisteredPanel(run: RunStarted): Promise<void> {
    if (!this.context.authRequired) return;
    const members = run.data.panel.map((m) => m.member_id);
    const states = await Promise.all(members.map((id) => this.directory.load(id)));
    const missing = members.flatMap((id, i) => (states[i].status === 'active' ? [] : [`${id} (${states[i].status})`]));
    if (missing.length > 0)
      throw new CouncilError('UNKNOWN_REFERENCE', `not active participants of the registry: ${missing.join(', ')}`, 'panel');
  }

  /** Who acts: the authenticated identity; an `actor` the body declares must be that identity (FORBIDDEN). */
  private async actor(identity: Identity, o: Record<string, unknown>): Promise<string> {
    return (await this.actorIdentity(identity, o)).participant_id;
  }

  private async actorIdentity(identity: Identity, o: Record<string, unknown>): Promise<Identity> {
    const declared = o['actor'];
    if (declared === undefined) return identity;
    if (typeof declared !== 'string' || declared.trim() === '')
      throw new CouncilError('SCHEMA_VIOLATION', 'must be a non-empty string', 'actor');
    return this.context.actAs(identity, declared, 'actor');
  }
}

/** The RunStarted a StartRun decided (always its first event). */
function started(events: CouncilEvent[]): RunStarted {
  const first = events.find((e): e is RunStarted => e.type === E.RunStarted);
  if (!first) throw new CouncilError('INTERNAL', 'StartRun decided no RunStarted');
  return first;
}
