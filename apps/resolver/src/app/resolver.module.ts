import { DynamicModule, Module } from '@nestjs/common';
import { ProposalStore, ServiceKitModule } from '@conclave/service-kit';
import { DecisionOutbox } from './decision-outbox';
import { ResolutionWatcher } from './resolution-watcher';
import { ResolverConfig } from './resolver.config';

@Module({})
export class ResolverModule {
  static register(config: ResolverConfig): DynamicModule {
    return {
      module: ResolverModule,
      imports: [ServiceKitModule.forRoot('resolver', config)],
      providers: [ProposalStore, ResolutionWatcher, DecisionOutbox],
    };
  }
}
