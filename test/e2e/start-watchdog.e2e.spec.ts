import { spawn } from 'node:child_process';
import { createServer, Server, Socket } from 'node:net';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ensureBuilt, PrivateNatsServer, ServiceProcesses } from '../support/processes';

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

/**
 * The harness diagnoses a process that is not ready with SIGUSR2 (a Node report). The signal must
 * leave the process as it is: Nest's default shutdown hooks drained and exited on it, which made
 * a stuck process look as if it had exited cleanly by itself.
 */
describe('the diagnostic signal: SIGUSR2 writes a report and stops nothing', () => {
  const nats = new PrivateNatsServer();
  let svc: ServiceProcesses | undefined;

  beforeAll(() => nats.start(), 30_000);
  afterAll(async () => {
    await svc?.stop();
    await nats.dispose();
  }, 30_000);

  it('given a ready sweeper, when it gets SIGUSR2, then a report is written and it is still running and ready', async () => {
    svc = new ServiceProcesses(nats.url);
    await svc.start('sweeper');
    const [sweeper] = svc.live('sweeper');

    sweeper.child.kill('SIGUSR2');
    let reports: string[] = [];
    for (let i = 0; i < 50 && reports.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 100));
      reports = readdirSync(svc.logDir).filter((f) => f.startsWith('report.'));
    }
    await new Promise((r) => setTimeout(r, 1_000));

    expect(reports).toHaveLength(1);
    expect({ exitCode: sweeper.child.exitCode, signal: sweeper.child.signalCode }).toEqual({ exitCode: null, signal: null });
    expect(await svc.ready(sweeper)).toBe(true);
  }, 120_000);
});
