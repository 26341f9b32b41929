import { DynamicModule, Module } from '@nestjs/common';
import { authProviders, ServiceKitModule } from '@conclave/service-kit';
import { AuditConfig } from './audit.config';
import { AuditHttpController, AuditNatsController } from './audit.controller';
import { AuditLog } from './audit-log';

@Module({})
export class AuditModule {
  static register(config: AuditConfig): DynamicModule {
    return {
      module: AuditModule,
      imports: [ServiceKitModule.forRoot('audit', config)],
      controllers: [AuditNatsController, AuditHttpController],
      providers: [...authProviders, AuditLog],
    };
  }
}
