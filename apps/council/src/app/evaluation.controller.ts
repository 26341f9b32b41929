import { Controller, UseFilters } from '@nestjs/common';
import { Ctx, MessagePattern, Payload } from '@nestjs/microservices';
import { COUNCIL_COMMANDS, PassThroughRpcExceptionFilter, PlainNatsContext } from '@conclave/messaging';
import { CommandContext, Identity, RejectionRecorder } from '@conclave/service-kit';
import { declaredActor } from './council-commands';
import { answerCouncilCommand } from './council-edge';
import { EvaluationCommands } from './evaluation-commands';

/**
 * The council:L4 and L5 subjects: structured outcomes, and the evaluation read models. Every
 * command is authenticated first, as on the other Council subjects (signed or JWT when
 * authentication is required); every typed refusal is recorded for the audit log, and a
 * CouncilError becomes `{ok: false, error}` (answerCouncilCommand). The read models show only the
 * domains the caller may read (EvaluationCommands.readable).
 */
@Controller()
@UseFilters(PassThroughRpcExceptionFilter)
export class EvaluationController {
  constructor(
    private readonly commands: EvaluationCommands,
    private readonly context: CommandContext,
    private readonly rejections: RejectionRecorder,
  ) {}

  @MessagePattern(COUNCIL_COMMANDS.recordOutcome)
  onRecordOutcome(@Payload() body: unknown, @Ctx() request: PlainNatsContext) {
    return this.run('council.outcome.record', body, request, (who) => this.commands.recordOutcome(body, who));
  }

  @MessagePattern(COUNCIL_COMMANDS.acpPropose)
  onAcpPropose(@Payload() body: unknown, @Ctx() request: PlainNatsContext) {
    return this.run('council.acp.propose', body, request, (who) => this.commands.acpPropose(body, who));
  }

  @MessagePattern(COUNCIL_COMMANDS.estimates)
  onEstimates(@Payload() body: unknown, @Ctx() request: PlainNatsContext) {
    return this.run('council.capability.estimates', body, request, (who) => this.commands.estimates(body, who));
  }

  @MessagePattern(COUNCIL_COMMANDS.calibration)
  onCalibration(@Payload() body: unknown, @Ctx() request: PlainNatsContext) {
    return this.run('council.capability.calibration', body, request, (who) => this.commands.calibration(body, who));
  }

  @MessagePattern(COUNCIL_COMMANDS.concentration)
  onConcentration(@Payload() body: unknown, @Ctx() request: PlainNatsContext) {
    return this.run('council.capability.concentration', body, request, (who) => this.commands.concentration(body, who));
  }

  private run<T extends object>(command: string, body: unknown, request: PlainNatsContext, handle: (identity: Identity) => Promise<T>) {
    return answerCouncilCommand(
      { context: this.context, rejections: this.rejections },
      command,
      body,
      request,
      declaredActor(body),
      handle,
    );
  }
}
