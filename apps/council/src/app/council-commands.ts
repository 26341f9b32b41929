import { Inject, Injectable } from '@nestjs/common';
import {
  COUNCIL_COMMAND_TYPES as C,
  CouncilError,
  EMPTY_RUN,
  RunRecord,
  buildRunRecord,
  decide,
  foldRun,
} from '@conclave/council-protocol';
import { ConcurrencyError } from '@conclave/event-log';
import { CommandContext, IDS, IdGenerator } from '@conclave/service-kit';
import { RunDriver } from './run-driver';
import { RunRepository } from './run-repository';

/** Run ids are stream ids (`council-run-<id>`): letters, digits and `_` (a ULID by default). */
const RUN_ID = /^[A-Za-z0-9_]{1,100}$/;

function body(input: unknown): Record<string, unknown> {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) throw new CouncilError('SCHEMA_VIOLATION', 'the request body must be a JSON object');
  return input as Record<string, unknown>;
}

function text(o: Record<string, unknown>, field: string): string {
  const v = o[field];
  if (typeof v !== 'string' || v.trim() === '') throw new CouncilError('SCHEMA_VIOLATION', 'must be a non-empty string', field);
  return v;
}

function runIdOf(o: Record<string, unknown>): string {
  const id = text(o, 'run_id');
  if (!RUN_ID.test(id)) throw new CouncilError('SCHEMA_VIOLATION', 'must be letters, digits and _ (it names the stream council-run-<id>)', 'run_id');
  return id;
}

/**
 * The use cases behind the Council subjects. Each parses the body, stamps time, ids and the
 * actor at the edge, and runs the pure decider; a broken rule is a CouncilError, mapped to the
 * reply by the controller.
 */
@Injectable()
export class CouncilCommands {
  constructor(
    private readonly repo: RunRepository,
    private readonly driver: RunDriver,
    private readonly context: CommandContext,
    @Inject(IDS) private readonly ids: IdGenerator,
  ) {}

  /** `council.v1.start`: `{goal_contract, panel, policy?, actor?, run_id?}` → `{run_id}`. */
  async start(input: unknown): Promise<{ run_id: string }> {
    const o = body(input);
    const run_id = o['run_id'] === undefined ? this.ids.next() : runIdOf(o);
    const owner = (o['goal_contract'] as Record<string, unknown> | undefined)?.['decision_owner'];
    const declared = typeof o['actor'] === 'string' ? o['actor'] : typeof owner === 'string' ? owner : 'unknown';
    const meta = this.context.metadata(declared);
    const events = decide(
      { type: C.StartRun, run_id, goal_contract: o['goal_contract'], panel: o['panel'], policy: o['policy'], seed: this.ids.next(), actor: meta.actor, now: meta.now },
      EMPTY_RUN,
    );
    try {
      const result = await this.repo.append(run_id, events, 'no_stream');
      const loaded = result.duplicate ? await this.repo.load(run_id) : { state: foldRun(events), version: result.version };
      await this.driver.adopt(run_id, loaded);
    } catch (err) {
      if (err instanceof ConcurrencyError) throw new CouncilError('RUN_ALREADY_STARTED', `run ${run_id} already started`, 'run_id');
      throw err;
    }
    return { run_id };
  }

  /** `council.v1.get`: `{run_id}` → `{run_record}` (with the anonymisation mapping: an admin subject). */
  async get(input: unknown): Promise<{ run_record: RunRecord }> {
    const runId = runIdOf(body(input));
    const state = this.driver.stateOf(runId) ?? (await this.repo.load(runId)).state;
    if (state.status === 'empty') throw new CouncilError('RUN_NOT_FOUND', `no run ${runId}`, 'run_id');
    return { run_record: buildRunRecord(state) };
  }

  /** `council.v1.outcome`: `{run_id, outcome: {outcome_id, observed_at, summary, source, evidence_refs?}, actor}`. */
  async outcome(input: unknown): Promise<{ run_id: string }> {
    const o = body(input);
    const runId = runIdOf(o);
    const actor = this.context.metadata(text(o, 'actor')).actor;
    await this.driver.execute(runId, (_s, now) => ({ type: C.RecordOutcome, outcome: o['outcome'], actor, now }));
    return { run_id: runId };
  }

  /** `council.v1.goal-contract`: the owner (or chair) revises the GoalContract, e.g. accepting a frame challenge. */
  async reviseGoalContract(input: unknown): Promise<{ run_id: string }> {
    const o = body(input);
    const runId = runIdOf(o);
    const actor = this.context.metadata(text(o, 'actor')).actor;
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

  /** `council.v1.frame-decline`: `{run_id, frame_check_id, reason, actor}`. */
  async declineFrameChallenge(input: unknown): Promise<{ run_id: string }> {
    const o = body(input);
    const runId = runIdOf(o);
    const actor = this.context.metadata(text(o, 'actor')).actor;
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

  /** `council.v1.interrupt`: `{run_id, reason, actor}`: the human stop (17.1), best checkpoint kept. */
  async interrupt(input: unknown): Promise<{ run_id: string }> {
    const o = body(input);
    const runId = runIdOf(o);
    const actor = this.context.metadata(text(o, 'actor')).actor;
    await this.driver.execute(runId, (_s, now) => ({ type: C.InterruptRun, reason: text(o, 'reason'), actor, now }));
    return { run_id: runId };
  }
}
