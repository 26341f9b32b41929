import 'reflect-metadata';
import { plainToInstance } from 'class-transformer';
import { validateSync, ValidationError } from 'class-validator';

/** A configuration variable that is missing or malformed; the service refuses to start. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
  }
}

/**
 * Reads a configuration class from an environment-like record, once, at start
 * (STYLE.md rule 10: `process.env` appears nowhere else). Properties are decorated with
 * class-validator rules and class-transformer `@Expose({name: 'ENV_NAME'})`, `@Type(() => Number)`.
 */
export function loadConfig<T extends object>(cls: new () => T, env: Record<string, string | undefined>): T {
  const defined = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const config = plainToInstance(cls, defined, { excludeExtraneousValues: true, exposeDefaultValues: true });
  const errors = validateSync(config, { whitelist: false });
  if (errors.length > 0) {
    throw new ConfigError(errors.flatMap((e) => describe(e)));
  }
  return config;
}

function describe(error: ValidationError): string[] {
  const own = Object.values(error.constraints ?? {}).map((c) => `${error.property}: ${c} (got ${JSON.stringify(error.value)})`);
  return [...own, ...(error.children ?? []).flatMap(describe)];
}
