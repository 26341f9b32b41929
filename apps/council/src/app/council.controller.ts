import { Controller, UseFilters } from '@nestjs/common';
import { Ctx, MessagePattern, Payload } from '@nestjs/microservices';
import { memberApiSchemas, RUN_RECORD_SCHEMAS } from '@conclave/council-protocol';
import { COUNCIL_COMMANDS, okReply, PassThroughRpcExceptionFilter, PlainNatsContext } from '@conclave/messaging';
import { CommandContext, Identity, RejectionRecorder } from '@conclave/service-kit';
import { CouncilCommands, declaredActor } from './council-commands';
import { answerCouncilCommand } from './council-edge';

/**
 * The Council's NATS API (DESIGN section 5 plus extensions): plain JSON in, `{ok, ...}` out.
 * Every command is authenticated first, exactly as ACP commands are (CommandContext: Ed25519
 * signature or JWT by a registered participant when authentication is required); every typed
 * refusal is recorded for the audit log (answerCouncilCommand). An AcpError is mapped by the
 * transport, a CouncilError becomes `{ok: false, error: {code, message, field?}}`; anything else is INTERNAL.
 */
@Controller()
@UseFilters(PassThroughRpcExceptionFilter)
export class CouncilController {
  constructor(
    private readonly commands: CouncilCommands,
    private readonly context: CommandContext,
    private readonly rejections: RejectionRecorder,
  ) {}

  @MessagePattern(COUNCIL_COMMANDS.start)
  onStart(@Payload() body: unknown, @Ctx() request: PlainNatsContext) {
    // With authentication off, a start that names no actor acts for the contract's owner.
    const owner = (body as { goal_contract?: { decision_owner?: unknown } } | null)?.goal_contract?.decision_owner;
    const declared = declaredActor(body) ?? (typeof owner === 'string' ? owner : undefined);
    return this.run('council.start', body, request, declared, (who) => this.commands.start(body, who));
  }

  @MessagePattern(COUNCIL_COMMANDS.get)
  onGet(@Payload() body: unknown, @Ctx() request: PlainNatsContext) {
    return this.run('council.get', body, request, declaredActor(body), (who) => this.commands.get(body, who));
  }

  @MessagePattern(COUNCIL_COMMANDS.outcome)
  onOutcome(@Payload() body: unknown, @Ctx() request: PlainNatsContext) {
    return this.run('council.outcome', body, request, declaredActor(body), (who) => this.commands.outcome(body, who));
  }

  @MessagePattern(COUNCIL_COMMANDS.goalContract)
  onGoalContract(@Payload() body: unknown, @Ctx() request: PlainNatsContext) {
    return this.run('council.goal-contract', body, request, declaredActor(body), (who) => this.commands.reviseGoalContract(body, who));
  }

  @MessagePattern(COUNCIL_COMMANDS.declineFrame)
  onDeclineFrame(@Payload() body: unknown, @Ctx() request: PlainNatsContext) {
    return this.run('council.frame-decline', body, request, declaredActor(body), (who) => this.commands.declineFrameChallenge(body, who));
  }

  @MessagePattern(COUNCIL_COMMANDS.interrupt)
  onInterrupt(@Payload() body: unknown, @Ctx() request: PlainNatsContext) {
    return this.run('council.interrupt', body, request, declaredActor(body), (who) => this.commands.interrupt(body, who));
  }

  /**
   * The member API's JSON Schemas (each stage's task and answer, the answer message, the verdict,
   * the cancel notice) and the RunRecord schema of each level. Public: it holds no run data, so it
   * needs no authentication (a member reads it before it answers; its answers are signed).
   */
  @MessagePattern(COUNCIL_COMMANDS.schemas)
  onSchemas() {
    return okReply({ schemas: { ...memberApiSchemas(), run_record: RUN_RECORD_SCHEMAS } });
  }

  private run<T extends object>(
    command: string,
    body: unknown,
    request: PlainNatsContext,
    declared: string | undefined,
    handle: (identity: Identity) => Promise<T>,
  ) {
    return answerCouncilCommand({ context: this.context, rejections: this.rejections }, command, body, request, declared, handle);
  }
}
