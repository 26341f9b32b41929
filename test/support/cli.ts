import { execFile } from 'node:child_process';
import { resolve } from 'node:path';

const ROOT = resolve(__dirname, '../..');

/**
 * The CLI as a person runs it (`npm run conclave -- ...`), as a process of its own, compiled at
 * start. Its environment is `env` alone (with PATH), unless `inherit` adds the test's own.
 */
export function runConclave(
  args: string[],
  env: Record<string, string | undefined> = {},
  options: { inherit?: boolean } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const base = options.inherit ? process.env : { PATH: process.env['PATH'] ?? '' };
  return new Promise((ok) => {
    execFile(
      process.execPath,
      ['-r', '@swc-node/register', '-r', 'tsconfig-paths/register', 'apps/cli/src/main.ts', ...args],
      { cwd: ROOT, env: { ...base, TS_NODE_PROJECT: 'tsconfig.base.json', ...env }, timeout: 60_000, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => ok({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
    );
  });
}
