import { DynamicModule, Module } from '@nestjs/common';
import { authProviders, ServiceKitModule } from '@conclave/service-kit';
import { CouncilCommands } from './council-commands';
import { CouncilConfig } from './council.config';
import { CouncilMetrics } from './council-metrics';
import { CouncilController } from './council.controller';
import { AcpBridge } from './acp-bridge';
import { AcpReactions } from './acp-reactions';
import { DecisionOutbox } from './decision-outbox';
import { EvaluationCommands } from './evaluation-commands';
import { EvaluationController } from './evaluation.controller';
import { EvaluationProjection } from './evaluation-projection';
import { MemberTaskTransport } from './member-task-transport';
import { OutcomeOutbox } from './outcome-outbox';
import { RunDriver } from './run-driver';
import { RunIndex } from './run-index';
import { RunLeases } from './run-lease';
import { RunRepository } from './run-repository';

@Module({})
export class CouncilModule {
  static register(config: CouncilConfig): DynamicModule {
    return {
      module: CouncilModule,
      imports: [ServiceKitModule.forRoot('council', config)],
      controllers: [CouncilController, EvaluationController],
      providers: [
        ...authProviders,
        RunRepository,
        RunLeases,
        MemberTaskTransport,
        RunDriver,
        DecisionOutbox,
        RunIndex,
        CouncilCommands,
        CouncilMetrics,
        EvaluationProjection,
        EvaluationCommands,
        OutcomeOutbox,
        AcpBridge,
        AcpReactions,
      ],
    };
  }
}
