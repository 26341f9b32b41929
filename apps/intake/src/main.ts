import { loadConfig } from '@conclave/service-kit';
import { IntakeConfig } from './app/intake.config';
import { startIntake } from './app/intake.app';

startIntake(loadConfig(IntakeConfig, process.env)).catch((err: Error) => {
  console.error(`intake failed to start: ${err.message}`);
  process.exit(1);
});
