import { Controller, UseFilters } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { CouncilError } from '@conclave/council-protocol';
import { COUNCIL_COMMANDS, okReply, PassThroughRpcExceptionFilter } from '@conclave/messaging';
import { CouncilCommands } from './council-commands';

/**
 * The Council's NATS API (DESIGN section 5 plus extensions): plain JSON in, `{ok, ...}` out.
 * A CouncilError becomes `{ok: false, error: {code, message, field?}}` here, at the edge; an
 * AcpError (authentication, payload size) is mapped by the transport; anything else is INTERNAL.
 */
@Controller()
@UseFilters(PassThroughRpcExceptionFilter)
export class CouncilController {
  constructor(private readonly commands: CouncilCommands) {}

  @MessagePattern(COUNCIL_COMMANDS.start)
  onStart(@Payload() body: unknown) {
    return reply(() => this.commands.start(body));
  }

  @MessagePattern(COUNCIL_COMMANDS.get)
  onGet(@Payload() body: unknown) {
    return reply(() => this.commands.get(body));
  }

  @MessagePattern(COUNCIL_COMMANDS.outcome)
  onOutcome(@Payload() body: unknown) {
    return reply(() => this.commands.outcome(body));
  }

  @MessagePattern(COUNCIL_COMMANDS.goalContract)
  onGoalContract(@Payload() body: unknown) {
    return reply(() => this.commands.reviseGoalContract(body));
  }

  @MessagePattern(COUNCIL_COMMANDS.declineFrame)
  onDeclineFrame(@Payload() body: unknown) {
    return reply(() => this.commands.declineFrameChallenge(body));
  }

  @MessagePattern(COUNCIL_COMMANDS.interrupt)
  onInterrupt(@Payload() body: unknown) {
    return reply(() => this.commands.interrupt(body));
  }
}

async function reply<T extends object>(handle: () => Promise<T>) {
  try {
    return okReply(await handle());
  } catch (err) {
    if (err instanceof CouncilError) return { ok: false as const, error: err.toJSON() };
    throw err;
  }
}
