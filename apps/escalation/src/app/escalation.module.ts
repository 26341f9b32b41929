import { DynamicModule, Module } from '@nestjs/common';
import { authProviders, ProposalStore, ServiceKitModule } from '@conclave/service-kit';
import { ConsoleController } from './console.controller';
import { DecisionFeed } from './decision-feed';
import { ESCALATION_SETTINGS, EscalationConfig, EscalationSettings } from './escalation.config';
import { EscalationController } from './escalation.controller';
import { EscalationDesk } from './escalation-desk';
import { EscalationHttpController } from './escalation-http.controller';
import { EscalationInbox } from './escalation-inbox';
import { EscalationNotifier } from './escalation-notifier';
import { EscalationQueries } from './escalation-queries';
import { EscalationReaders } from './escalation-readers';
import { HumanResolverTokens } from './human-resolver-tokens';
import { ResolveEscalationHandler } from './resolve-escalation.handler';

@Module({})
export class EscalationModule {
  static register(config: EscalationConfig, settings: EscalationSettings): DynamicModule {
    return {
      module: EscalationModule,
      imports: [ServiceKitModule.forRoot('escalation', config)],
      controllers: [EscalationController, EscalationHttpController, ConsoleController],
      providers: [
        { provide: ESCALATION_SETTINGS, useValue: settings },
        ProposalStore,
        ...authProviders,
        EscalationInbox,
        EscalationDesk,
        EscalationNotifier,
        DecisionFeed,
        HumanResolverTokens,
        ResolveEscalationHandler,
        EscalationQueries,
        EscalationReaders,
      ],
    };
  }
}
