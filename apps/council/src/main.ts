import { loadConfig } from '@conclave/service-kit';
import { CouncilConfig } from './app/council.config';
import { startCouncil } from './app/council.app';

startCouncil(loadConfig(CouncilConfig, process.env)).catch((err: Error) => {
  console.error(`council failed to start: ${err.message}`);
  process.exit(1);
});
