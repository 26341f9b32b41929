import { INestApplication } from '@nestjs/common';
import { AUDIT_QUEUE_GROUP } from '@conclave/registry-protocol';
import { bootstrapService } from '@conclave/service-kit';
import { AuditConfig } from './audit.config';
import { AuditModule } from './audit.module';

/** Starts the audit service: the hash-chained audit log, its NATS query API and HTTP export. */
export function startAudit(config: AuditConfig): Promise<INestApplication> {
  return bootstrapService({
    name: 'audit',
    module: AuditModule.register(config),
    config,
    commands: { subjectPrefix: config.subjectPrefix, queue: AUDIT_QUEUE_GROUP, maxPayloadBytes: 16_384 },
  });
}
