import { AcpError, AcpErrorBody } from '@conclave/acp-protocol';

/** Reply bodies of the NATS API: plain JSON, no framework envelope. */
export type OkReply<T extends object> = { ok: true } & T;
export interface ErrorReply {
  ok: false;
  error: AcpErrorBody;
}
export type Reply<T extends object> = OkReply<T> | ErrorReply;

export function okReply<T extends object>(body: T): OkReply<T> {
  return { ok: true, ...body };
}

export function errorReply(error: AcpError | AcpErrorBody): ErrorReply {
  return { ok: false, error: error instanceof AcpError ? error.toJSON() : error };
}
