import { Injectable } from '@nestjs/common';
import {
  COUNCIL_COMMAND_TYPES as C,
  CONCENTRATION_PERIODS,
  CalibrationReply,
  CapabilityEstimatesReply,
  ChairSelection,
  ConcentrationPeriod,
  ConcentrationReply,
  ConcentrationSubject,
  CouncilError,
  OutcomeRecordedReply,
  ScopedCapabilityEstimate,
  checkConfidenceProbabilities,
  parseCouncilPolicy,
  parseGoalContract,
  parsePanel,
  runDomain,
  selectChair,
} from '@conclave/council-protocol';
import { CommandContext, Identity, ProposalReadPolicy } from '@conclave/service-kit';
import { AcpBridge, BridgedDecision } from './acp-bridge';
import { EvaluationHistory, EvaluationProjection } from './evaluation-projection';
import { RunDriver } from './run-driver';

const RUN_ID = /^[A-Za-z0-9_]{1,100}$/;

function body(input: unknown): Record<string, unknown> {
  if (input === null || typeof input !== 'object' || Array.isArray(input))
    throw new CouncilError('SCHEMA_VIOLATION', 'the request body must be a JSON object');
  return input as Record<string, unknown>;
}

function optText(o: Record<string, unknown>, field: string): string | undefined {
  const v = o[field];
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || v.trim() === '') throw new CouncilError('SCHEMA_VIOLATION', 'must be a non-empty string', field);
  return v;
}

/** The estimates of the domains `shown` admits, sorted by scope (family, version, role, domain, tools). */
function estimateList(history: EvaluationHistory, shown: (domain: string) => boolean): ScopedCapabilityEstimate[] {
  const estimates = history.capabilities().estimates;
  return Object.keys(estimates)
    .sort()
    .map((k) => estimates[k])
    .filter((e) => shown(e.domain));
}

/**
 * The council:L4 and L5 use cases: the chair chosen from the capability projection at the start
 * of a run, structured outcomes, and the read models (estimates, calibration, concentration).
 */
@Injectable()
export class EvaluationCommands {
  constructor(
    private readonly projection: EvaluationProjection,
    private readonly driver: RunDriver,
    private readonly context: CommandContext,
    private readonly bridge: AcpBridge,
    private readonly reading: ProposalReadPolicy,
  ) {}

  /**
   * `council.v1.acp.propose`: `{run_id, quorum, expires_at?, quorum_policy?, caused_by?, actor?}`: the
   * decision owner (signed when authentication is on) asks for the run's decision to be posted
   * to ACP in the GoalContract's domain; the council service posts it as its own participant.
   */
  async acpPropose(input: unknown, identity: Identity): Promise<BridgedDecision> {
    const o = body(input);
    const runId = optText(o, 'run_id');
    if (runId === undefined || !RUN_ID.test(runId))
      throw new CouncilError('SCHEMA_VIOLATION', 'must be letters, digits and _ (it names the stream council-run-<id>)', 'run_id');
    const owner = await this.actorIdentity(identity, o);
    const { run_id: _run, actor: _actor, ...options } = o;
    return this.bridge.postForOwner(runId, owner, options);
  }

  /**
   * The chair for a run about to start, when its policy names a chair selection policy (and no
   * explicit chair_order): `selectChair` over the panel, the domain's capability estimates and
   * chair history, and the run's seed. Undefined otherwise; a malformed body is left to StartRun.
   */
  chairFor(o: Record<string, unknown>, seed: string): ChairSelection | undefined {
    let policy;
    try {
      policy = parseCouncilPolicy(o['policy'], 'policy');
    } catch {
      return undefined;
    }
    if (!policy.chair_selection || policy.chair_order.length > 0) return undefined;
    const goal = parseGoalContract(o['goal_contract'], 'goal_contract');
    const panel = parsePanel(o['panel'], 'panel');
    const domain = runDomain(goal);
    const history = this.projection.history;
    return selectChair(policy.chair_selection, {
      panel,
      domain,
      seed,
      capabilities: history.capabilities(policy.capability ?? {}),
      previous_chairs: history.previousChairs(domain),
    });
  }

