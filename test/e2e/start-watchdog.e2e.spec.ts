import { spawn } from 'node:child_process';
import { createServer, Server, Socket } from 'node:net';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ensureBuilt } from '../support/processes';

/**
 * A service that cannot finish creating its providers (here: a "NATS server" that accepts the
 * connection and never speaks) must not hang unready for ever: the start watchdog logs what it was
 * doing and exits 70, so that the orchestrator restarts it.
 */
describe('the start watchdog: a process stuck creating its application exits 70 to be restarted', () => {
  let silent: Server;
  const sockets: Socket[] = [];
  let port = 0;

  beforeAll(async () => {
    ensureBuilt(['sweeper']);
    silent = createServer((s) => sockets.push(s));
    await new Promise<void>((ok) => silent.listen(0, '127.0.0.1', ok));
    port = (silent.address() as { port: number }).port;
  });
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((ok) => silent.close(ok));
  });

  it('given a NATS address that accepts and never answers, when the sweeper starts with a 2 s create timeout, then it logs the fatal line and exits 70', async () => {
    const reports = mkdtempSync(join(tmpdir(), 'conclave-watchdog-'));
    const child = spawn(process.execPath, [`--report-directory=${reports}`, 'dist/apps/sweeper/main.js'], {
      cwd: resolve(__dirname, '../..'),
      env: {
        ...process.env,
        NATS_URL: `nats://127.0.0.1:${port}`,
        CONCLAVE_CREATE_TIMEOUT_MS: '2000',
        CONCLAVE_AUTH_MODE: 'off',
        HTTP_PORT: '0',
        HTTP_HOST: '127.0.0.1',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const code = await new Promise<number | null>((ok) => child.once('exit', (c) => ok(c)));

    // The report of what it waited for is written beside the logs.
    const written = readdirSync(reports).filter((f) => f.startsWith('report.'));
    rmSync(reports, { recursive: true, force: true });
    expect(code).toBe(70);
    expect(written).toHaveLength(1);
    const fatal = output
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { level: string; service: string; msg: string })
      .find((l) => l.level === 'fatal');
    expect(fatal).toMatchObject({ service: 'sweeper', msg: expect.stringContaining('not created within 2000 ms') });
  }, 120_000);
});
