import { loadConfig } from '@conclave/service-kit';
import { ResolverConfig } from './app/resolver.config';
import { startResolver } from './app/resolver.app';

startResolver(loadConfig(ResolverConfig, process.env)).catch((err: Error) => {
  console.error(`resolver failed to start: ${err.message}`);
  process.exit(1);
});
