import { AcpError } from '@conclave/acp-protocol';
import { okReply, OkReply } from '@conclave/messaging';
import type { CommandContext } from './command-context';
import type { CommandRequest, Identity } from './auth/identity';
import type { RejectionRecorder } from './auth/rejection-recorder';

/**
 * The edge of one NATS command: authenticate (checking an identity the body declares), run the
 * use case, reply ok; a typed refusal is audited, with who was refused when known, and re-thrown.
 */
export async function answerAuthenticated<T extends object>(
  edge: { context: CommandContext; rejections: RejectionRecorder },
  command: string,
  body: unknown,
  request: CommandRequest,
  handle: (identity: Identity) => Promise<T>,
  declaredActor?: string,
): Promise<OkReply<T>> {
  let identity: Identity | undefined;
  try {
    identity = await edge.context.authenticate(request, declaredActor);
    return okReply(await handle(identity));
  } catch (err) {
    if (err instanceof AcpError) await edge.rejections.record(command, request, body, err, identity);
    throw err;
  }
}
