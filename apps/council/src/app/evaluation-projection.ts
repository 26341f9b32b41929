import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import {
  COUNCIL_EVENT_TYPES as E,
  CalibrationScope,
  CapabilityOptions,
  CapabilityProjection,
  CapabilityRunInput,
  ConcentrationAudit,
  ConcentrationOptions,
  ConfidenceProbabilities,
  CouncilEvent,
  CouncilRunState,
  EMPTY_RUN,
  Forecast,
  StructuredOutcome,
  buildRunRecord,
  calibrationReport,
  chairOf,
  concentrationAudit,
  evolveRunInPlace,
  projectCapabilities,
  runDomain,
  runForecasts,
} from '@conclave/council-protocol';
import type { EventLog, StoredEvent } from '@conclave/event-log';
import { EVENT_LOG, Reactor, Reactors } from '@conclave/service-kit';
import { COUNCIL_RUN_CATEGORY } from './run-index';

/** The folded history the evaluation read models derive from: every run, and the order runs ended in. */
interface EvaluationState {
  runs: Record<string, CouncilRunState>;
  /** Run ids in the order their RunTerminated is in the log. */
  ended: string[];
}

/**
 * Which runs a read covers, by their domain: one domain exactly (no subtree), those a predicate
 * admits (what a reader may read), or, undefined, all.
 */
export type DomainScope = string | ((domain: string) => boolean);

/**
 * The evaluation layer's read model (council:L4 and L5, spec 15.3, 15.4, 16.7): a reactor over the
 * `council-run` category that folds every run, so that the capability projection (model family ×
 * version × role × domain × tools), each domain's chair history, calibration and the concentration
 * audit are pure functions of the log. The estimates are `projectCapabilities` over the ended
 * runs and their outcomes, which orders observations totally: a rebuild from the log, in any
 * replica, gives exactly the same numbers. Snapshot-capable, like the other reactors.
 */
export class EvaluationHistory {
  private state: EvaluationState = { runs: {}, ended: [] };
  private version = 0;
  private cache = new Map<string, { version: number; value: unknown }>();

  apply({ event }: StoredEvent<CouncilEvent>): void {
    const runId = event.correlation_id;
    const before = this.state.runs[runId] ?? EMPTY_RUN;
    const after = evolveRunInPlace(before, event);
    this.state.runs[runId] = after;
    if (event.type === E.RunTerminated && before.status === 'running' && after.status === 'terminated') this.state.ended.push(runId);
    // Only what changes an ended run's record changes the read models.
    if (after.status === 'terminated') this.version++;
  }

  take(): EvaluationState {
    return this.state;
  }

  restore(saved: unknown): void {
    this.state = saved as EvaluationState;
    this.version++;
  }

  /** Ended runs with their domain and structured outcomes, in the order they ended. */
  inputs(domains?: DomainScope): CapabilityRunInput[] {
    // Keys apart from any domain name: `{domain: "*"}` must not be served the unfiltered list.
    const all = this.memo('inputs', () =>
      this.state.ended.flatMap((id) => {
        const run = this.state.runs[id];
        if (run.status !== 'terminated') return [];
        const outcomes = run.outcomes.map((o) => o.structured).filter((o): o is StructuredOutcome => o !== undefined);
        return [{ record: buildRunRecord(run), domain: runDomain(run.goal_contract), outcomes }];
      }),
    );
    if (domains === undefined) return all;
    if (typeof domains === 'string') return this.memo(`inputs=${domains}`, () => all.filter((r) => r.domain === domains));
    return all.filter((r) => domains(r.domain));
  }

  /** The capability projection under `options` (a run's policy may set its own prior and weights). */
  capabilities(options: Partial<CapabilityOptions> = {}): CapabilityProjection {
    return this.memo(`capabilities:${JSON.stringify(options)}`, () => projectCapabilities(this.inputs(), options));
  }

  /** Who chaired the domain's ended runs, oldest first (rotation reads it). */
  previousChairs(domain: string): string[] {
    return this.inputs(domain)
      .map((r) => chairOf(r.record))
      .filter((c): c is string => c !== null);
  }

  forecasts(probabilities?: ConfidenceProbabilities, domains?: DomainScope): Forecast[] {
    return this.inputs(domains).flatMap((r) => runForecasts(r, probabilities).forecasts);
  }

  calibration(probabilities?: ConfidenceProbabilities, domains?: DomainScope): CalibrationScope[] {
    return calibrationReport(this.forecasts(probabilities, domains));
  }

  concentration(options: Partial<ConcentrationOptions> = {}, domains?: DomainScope): ConcentrationAudit {
    return concentrationAudit(this.inputs(domains), options);
  }

  private memo<T>(key: string, compute: () => T): T {
    const hit = this.cache.get(key);
    if (hit && hit.version === this.version) return hit.value as T;
    const value = compute();
    this.cache.set(key, { version: this.version, value });
    return value;
  }
}

/** The live history, kept by a snapshot-capable reactor; `rebuild` folds the log again from its start. */
@Injectable()
export class EvaluationProjection implements OnApplicationBootstrap, OnApplicationShutdown {
  readonly history = new EvaluationHistory();
  private readonly reactor: Reactor<CouncilEvent>;

  constructor(
    reactors: Reactors,
    @Inject(EVENT_LOG) private readonly log: EventLog,
  ) {
    this.reactor = reactors.create<CouncilEvent>({
      name: 'council-evaluation',
      categories: [COUNCIL_RUN_CATEGORY],
      apply: (e) => this.history.apply(e),
      snapshot: { schema: 1, take: () => this.history.take(), restore: (s) => this.history.restore(s) },
    });
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.reactor.start('start');
  }

  async onApplicationShutdown(): Promise<void> {
    await this.reactor.stop();
  }

  /** A fresh fold of the whole log, without a snapshot: what any replica would rebuild. */
  async rebuild(): Promise<EvaluationHistory> {
    const fresh = new EvaluationHistory();
    const sub = (this.log as EventLog<CouncilEvent>).subscribe([COUNCIL_RUN_CATEGORY], 'start', (e) => fresh.apply(e));
    try {
      await sub.caughtUp;
    } finally {
      await sub.stop();
    }
    return fresh;
  }
}
