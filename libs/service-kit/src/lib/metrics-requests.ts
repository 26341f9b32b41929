import { Logger } from '@nestjs/common';
import type { PlainJsonNatsServerOptions } from '@conclave/messaging';
import { idIn, inLogContext, logsDebug } from './logging';
import { ConclaveMetrics, METRICS, type Increment, type Observe } from './metrics';
import type { ServiceConfig } from './service-config';
import { activeTraceId, tracingObserver } from './tracing';

export type RequestObserver = NonNullable<PlainJsonNatsServerOptions['observer']>;
type ObservedRequest = Parameters<NonNullable<RequestObserver['replied']>>[0];

const REFUSALS = new Set(['UNAUTHENTICATED', 'FORBIDDEN']);
const REASON = /^[a-z_.]{1,40}$/;

/**
 * Counts and times every NATS API request by subject (the pattern, without the deployment's
 * prefix), errors by code, and authentication/authorization refusals by the field refused.
 */
export function metricsObserver(metrics: ConclaveMetrics): RequestObserver {
  const errors = metrics.counter(METRICS.apiErrors);
  const refusals = metrics.counter(METRICS.authRefusals);
  metrics.counter(METRICS.apiRequests);
  metrics.histogram(METRICS.apiDuration);
  // Per subject (the handlers' patterns, a fixed set): the series bound once.
  const bySubject = new Map<string, { requests: Increment; duration: Observe }>();
  const seriesOf = (subject: string) => {
    let s = bySubject.get(subject);
    if (!s) {
      s = { requests: metrics.increment(METRICS.apiRequests, { subject }), duration: metrics.observer(METRICS.apiDuration, { subject }) };
      bySubject.set(subject, s);
    }
    return s;
  };
  return {
    replied(request, reply, seconds) {
      const subject = request.pattern;
      const s = seriesOf(subject);
      s.requests();
      s.duration(seconds);
      const error = errorOf(reply);
      if (!error) return;
      errors.inc({ subject, code: error.code });
      if (REFUSALS.has(error.code))
        refusals.inc({ subject, code: error.code, reason: error.field && REASON.test(error.field) ? error.field : 'none' });
    },
  };
}

/**
 * Each request's handling in a log context of its own (the subject, the ids its body names, the
 * trace id of its `traceparent`), closed by a debug line with its result: the command log. With
 * debug lines off (`debug: false`) the handling runs in its context and nothing else: no clock
 * read, no line formatted, no extra promise per request.
 */
export function logContextObserver(options: { debug: boolean } = { debug: true }): RequestObserver {
  const logger = new Logger('Command');
  return {
    around(request, handle) {
      const fields = {
        subject: request.pattern,
        proposal_id: idIn(request.body, 'proposal_id'),
        run_id: idIn(request.body, 'run_id'),
        trace_id: activeTraceId() ?? traceIdOf(request),
      };
      if (!options.debug) return inLogContext(fields, handle);
      const started = performance.now();
      const done = (result: string) => logger.debug(`${request.pattern} ${result} in ${(performance.now() - started).toFixed(1)} ms`);
      return inLogContext(fields, async () => {
        try {
          const reply = await handle();
          done(errorOf(reply)?.code ?? 'ok');
          return reply;
        } catch (err) {
          const code = (err as { code?: unknown })?.code;
          done(typeof code === 'string' && code ? code : 'failed');
          throw err;
        }
      });
    },
  };
}

/** The trace id of a W3C `traceparent` header, when the request carries one. */
export function traceIdOf(request: Pick<ObservedRequest, 'headers'>): string | undefined {
  const header = request.headers?.get('traceparent');
  const m = header ? /^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/.exec(header) : null;
  return m ? m[1] : undefined;
}

/**
 * What every request of a service passes through: with instrumentation on, its metrics, its span
 * and its log context; off, its log context only. Given to the command server, and to any other
 * edge that takes requests (the council's member answers).
 */
export function requestObserverFor(config: Pick<ServiceConfig, 'instrumentation' | 'logLevel'>, metrics: ConclaveMetrics): RequestObserver {
  const logContext = logContextObserver({ debug: logsDebug(config.logLevel) });
  return config.instrumentation !== 'off' ? combineObservers(metricsObserver(metrics), tracingObserver(), logContext) : logContext;
}

/** Observers one inside the other: the first one's `around` outermost. */
export function combineObservers(...observers: RequestObserver[]): RequestObserver {
  const arounds = observers.filter((o) => o.around);
  const replies = observers.filter((o) => o.replied);
  function aroundFrom<T>(i: number, request: ObservedRequest, handle: () => Promise<T>): Promise<T> {
    const o = arounds[i];
    return o?.around ? o.around(request, () => aroundFrom(i + 1, request, handle)) : handle();
  }
  return {
    around<T>(request: ObservedRequest, handle: () => Promise<T>): Promise<T> {
      return aroundFrom(0, request, handle);
    },
    replied(request, reply, seconds) {
      for (const o of replies) o.replied?.(request, reply, seconds);
    },
  };
}

function errorOf(reply: unknown): { code: string; field?: string } | undefined {
  if (!reply || typeof reply !== 'object' || (reply as { ok?: unknown }).ok !== false) return undefined;
  const error = (reply as { error?: { code?: unknown; field?: unknown } }).error;
  if (!error || typeof error.code !== 'string') return undefined;
  return { code: error.code, field: typeof error.field === 'string' ? error.field : undefined };
}
