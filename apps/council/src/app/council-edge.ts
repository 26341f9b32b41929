import { AcpError } from '@conclave/acp-protocol';
import { CouncilError } from '@conclave/council-protocol';
import { okReply, PlainNatsContext } from '@conclave/messaging';
import { CommandContext, Identity, RejectionRecorder } from '@conclave/service-kit';

/**
 * The edge of one `council.v1.*` command: authenticate (checking an identity the body declares),
 * run the use case, reply ok. Every typed refusal is recorded for the audit log by the one
 * RejectionRecorder (RFC 14.6), with who was refused when known: an AcpError (authentication,
 * identity, grants) is re-thrown for the transport to map; a CouncilError (a run's rights, its
 * state, a malformed body) becomes `{ok: false, error: {code, message, field?}}`.
 */
export async function answerCouncilCommand<T extends object>(
  edge: { context: CommandContext; rejections: RejectionRecorder },
  command: string,
  body: unknown,
  request: PlainNatsContext,
  declared: string | undefined,
  handle: (identity: Identity) => Promise<T>,
) {
  let identity: Identity | undefined;
  try {
    identity = await edge.context.authenticate(request, declared);
    return okReply(await handle(identity));
  } catch (err) {
    if (err instanceof CouncilError) {
      await edge.rejections.record(command, request, body, err, identity);
      return { ok: false as const, error: err.toJSON() };
    }
    if (err instanceof AcpError) await edge.rejections.record(command, request, body, err, identity);
    throw err;
  }
}
