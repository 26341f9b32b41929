import { AcpError } from '@conclave/acp-protocol';
import { okReply, OkReply } from '@conclave/messaging';
import type { CommandContext } from './command-context';
import type { CommandRequest, Identity } from './auth/identity';
import type { RejectionRecorder, TypedRefusal } from './auth/rejection-recorder';

/**
 * The edge of one NATS command: authenticate (checking an identity the body declares), run the
 * use case, reply ok; a typed refusal is audited, with who was refused when known. An AcpError is
 * re-thrown for the transport to map; a refusal `refusalOf` recognises (a library's own typed
 * error) is answered `{ok: false, error}` here.
 */
export async function answerAuthenticated<T extends object>(
  edge: { context: CommandContext; rejections: RejectionRecorder },
  command: string,
  body: unknown,
  request: CommandRequest,
  handle: (identity: Identity) => Promise<T>,
  declaredActor?: string,
  refusalOf: (err: unknown) => TypedRefusal | undefined = () => undefined,
): Promise<OkReply<T> | RefusedReply> {
  let identity: Identity | undefined;
  try {
    identity = await edge.context.authenticate(request, declaredActor);
    return okReply(await handle(identity));
  } catch (err) {
    const refusal = refusalOf(err);
    if (refusal || err instanceof AcpError) await edge.rejections.record(command, request, body, refusal ?? (err as AcpError), identity);
    if (refusal) return { ok: false, error: refusal.toJSON() };
    throw err;
  }
}

/** A refusal answered as a reply rather than thrown. */
export interface RefusedReply {
  ok: false;
  error: ReturnType<TypedRefusal['toJSON']>;
}
