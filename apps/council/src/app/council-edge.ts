import { CouncilError } from '@conclave/council-protocol';
import { PlainNatsContext } from '@conclave/messaging';
import { answerAuthenticated, CommandContext, Identity, RejectionRecorder } from '@conclave/service-kit';

/**
 * The edge of one `council.v1.*` command: the service kit's (authenticate, run, reply ok, audit
 * every typed refusal with who was refused when known). An AcpError (authentication, identity,
 * grants) is re-thrown for the transport to map; a CouncilError (a run's rights, its state, a
 * malformed body) becomes `{ok: false, error: {code, message, field?}}`.
 */
export function answerCouncilCommand<T extends object>(
  edge: { context: CommandContext; rejections: RejectionRecorder },
  command: string,
  body: unknown,
  request: PlainNatsContext,
  declared: string | undefined,
  handle: (identity: Identity) => Promise<T>,
) {
  return answerAuthenticated(edge, command, body, request, handle, declared, (err) => (err instanceof CouncilError ? err : undefined));
}
