import { Logger } from '@nestjs/common';
import { BaseRpcContext, CustomTransportStrategy, Server } from '@nestjs/microservices';
import { AcpError } from '@conclave/acp-protocol';
import { MsgHdrs, NatsConnection, Msg, Subscription } from 'nats';
import { isObservable, lastValueFrom } from 'rxjs';
import { errorReply } from './reply';
import { readRequestBody } from './request-body';
import { isReplyInbox } from './inbox';

/**
 * What a handler receives besides the parsed body: the subject, the headers and the exact
 * bytes (signatures are verified over those bytes, never over a re-serialisation).
 */
export class PlainNatsContext extends BaseRpcContext<[string, Uint8Array, MsgHdrs | undefined, number?]> {
  getSubject(): string {
    return this.args[0];
  }
  getRawBody(): Uint8Array {
    return this.args[1];
  }
  getHeaders(): MsgHdrs | undefined {
    return this.args[2];
  }
  /** The largest reply this connection can carry (the server's max_payload): list handlers page by it. */
  getMaxReplyBytes(): number {
    return this.args[3] ?? DEFAULT_MAX_REPLY_BYTES;
  }
}

/** The NATS server's default max_payload, used when the connection has not reported its own. */
export const DEFAULT_MAX_REPLY_BYTES = 1024 * 1024;

export interface PlainJsonNatsServerOptions {
  /** A connection owned by the application (shared with the event log and publishers). */
  connection: NatsConnection;
  /** Subject prefix: a handler for pattern `v1.propose` serves `<prefix>.v1.propose`. */
  subjectPrefix: string;
  /** Queue group shared by all replicas of the service. */
  queue: string;
  /** Largest accepted request body; larger ones get PAYLOAD_TOO_LARGE and touch nothing. */
  maxPayloadBytes: number;
  /** Metrics, log context and traces; nothing it does changes a reply. */
  observer?: RequestObserver;
}

/** One request as an observer sees it: `body` once it parsed. */
export interface ObservedRequest {
  readonly pattern: string;
  readonly subject: string;
  readonly headers: MsgHdrs | undefined;
  readonly body?: unknown;
}

/** Told of every request the server answers. */
export interface RequestObserver {
  /** Runs the handler (a log context, a span around it); must return what `handle` returns. */
  around?<T>(request: ObservedRequest, handle: () => Promise<T>): Promise<T>;
  /** The reply sent (or that would have been, for a request without a reply subject) and the time taken. */
  replied?(request: ObservedRequest, reply: unknown, seconds: number): void;
}

/**
 * A NestJS transport strategy that speaks the plain JSON of DESIGN.md section 5: the request
 * body is the command object and the reply body is the reply object. NestJS's built-in NATS
 * transport wraps both in its own `{pattern, data, id}` envelope, which agents in other
 * languages should never have to know about.
 *
 * Handlers are `@MessagePattern('v1.propose')` methods that receive the parsed body and a
 * `PlainNatsContext`; they return the reply object. An `AcpError` thrown anywhere becomes
 * `{ok: false, error}`; anything else becomes INTERNAL and is logged with its cause. Every reply
 * is size-checked against the connection's max_payload (a reply too big to send becomes
 * PAYLOAD_TOO_LARGE) and no failure of a handler or of the reply escapes to the process.
 */
export class PlainJsonNatsServer extends Server implements CustomTransportStrategy {
  private readonly subscriptions: Subscription[] = [];
  private readonly inFlight = new Set<Promise<void>>();
  protected override readonly logger = new Logger(PlainJsonNatsServer.name);
  private readonly encoder = new TextEncoder();

  constructor(private readonly options: PlainJsonNatsServerOptions) {
    super();
  }

  listen(callback: (...optionalParams: unknown[]) => void): void {
    try {
      for (const pattern of this.messageHandlers.keys()) {
        const subject = `${this.options.subjectPrefix}.${pattern}`;
        const sub = this.options.connection.subscribe(subject, {
          queue: this.options.queue,
          callback: (err, msg) => {
            if (err) {
              this.logger.error(`subscription ${subject} failed: ${err.message}`);
              return;
            }
            const work = this.handle(pattern, msg);
            this.inFlight.add(work);
            void work.finally(() => this.inFlight.delete(work));
          },
        });
        this.subscriptions.push(sub);
      }
      callback();
    } catch (err) {
      callback(err);
    }
  }

