import { loadConfig } from '@conclave/service-kit';
import { EscalationConfig } from './app/escalation.config';
import { startEscalation } from './app/escalation.app';

startEscalation(loadConfig(EscalationConfig, process.env)).catch((err: Error) => {
  console.error(`escalation failed to start: ${err.message}`);
  process.exit(1);
});
