import {
  AppendOptions,
  AppendResult,
  CategoryFilter,
  ConcurrencyError,
  EventHandler,
  EventLog,
  ExpectedVersion,
  LogEvent,
  ReadResult,
  StartFrom,
  StreamVersion,
  Subscription,
  categoryOf,
} from '@conclave/event-log';
import { NatsConnection } from 'nats';
import type { Attributes } from '@opentelemetry/api';
import { recordingSpan, traceMetadata, tracingOn } from './tracing';
import { ConclaveMetrics, METRICS, type Increment, type Observe } from './metrics';
import { ServiceConfig } from './service-config';

type AppendOutcome = 'ok' | 'duplicate' | 'conflict' | 'error';

/** One category's series, bound once: no label objects or label hashing per append. */
interface CategoryMeters {
  /** The attributes of the span event an append records, by its outcome. */
  readonly spanEvent: Record<AppendOutcome, Attributes>;
  readonly ok: Increment;
  readonly duplicate: Increment;
  readonly conflict: Increment;
  readonly error: Increment;
  readonly appended: Increment;
  readonly latency: Observe;
}

/**
 * The event log with its appends counted and timed (by stream category and result) and, with
 * tracing on, the active trace context (the request's or the timer's span) carried as the commit's
 * metadata, so a reactor or outbox that reads the events continues the same trace. An append makes
 * no span of its own: it is an `eventlog.append` event on the span it runs in (its category and
 * outcome; the span's duration covers it). A span per append cost about as much as all the
 * others together, for what an event records as well. Everything else passes straight through.
 * The append adds no promise of its own: the timing and counting hang on the inner append's promise.
 */
export class MeteredEventLog<E extends LogEvent = LogEvent> implements EventLog<E> {
  private readonly byCategory = new Map<string, CategoryMeters>();

  constructor(
    private readonly inner: EventLog<E>,
    private readonly metrics: ConclaveMetrics,
  ) {
    // Registered from the start, as before: a scrape shows the families before the first append.
    metrics.counter(METRICS.logAppends);
    metrics.counter(METRICS.logAppendedEvents);
    metrics.histogram(METRICS.logAppendDuration);
  }

  append(stream: string, events: readonly E[], expected: ExpectedVersion, options?: AppendOptions): Promise<AppendResult> {
    const category = safeCategory(stream);
    const m = this.metersOf(category);
    const started = performance.now();
    const span = recordingSpan();
    const trace = tracingOn() ? traceMetadata() : undefined;
    let pending: Promise<AppendResult>;
    try {
      pending = this.inner.append(stream, events, expected, trace ? { ...options, metadata: { ...options?.metadata, ...trace } } : options);
    } catch (err) {
      pending = Promise.reject(err);
    }
    return pending.then(
      (result) => {
        m.latency((performance.now() - started) / 1000);
        if (result.duplicate) m.duplicate();
        else {
          m.ok();
          m.appended(events.length);
          this.metrics.appended(category, events);
        }
        span?.addEvent('eventlog.append', m.spanEvent[result.duplicate ? 'duplicate' : 'ok']);
        return result;
      },
      (err: unknown) => {
        m.latency((performance.now() - started) / 1000);
        const outcome = err instanceof ConcurrencyError ? 'conflict' : 'error';
        m[outcome]();
        span?.addEvent('eventlog.append', m.spanEvent[outcome]);
        throw err;
      },
    );
  }

  private metersOf(category: string): CategoryMeters {
    let m = this.byCategory.get(category);
    if (!m) {
      const count = (result: string) => this.metrics.increment(METRICS.logAppends, { category, result });
      const spanEvent = (outcome: AppendOutcome) => ({ 'conclave.category': category, 'conclave.append.outcome': outcome });
      m = {
        spanEvent: { ok: spanEvent('ok'), duplicate: spanEvent('duplicate'), conflict: spanEvent('conflict'), error: spanEvent('error') },
        ok: count('ok'),
        duplicate: count('duplicate'),
        conflict: count('conflict'),
        error: count('error'),
        appended: this.metrics.increment(METRICS.logAppendedEvents, { category }),
        latency: this.metrics.observer(METRICS.logAppendDuration, { category }),
      };
      this.byCategory.set(category, m);
    }
    return m;
  }

  read(stream: string): Promise<ReadResult<E>> {
    return this.inner.read(stream);
  }

  version(stream: string): Promise<StreamVersion | 'no_stream'> {
    return this.inner.version(stream);
  }

  head(): Promise<StartFrom> {
    return this.inner.head();
  }

  subscribe(categories: CategoryFilter, from: StartFrom, handler: EventHandler<E>): Subscription {
    return this.inner.subscribe(categories, from, handler);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}

function safeCategory(stream: string): string {
  try {
    return categoryOf(stream);
  } catch {
    return 'invalid';
  }
}

/** The number a position starts with: a JetStream sequence (EventStoreDB: a commit position). */
export function positionNumber(position: StartFrom): number {
  if (position === 'start') return 0;
  const n = Number(/^\d+/.exec(position)?.[0]);
  return Number.isFinite(n) ? n : NaN;
}

const PROBE_TIMEOUT_MS = 1_000;

/**
 * The sequence of the newest event in some categories, asked of JetStream at scrape time (one
 * last-by-subject get per category). Undefined when the log is not JetStream or cannot answer:
 * a reactor's lag is then not reported rather than guessed.
 */
export function categoryHeadProbe(
  config: ServiceConfig,
  nc: NatsConnection | undefined,
): ((categories: CategoryFilter) => Promise<number | undefined>) | undefined {
  if (config.eventStoreUrl || !nc) return undefined;
  const subjects = (categories: CategoryFilter) =>
    categories === '*' ? [`${config.eventSubjectPrefix}.evt.>`] : categories.map((c) => `${config.eventSubjectPrefix}.evt.${c}.*`);
  return async (categories) => {
    const jsm = await nc.jetstreamManager();
    let newest = 0;
    for (const subject of subjects(categories)) {
      const seq = await withTimeout(
        jsm.streams.getMessage(config.eventStream, { last_by_subj: subject }).then(
          (m) => m.seq,
          (err: { code?: string; api_error?: { err_code?: number } }) => {
            // No event of that category yet.
            if (err?.api_error?.err_code === 10037 || err?.code === '404') return 0;
            throw err;
          },
        ),
      );
      newest = Math.max(newest, seq);
    }
    return newest;
  };
}

function withTimeout<T>(p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error('timed out')), PROBE_TIMEOUT_MS);
      timer.unref();
    }),
  ]).finally(() => clearTimeout(timer));
}
