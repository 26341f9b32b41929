import { DynamicModule, Module } from '@nestjs/common';
import { ProposalStore, ServiceKitModule } from '@conclave/service-kit';
import { ExpirySweeper } from './expiry-sweeper';
import { SweeperConfig } from './sweeper.config';

@Module({})
export class SweeperModule {
  static register(config: SweeperConfig): DynamicModule {
    return {
      module: SweeperModule,
      imports: [ServiceKitModule.forRoot('sweeper', config)],
      providers: [ProposalStore, ExpirySweeper],
    };
  }
}
