import { DynamicModule } from '@nestjs/common';
import { AsyncLocalStorage } from 'node:async_hooks';
import { Writable } from 'node:stream';
import { LoggerModule } from 'nestjs-pino';
import type { Level } from 'pino';

/**
 * What a log line is about: the ids of the command or event being handled. Ids only: never a
 * payload, a body or a credential.
 */
export interface LogFields {
  proposal_id?: string;
  run_id?: string;
  command_id?: string;
  trace_id?: string;
  subject?: string;
  reactor?: string;
}

/**
 * What async work carries: the log fields, and (with tracing on) the OpenTelemetry context, in one
 * AsyncLocalStorage: each one in use adds a store to copy onto every promise and callback the
 * process creates, sampled trace or not. The two are kept apart as before: entering a log context
 * keeps the trace context, entering a trace context keeps the log fields.
 */
interface Frame {
  readonly log?: LogFields;
  readonly trace?: unknown;
}
const frames = new AsyncLocalStorage<Frame>();
const ID = /^[A-Za-z0-9._:-]{1,80}$/;

/** The fields of the command or event being handled here, if any. */
export function logFields(): LogFields {
  return frames.getStore()?.log ?? {};
}

/**
 * Runs `fn` with these fields on every log line it makes. Inside a context already (a request),
 * the fields are added to it, so lines logged after `fn` by the same request carry them too.
 */
export function withLogFields<T>(fields: LogFields, fn: () => T): T {
  const clean = cleanFields(fields);
  const current = frames.getStore();
  if (current?.log) {
    Object.assign(current.log, clean);
    return fn();
  }
  return frames.run({ log: clean, trace: current?.trace }, fn);
}

/**
 * Runs `fn` in a context of its own (one request, one event), starting from these fields; in the
 * trace context given (an event's, tracing.ts), else the current one. One frame for both: a
 * reactor enters it for every event.
 */
export function inLogContext<T>(fields: LogFields, fn: () => T, trace?: unknown): T {
  return frames.run({ log: cleanFields(fields), trace: trace ?? frames.getStore()?.trace }, fn);
}

/** The trace context stored beside the log fields (tracing.ts's context manager). */
export function storedTraceContext(): unknown {
  return frames.getStore()?.trace;
}

/** Runs `fn` with this trace context, the log fields as they are (tracing.ts's context manager). */
export function withTraceContext<T>(trace: unknown, fn: () => T): T {
  return frames.run({ log: frames.getStore()?.log, trace }, fn);
}

/** The id a body names under `key`, when it looks like an id (a client could send anything). */
export function idIn(body: unknown, key: string): string | undefined {
  const v = body && typeof body === 'object' ? (body as Record<string, unknown>)[key] : undefined;
  return typeof v === 'string' && ID.test(v) ? v : undefined;
}

function cleanFields(fields: LogFields): LogFields {
  const out: LogFields = {};
  for (const [k, v] of Object.entries(fields) as [keyof LogFields, string | undefined][])
    if (typeof v === 'string' && ID.test(v)) out[k] = v;
  return out;
}

const PINO_LEVEL: Record<string, Level> = { error: 'error', warn: 'warn', log: 'info', info: 'info', debug: 'debug', verbose: 'trace' };

/** Whether LOG_LEVEL lets debug lines through (what is not written need not be formatted). */
export function logsDebug(logLevel: string): boolean {
  const level = PINO_LEVEL[logLevel] ?? 'info';
  return level === 'debug' || level === 'trace';
}
const PROBES = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * Logs through pino (nestjs-pino): JSON lines with LOG_FORMAT=json (containers), one readable
 * line per record otherwise (`npm run up`). Every line carries `service` and the fields of
 * the command or event in hand (`logFields`). HTTP requests are logged without headers or query
 * strings (bearer tokens); probes and scrapes are not logged. nestjs-pino keeps one root logger
 * per process: where several services share a process (the end-to-end tests), the first one's
 * name and destination apply to all.
 */
export function loggingModule(
  service: string,
  config: { logFormat: string; logLevel: string },
  destination?: NodeJS.WritableStream,
): DynamicModule {
  const stream = destination ?? (config.logFormat === 'json' ? process.stdout : textLines(process.stdout));
  return LoggerModule.forRoot({
    pinoHttp: [
      {
        level: PINO_LEVEL[config.logLevel] ?? 'info',
        base: { service },
        messageKey: 'msg',
        timestamp: () => `,"time":"${new Date().toISOString()}"`,
        mixin: () => ({ ...logFields() }),
        autoLogging: { ignore: (req) => PROBES.has((req.url ?? '').split('?')[0]) },
        quietReqLogger: true,
        serializers: {
          req: (req: { method?: string; url?: string }) => ({ method: req.method, path: (req.url ?? '').split('?')[0] }),
          res: (res: { statusCode?: number }) => ({ status: res.statusCode }),
        },
        redact: {
          paths: ['authorization', '*.authorization', 'headers', '*.headers', 'password', '*.password', 'token', '*.token'],
          remove: true,
        },
      },
      stream,
    ],
  });
}

const LEVEL_NAMES: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
const SHOWN_FIRST = new Set(['level', 'time', 'pid', 'hostname', 'service', 'context', 'msg', 'err']);

/** JSON lines in, `HH:MM:SS.mmm LEVEL service [context] message key=value...` out. */
export function textLines(out: NodeJS.WritableStream): Writable {
  let partial = '';
  return new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      const text = partial + chunk.toString();
      const lines = text.split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) if (line) out.write(formatLine(line) + '\n');
      done();
    },
  });
}

export function formatLine(line: string): string {
  let r: Record<string, unknown>;
  try {
    r = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line;
  }
  const time = typeof r['time'] === 'string' ? r['time'].slice(11, 23) : '';
  const level = LEVEL_NAMES[r['level'] as number] ?? String(r['level']);
  const extras = Object.entries(r)
    .filter(([k]) => !SHOWN_FIRST.has(k))
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`);
  const err = r['err'] as { stack?: string; message?: string } | undefined;
  return (
    [time, level.padEnd(5), r['service'], r['context'] ? `[${r['context']}]` : '', r['msg'], ...extras]
      .filter((p) => p !== '' && p !== undefined)
      .join(' ') + (err ? `\n${err.stack ?? err.message}` : '')
  );
}