  /** Graceful drain: stop taking requests, finish the ones in flight. */
  async close(): Promise<void> {
    await Promise.all(this.subscriptions.map((s) => s.drain().catch(() => undefined)));
    await Promise.all([...this.inFlight]);
  }

  on(): never {
    throw new Error('PlainJsonNatsServer does not expose events');
  }

  unwrap<T>(): T {
    return this.options.connection as T;
  }

  private async handle(pattern: string, msg: Msg): Promise<void> {
    const started = performance.now();
    let reply: unknown;
    try {
      reply = await this.replyFor(pattern, msg);
      if (msg.reply) this.respond(msg, reply);
    } catch (err) {
      // Never let one request take the process down: log, and answer INTERNAL if we still can.
      this.logger.error(`request on ${msg.subject} failed outside its handler`, (err as Error)?.stack);
      reply = errorReply(new AcpError('INTERNAL', 'internal error; the command was not applied'));
      if (msg.reply) this.respond(msg, reply);
    }
    try {
      this.options.observer?.replied?.(
        { pattern, subject: msg.subject, headers: msg.headers },
        reply,
        (performance.now() - started) / 1000,
      );
    } catch (err) {
      this.logger.warn(`request observer failed: ${(err as Error)?.message}`);
    }
  }

  /** The reply, or PAYLOAD_TOO_LARGE when it would not fit the connection's max_payload. */
  private respond(msg: Msg, reply: unknown): void {
    if (!isReplyInbox(msg.reply)) {
      // Applied, not answered: see isReplyInbox.
      this.logger.warn(`not replying on ${msg.subject}: the reply subject is not an inbox`);
      return;
    }
    let bytes: Uint8Array;
    try {
      bytes = this.encoder.encode(JSON.stringify(reply));
    } catch (err) {
      this.logger.error(`reply on ${msg.subject} cannot be encoded: ${(err as Error)?.message}`);
      bytes = this.encoder.encode(JSON.stringify(errorReply(new AcpError('INTERNAL', 'internal error; the reply could not be encoded'))));
    }
    const limit = this.maxReplyBytes();
    if (bytes.length > limit) {
      bytes = this.encoder.encode(
        JSON.stringify(
          errorReply(
            new AcpError(
              'PAYLOAD_TOO_LARGE',
              `the reply would be ${bytes.length} bytes; this server carries at most ${limit}: ask for a smaller page (limit, cursor)`,
            ),
          ),
        ),
      );
    }
    try {
      msg.respond(bytes);
    } catch (err) {
      this.logger.error(`could not reply on ${msg.subject}: ${(err as Error)?.message}`);
    }
  }

  private maxReplyBytes(): number {
    return this.options.connection.info?.max_payload ?? DEFAULT_MAX_REPLY_BYTES;
  }

  private async replyFor(pattern: string, msg: Msg): Promise<unknown> {
    let body: Record<string, unknown>;
    try {
      body = readRequestBody(msg.data, this.options.maxPayloadBytes);
    } catch (err) {
      return errorReply(err as AcpError);
    }
    const handler = this.messageHandlers.get(pattern);
    if (!handler) {
      return errorReply(new AcpError('INTERNAL', `no handler for ${pattern}`));
    }
    try {
      const context = new PlainNatsContext([msg.subject, msg.data, msg.headers, this.maxReplyBytes()]);
      const invoke = async () => {
        const result = await handler(body, context);
        return isObservable(result) ? await lastValueFrom(result) : result;
      };
      const around = this.options.observer?.around;
      return around
        ? await around.call(this.options.observer, { pattern, subject: msg.subject, headers: msg.headers, body }, invoke)
        : await invoke();
    } catch (err) {
      if (err instanceof AcpError) {
        return errorReply(err);
      }
      this.logger.error(`handler for ${msg.subject} failed`, (err as Error).stack);
      return errorReply(new AcpError('INTERNAL', 'internal error; the command was not applied'));
    }
  }
}
