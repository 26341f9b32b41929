import { DynamicModule, Module } from '@nestjs/common';
import { CommandContext, ProposalStore, ServiceKitModule } from '@conclave/service-kit';
import { EscalateProposalHandler } from './escalate-proposal.handler';
import { IntakeConfig } from './intake.config';
import { IntakeController } from './intake.controller';
import { ProposalIndex } from './proposal-index';
import { ProposalQueries } from './proposal-queries';
import { RecordResponseHandler } from './record-response.handler';
import { SubmitProposalHandler } from './submit-proposal.handler';

@Module({})
export class IntakeModule {
  static register(config: IntakeConfig): DynamicModule {
    return {
      module: IntakeModule,
      imports: [ServiceKitModule.forRoot('intake', config)],
      controllers: [IntakeController],
      providers: [
        ProposalStore,
        ProposalIndex,
        CommandContext,
        SubmitProposalHandler,
        RecordResponseHandler,
        EscalateProposalHandler,
        ProposalQueries,
      ],
    };
  }
}
