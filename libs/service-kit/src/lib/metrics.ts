import { Inject, Injectable, Optional } from '@nestjs/common';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { SERVICE_CONFIG, SERVICE_NAME } from './tokens';
import type { ServiceConfig } from './service-config';

/** Request and append latencies: 1 ms to 10 s. */
export const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Decision delays (quorum to decision, expiry lateness): 10 ms to 5 min. */
export const DELAY_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

let processRegistry: Registry | undefined;

/**
 * Node's process metrics (CPU, memory, event loop lag, GC), collected once per process: the
 * end-to-end tests run several services in one process, and each would otherwise add its own.
 */
export function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
    // Gauges named like counters (promtool refuses them); the same counts stay, by type, in
    // nodejs_active_handles, nodejs_active_requests and nodejs_active_resources.
    for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'])
      processRegistry.removeSingleMetric(name);
  }
  return processRegistry;
}

type Family = Counter<string> | Gauge<string> | Histogram<string>;

interface Def<T extends 'counter' | 'gauge' | 'histogram'> {
  readonly type: T;
  readonly name: string;
  readonly help: string;
  readonly labels: readonly string[];
  readonly buckets?: readonly number[];
}
const counter = (name: string, help: string, labels: readonly string[] = []): Def<'counter'> => ({ type: 'counter', name, help, labels });
const gauge = (name: string, help: string, labels: readonly string[] = []): Def<'gauge'> => ({ type: 'gauge', name, help, labels });
const histogram = (name: string, help: string, labels: readonly string[], buckets: readonly number[]): Def<'histogram'> => ({
  type: 'histogram',
  name,
  help,
  labels,
  buckets,
});

/** Every Conclave series (names `conclave_<area>_<what>_<unit>`); docs/operations.md describes each. */
export const METRICS = {
  apiRequests: counter('conclave_api_requests_total', 'NATS API requests answered, by subject (without the prefix)', ['subject']),
  apiErrors: counter('conclave_api_errors_total', 'NATS API requests answered with an error, by subject and error code', [
    'subject',
    'code',
  ]),
  apiDuration: histogram(
    'conclave_api_request_duration_seconds',
    'Time from receiving a NATS API request to replying',
    ['subject'],
    LATENCY_BUCKETS,
  ),
  authRefusals: counter(
    'conclave_auth_refusals_total',
    'Commands refused by authentication or authorization, by subject, code and reason (the refused field)',
    ['subject', 'code', 'reason'],
  ),
  logAppends: counter(
    'conclave_eventlog_appends_total',
    'Event-log appends by stream category and result (ok, duplicate, conflict, error)',
    ['category', 'result'],
  ),
  logAppendedEvents: counter('conclave_eventlog_appended_events_total', 'Events written to the event log, by stream category', [
    'category',
  ]),
  logAppendDuration: histogram(
    'conclave_eventlog_append_duration_seconds',
    'Event-log append latency, by stream category',
    ['category'],
    LATENCY_BUCKETS,
  ),
  reactorPosition: gauge('conclave_reactor_position', 'Log position (JetStream sequence) of the last event the reactor handled', [
    'reactor',
  ]),
  reactorLag: gauge(
    'conclave_reactor_lag_events',
    'Log sequence numbers between the reactor position and the newest event of its categories (0 when caught up; JetStream log only)',
    ['reactor'],
  ),
  reactorHandled: counter('conclave_reactor_events_handled_total', 'Events the reactor handled since the process started', ['reactor']),
  reactorFollowing: gauge(
    'conclave_reactor_following',
    '1 while the reactor follows the log and has caught up, else 0 (a standby replica reports none)',
    ['reactor'],
  ),
  timerItems: gauge('conclave_timer_queue_items', 'Items in a timer queue (waiting or being retried)', ['queue']),
  timerDue: gauge('conclave_timer_queue_due_items', 'Timer-queue items whose time has come (due now or retrying)', ['queue']),
  outboxPublishDuration: histogram(
    'conclave_outbox_publish_duration_seconds',
    'Time from publishing an outbox message to its JetStream acknowledgement',
    ['outbox'],
    LATENCY_BUCKETS,
  ),
  outboxPublished: counter('conclave_outbox_published_messages_total', 'Outbox messages acknowledged by JetStream', ['outbox']),
  outboxPending: gauge('conclave_outbox_pending_messages', 'Outbox messages published and not yet acknowledged', ['outbox']),
  outboxRestarts: counter(
    'conclave_outbox_restarts_total',
    'Times an outbox resumed from its checkpoint after a failed publish or subscription',
    ['outbox'],
  ),
  cacheLookups: counter('conclave_proposal_cache_lookups_total', 'Proposal cache lookups by result (hit, miss)', ['result']),
  cacheEntries: gauge('conclave_proposal_cache_entries', 'Proposals whose folded state is cached in memory'),
  decisions: counter('conclave_acp_decisions_total', 'Decisions recorded (terminal proposal events), by outcome and trigger', [
    'outcome',
    'trigger',
  ]),
  quorumToDecision: histogram(
    'conclave_acp_quorum_to_decision_seconds',
    'From the event that met the quorum policy to the recorded resolution',
    [],
    DELAY_BUCKETS,
  ),
  expiryLateness: histogram(
    'conclave_acp_expiry_lateness_seconds',
    "From a proposal's expires_at to its recorded expiry (includes CONCLAVE_EXPIRY_GRACE_MS)",
    [],
    DELAY_BUCKETS,
  ),
  pendingProposals: gauge('conclave_acp_pending_proposals', 'Proposals not yet decided (pending), as the resolver folds them'),
  openEscalations: gauge('conclave_escalation_open_escalations', 'Escalations waiting for a human'),
  ladderSteps: counter(
    'conclave_escalation_ladder_steps_total',
    'Escalation steps recorded (routed, reminded, reassigned, signed_off, defaulted)',
    ['step'],
  ),
  councilRuns: counter('conclave_council_runs_total', 'Council runs that reached a state (started, or a terminal state)', ['state']),
  councilTaskFailures: counter('conclave_council_member_task_failures_total', 'Council member tasks that failed, by reason', ['reason']),
  councilTokens: counter('conclave_council_tokens_total', 'Tokens reported spent by council members'),
  councilCost: counter('conclave_council_cost_total', "Cost reported spent by council members, in the budget's unit"),
  auditChainEntries: gauge('conclave_audit_chain_entries', 'Entries in the audit hash chain (its head sequence)'),
} as const;

