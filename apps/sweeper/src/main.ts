import { loadConfig } from '@conclave/service-kit';
import { SweeperConfig } from './app/sweeper.config';
import { startSweeper } from './app/sweeper.app';

startSweeper(loadConfig(SweeperConfig, process.env)).catch((err: Error) => {
  console.error(`sweeper failed to start: ${err.message}`);
  process.exit(1);
});
