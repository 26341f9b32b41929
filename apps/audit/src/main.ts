import { loadConfig } from '@conclave/service-kit';
import { AuditConfig } from './app/audit.config';
import { startAudit } from './app/audit.app';

startAudit(loadConfig(AuditConfig, process.env)).catch((err: Error) => {
  console.error(`audit failed to start: ${err.message}`);
  process.exit(1);
});