/** Observations a hot-path histogram series holds before handing them to prom-client. */
const OBSERVATIONS_BUFFERED = 256;

/** Adds to one series of a counter (default 1). */
export type Increment = (by?: number) => void;
/** Records one observation in one series of a histogram. */
export type Observe = (value: number) => void;

interface Source {
  labels: Record<string, string>;
  read: () => number | undefined | Promise<number | undefined>;
  dropped: boolean;
}

/**
 * One service's metrics (docs/operations.md lists them): a registry of its own with the label
 * `service`, so services sharing a process never mix. A family is registered on first use, so a
 * service exposes only the series it can move. Labels are bounded sets (subjects, codes,
 * categories, outcomes, reactor names), never ids.
 */
@Injectable()
export class ConclaveMetrics {
  readonly registry = new Registry();
  private readonly families = new Map<string, Family>();
  /** False with CONCLAVE_INSTRUMENTATION=off: the per-request, per-append and per-publish series are not recorded. */
  readonly enabled: boolean;

  constructor(
    @Inject(SERVICE_NAME) readonly service: string,
    @Optional() @Inject(SERVICE_CONFIG) config?: ServiceConfig,
  ) {
    this.enabled = config?.instrumentation !== 'off';
    this.registry.setDefaultLabels({ service });
    // From the start: process CPU is counted from the collector's creation.
    processMetrics();
  }

  /** The Prometheus text exposition: this service's series, then the process's. */
  async exposition(): Promise<string> {
    for (const update of this.totals) update();
    const own = await this.registry.metrics();
    return own + (await processMetrics().metrics());
  }

  counter(def: Def<'counter'>): Counter<string> {
    return this.family(def.name, () => new Counter({ name: def.name, help: def.help, labelNames: def.labels, registers: [this.registry] }));
  }

