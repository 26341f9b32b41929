import { DynamicModule, Module } from '@nestjs/common';
import { authProviders, ProposalStore, ServiceKitModule } from '@conclave/service-kit';
import { EscalateProposalHandler } from './escalate-proposal.handler';
import { IntakeConfig } from './intake.config';
import { IntakeController } from './intake.controller';
import { LineageIndex } from './lineage-index';
import { LineageQueries } from './lineage-queries';
import { ParticipantsController } from './participants.controller';
import { DomainPolicies } from './domain-policies';
import { PoliciesController } from './policies.controller';
import { ProposalIndex } from './proposal-index';
import { ProposalLabels } from './proposal-labels';
import { ProposalQueries } from './proposal-queries';
import { ProposalView } from './proposal-view';
import { RecordResponseHandler } from './record-response.handler';
import { RegistryCommands } from './registry-commands';
import { SubmitProposalHandler } from './submit-proposal.handler';

@Module({})
export class IntakeModule {
  static register(config: IntakeConfig): DynamicModule {
    return {
      module: IntakeModule,
      imports: [ServiceKitModule.forRoot('intake', config)],
      controllers: [IntakeController, ParticipantsController, PoliciesController],
      providers: [
        ...authProviders,
        ProposalStore,
        ProposalIndex,
        ProposalLabels,
        ProposalView,
        SubmitProposalHandler,
        RecordResponseHandler,
        EscalateProposalHandler,
        ProposalQueries,
        LineageIndex,
        LineageQueries,
        RegistryCommands,
        DomainPolicies,
      ],
    };
  }
}