  /**
   * `council.v1.outcome.record`: `{run_id, outcome: StructuredOutcome (without recorded_by), actor?}`;
   * the decision owner or an evaluator the run's policy names records it (signed when
   * authentication is on). Stored in the run's stream; published on COUNCIL_OUTCOMES from there.
   */
  async recordOutcome(input: unknown, identity: Identity): Promise<OutcomeRecordedReply> {
    const o = body(input);
    const runId = optText(o, 'run_id');
    if (runId === undefined || !RUN_ID.test(runId))
      throw new CouncilError('SCHEMA_VIOLATION', 'must be letters, digits and _ (it names the stream council-run-<id>)', 'run_id');
    const actor = await this.actor(identity, o);
    const state = await this.driver.execute(runId, (_s, now) => ({ type: C.RecordStructuredOutcome, outcome: o['outcome'], actor, now }));
    const outcome = o['outcome'] as { outcome_id?: unknown } | undefined;
    if (state.status === 'empty') throw new CouncilError('RUN_NOT_FOUND', `no run ${runId}`, 'run_id');
    return { run_id: runId, outcome_id: String(outcome?.outcome_id) };
  }

  /**
   * `council.v1.capability.estimates`: `{domain?, rebuild?}` → the estimates (rebuilt from the log
   * when asked) of the domains the caller may read (`readable`). A rebuild folds every run's
   * events again: administrators only, or any caller could keep the service busy reading its
   * whole log; the role is no read right, so an administrator sees only its granted domains.
   */
  async estimates(input: unknown, identity: Identity): Promise<CapabilityEstimatesReply> {
    const o = body(input ?? {});
    const rebuild = o['rebuild'] === true;
    if (rebuild) this.context.requireRole(identity, 'administrator');
    const domains = this.readable(identity, optText(o, 'domain'));
    const history = rebuild ? await this.projection.rebuild() : this.projection.history;
    return { estimates: estimateList(history, domains), ended_runs: history.inputs(domains).length, rebuilt: rebuild };
  }

  /**
   * `council.v1.capability.calibration`: `{domain?, confidence_probabilities?}` → Brier, log loss,
   * reliability per member × role × domain, of the domains the caller may read.
   */
  async calibration(input: unknown, identity: Identity): Promise<CalibrationReply> {
    const o = body(input ?? {});
    const domains = this.readable(identity, optText(o, 'domain'));
    const p = o['confidence_probabilities'];
    const probabilities = p === undefined ? undefined : checkConfidenceProbabilities(body(p) as never);
    const history = this.projection.history;
    return { calibration: history.calibration(probabilities, domains), forecasts: history.forecasts(probabilities, domains).length };
  }

  /**
   * `council.v1.capability.concentration`: `{domain?, period?, subject?}` → the audit per
   * domain × period (16.7), of the domains the caller may read (cells and skipped runs alike).
   */
  async concentration(input: unknown, identity: Identity): Promise<ConcentrationReply> {
    const o = body(input ?? {});
    const domains = this.readable(identity, optText(o, 'domain'));
    const period = optText(o, 'period') ?? 'month';
    if (!(CONCENTRATION_PERIODS as readonly string[]).includes(period))
      throw new CouncilError('SCHEMA_VIOLATION', `must be one of ${CONCENTRATION_PERIODS.join(' | ')}`, 'period');
    const subject = optText(o, 'subject') ?? 'member';
    if (subject !== 'member' && subject !== 'model_family')
      throw new CouncilError('SCHEMA_VIOLATION', 'must be member | model_family', 'subject');
    return {
      audit: this.projection.history.concentration(
        { period: period as ConcentrationPeriod, subject: subject as ConcentrationSubject },
        domains,
      ),
    };
  }

  /**
   * The runs a read model may show `reader`, by ACP's rule for reads (RFC 14.2, ProposalReadPolicy):
   * a domain asked for needs a grant on it (else FORBIDDEN, field `domain`); without one, every
   * domain the reader may read. Each run's own domain is checked too, so that what the filter
   * returns, not only what was asked, is authorized, and the reply's counts cover the same runs.
   */
  private readable(reader: Identity, domain: string | undefined): (domain: string) => boolean {
    if (domain !== undefined) this.reading.requireDomain(reader, domain);
    return (d) => (domain === undefined || d === domain) && this.reading.mayReadDomain(reader, d);
  }

  private async actor(identity: Identity, o: Record<string, unknown>): Promise<string> {
    return (await this.actorIdentity(identity, o)).participant_id;
  }

  /** Who acts: the authenticated identity; an `actor` the body declares must be it (FORBIDDEN). */
  private async actorIdentity(identity: Identity, o: Record<string, unknown>): Promise<Identity> {
    const declared = o['actor'];
    if (declared === undefined) return identity;
    if (typeof declared !== 'string' || declared.trim() === '')
      throw new CouncilError('SCHEMA_VIOLATION', 'must be a non-empty string', 'actor');
    return this.context.actAs(identity, declared, 'actor');
  }
}