  gauge(def: Def<'gauge'>): Gauge<string> {
    return this.family(def.name, () => {
      const sources = new Map<string, Source>();
      this.gaugeSources.set(def.name, sources);
      return new Gauge({
        name: def.name,
        help: def.help,
        labelNames: def.labels,
        registers: [this.registry],
        async collect(this: Gauge<string>) {
          for (const [key, s] of sources) {
            if (s.dropped) {
              this.remove(s.labels);
              sources.delete(key);
              continue;
            }
            let value: number | undefined;
            try {
              value = await s.read();
            } catch {
              value = undefined;
            }
            // A source that cannot tell (the log unreachable) shows no sample rather than a stale one.
            if (value === undefined || Number.isNaN(value)) this.remove(s.labels);
            else this.set(s.labels, value);
          }
        },
      });
    });
  }

  histogram(def: Def<'histogram'>): Histogram<string> {
    return this.family(
      def.name,
      () =>
        new Histogram({
          name: def.name,
          help: def.help,
          labelNames: def.labels,
          buckets: [...(def.buckets ?? LATENCY_BUCKETS)],
          registers: [this.registry],
        }),
    );
  }

  /**
   * A gauge read at scrape time from what the service holds (a map's size, a queue's length);
   * several sources share one gauge under different label values. Returns a function that
   * stops reading it (a stopped reactor, a closed outbox).
   */
  observe(def: Def<'gauge'>, labels: Record<string, string>, read: () => number | undefined | Promise<number | undefined>): () => void {
    this.gauge(def);
    const key = JSON.stringify(labels);
    const source: Source = { labels, read, dropped: false };
    this.gaugeSources.get(def.name)?.set(key, source);
    return () => {
      source.dropped = true;
    };
  }

  /** A counter read at scrape time from a running total the service keeps (events handled). */
  observeTotal(def: Def<'counter'>, labels: Record<string, string>, read: () => number): void {
    const c = this.counter(def);
    c.inc(labels, 0);
    let last = 0;
    this.totals.push(() => {
      const now = read();
      if (now > last) c.inc(labels, now - last);
      last = now;
    });
  }

  /**
   * One series of a counter for a hot path (every request, every append): counted in a plain
   * number and added to the counter when scraped, so an increment hashes no labels (prom-client
   * hashes and validates the label object on every `inc`, bound children too).
   */
  increment(def: Def<'counter'>, labels: Record<string, string>): Increment {
    const c = this.counter(def);
    // The series exists at 0 from the start: a rate over a series that is absent is no rate, and
    // an alert on "nothing acknowledged" would never fire for an outbox stuck since its start.
    c.inc(labels, 0);
    let pending = 0;
    this.totals.push(() => {
      if (pending === 0) return;
      const by = pending;
      pending = 0;
      c.inc(labels, by);
    });
    return (by = 1) => {
      pending += by;
    };
  }

  /**
   * One series of a histogram for a hot path (every request, append, publish): observations are
   * kept in a small buffer and handed to prom-client together, when scraped or when the buffer
   * fills. prom-client validates and hashes the label object on every `observe`; on a path run
   * once per message, with the caches cold between messages, that was the largest cost of the
   * metrics (docs/benchmarks.md, run T), and in a batch it costs a fraction.
   */
  observer(def: Def<'histogram'>, labels: Record<string, string>): Observe {
    const h = this.histogram(def);
    const pending = new Float64Array(OBSERVATIONS_BUFFERED);
    let n = 0;
    const flush = () => {
      for (let i = 0; i < n; i++) h.observe(labels, pending[i]);
      n = 0;
    };
    this.totals.push(flush);
    return (value) => {
      // prom-client refuses a value that is not finite; buffered, it would throw at the scrape.
      if (!Number.isFinite(value)) return;
      pending[n++] = value;
      if (n === OBSERVATIONS_BUFFERED) flush();
    };
  }

  /**
   * Tells `listener` of the events this process appends to streams of `category` (a retried
   * append that added nothing is not told): for series counted from what a service records.
   */
  onAppended(category: string, listener: (events: readonly unknown[]) => void): void {
    this.appendListeners.push({ category, listener });
  }

  /** Called by the metered event log after each append that added events. */
  appended(category: string, events: readonly unknown[]): void {
    for (const l of this.appendListeners) if (l.category === category) l.listener(events);
  }

  private readonly appendListeners: { category: string; listener: (events: readonly unknown[]) => void }[] = [];
  private readonly gaugeSources = new Map<string, Map<string, Source>>();
  private readonly totals: (() => void)[] = [];

  private family<T extends Family>(name: string, make: () => T): T {
    let f = this.families.get(name);
    if (!f) {
      f = make();
      this.families.set(name, f);
    }
    return f as T;
  }
}
