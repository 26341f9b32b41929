import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, createWriteStream, readFileSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ulid } from 'ulid';
import type { ServiceName } from './conclave-harness';
import { runEnv } from './run-env';

const ROOT = resolve(__dirname, '../..');
/** How long a started process may take to report ready (longer to tell a starved process from a stuck one). */
const READY_TIMEOUT_MS = Number(process.env['FAULTS_READY_TIMEOUT_MS'] ?? 60_000);
const NATS_SERVER = process.env['NATS_SERVER_BIN'] ?? '/usr/sbin/nats-server';

const built = new Set<ServiceName>();

/** Every child this test process started: none may outlive it (a timed-out test included). */
const children = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});
function track(child: ChildProcess): ChildProcess {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

/**
 * Builds the services' bundles (`dist/apps/<name>/main.js`, what `npm run up` and the images
 * run) once per test process; nx answers from its cache when the sources did not change.
 * Processes start from the bundle: half the CPU of compiling TypeScript at every start, which
 * matters for a restart on a loaded machine.
 */
export function ensureBuilt(names: readonly ServiceName[]): void {
  const missing = names.filter((n) => !built.has(n));
  if (missing.length === 0) return;
  // Test processes build one at a time: a build cleans its output directory first.
  const lock = join(ROOT, 'dist', '.build-lock');
  mkdirSync(join(ROOT, 'dist'), { recursive: true });
  const deadline = Date.now() + 600_000;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      if (Date.now() > deadline) rmSync(lock, { recursive: true, force: true });
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 200);
    }
  }
  try {
    execFileSync('npx', ['nx', 'run-many', '-t', 'build', `--projects=${missing.join(',')}`, '--outputStyle=static'], {
      cwd: ROOT,
      // The bench launchers set a relative TS_NODE_PROJECT, which webpack's config loader would
      // resolve from elsewhere: the build finds its own.
      env: { ...process.env, TS_NODE_PROJECT: undefined, NX_DAEMON: 'false', NX_NO_CLOUD: 'true' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
  for (const n of missing) built.add(n);
}

/** A TCP port nobody listens on right now. */
export async function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => ok(port));
    });
  });
}

function answers(port: number): Promise<boolean> {
  return new Promise((ok) => {
    const socket = createConnection({ host: '127.0.0.1', port }, () => (socket.destroy(), ok(true)));
    socket.once('error', () => ok(false));
  });
}

async function until(test: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await test())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((ok) => child.once('exit', () => ok()));
}

/**
 * A nats-server of the test's own, with JetStream, on a free port and a temporary store
 * directory: it can be stopped and restarted on the same port and data without touching the
 * shared server. `dispose()` kills it and deletes the directory.
 */
export class PrivateNatsServer {
  readonly dir = mkdtempSync(join(tmpdir(), 'conclave-nats-'));
  port = 0;
  private child: ChildProcess | undefined;

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    if (this.port === 0) this.port = await freePort();
    const log = createWriteStream(join(this.dir, 'nats-server.log'), { flags: 'a' });
    const child = track(
      spawn(NATS_SERVER, ['-a', '127.0.0.1', '-p', String(this.port), '-js', '-sd', join(this.dir, 'store')], {
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
    );
    child.stdout?.pipe(log);
    child.stderr?.pipe(log);
    this.child = child;
    await until(
      async () => {
        if (child.exitCode !== null) throw new Error(`nats-server exited with ${child.exitCode}: ${this.log().slice(-500)}`);
        return answers(this.port);
      },
      10_000,
      `nats-server on port ${this.port}`,
    );
  }

  /** Stops the server (SIGTERM: it flushes its store, as an orchestrator's stop does). */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const child = this.child;
    if (!child) return;
    child.kill(signal);
    await exited(child);
    this.child = undefined;
  }

  log(): string {
    try {
      return readFileSync(join(this.dir, 'nats-server.log'), 'utf8');
    } catch {
      return '';
    }
  }

  async dispose(): Promise<void> {
    await this.stop('SIGKILL').catch(() => undefined);
    rmSync(this.dir, { recursive: true, force: true });
  }
}

export interface ServiceProcess {
  name: ServiceName;
  child: ChildProcess;
  port: number;
  logFile: string;
}

/**
 * The services as separate Node processes, each from its own `main.ts` (as `npm run up` runs
 * them from the build), with the names a ConclaveHarness would give a run: prefix, event stream,
 * stream suffix. Logs go to files under `logDir`.
 */
export class ServiceProcesses {
  readonly run = ulid();
  readonly prefix = `t${this.run.toLowerCase()}`;
  readonly env: Record<string, string>;
  readonly processes: ServiceProcess[] = [];

  /** Logs of this run's processes; a directory of its own unless one is given (then kept). */
  readonly logDir: string;
  private readonly ownsLogDir: boolean;

  constructor(natsUrl: string, logDir?: string, extraEnv: Record<string, string> = {}) {
    this.ownsLogDir = logDir === undefined;
    this.logDir = logDir ?? mkdtempSync(join(tmpdir(), 'conclave-services-'));
    this.env = { ...runEnv(this.run, natsUrl), ...extraEnv };
  }

  /** Starts the services in parallel and waits until each says it is ready. */
  async start(...names: ServiceName[]): Promise<void> {
    ensureBuilt(names);
    await Promise.all(names.map((n) => this.add(n)));
  }

  /** Processes that exited while starting and were started again (as a kubelet does), with their exit codes. */
  readonly crashRestarts: string[] = [];

  /**
   * A new process of `name`, once ready. One that exits while starting (a start watchdog's exit
   * 70, say) is started again, up to twice more, as Kubernetes restarts a crashed container.
   */
  async add(name: ServiceName): Promise<ServiceProcess> {
    for (let attempt = 1; ; attempt++) {
      // This attempt's own process: others may be starting in parallel.
      let mine: ServiceProcess | undefined;
      try {
        return await this.addOnce(name, (p) => (mine = p));
      } catch (err) {
        if (attempt >= 3 || !mine || mine.child.exitCode === null) throw err;
        this.crashRestarts.push(`${name} exited with ${mine.child.exitCode} while starting`);
      }
    }
  }

  private async addOnce(name: ServiceName, spawned: (p: ServiceProcess) => void): Promise<ServiceProcess> {
    ensureBuilt([name]);
    const port = await freePort();
    const logFile = join(this.logDir, `${name}-${this.processes.length}.log`);
    const out = createWriteStream(logFile, { flags: 'a' });
    const child = track(
      spawn(
        process.execPath,
        // A diagnostic report on SIGUSR2 (JS and native stacks, libuv handles) for a process that never gets ready.
        ['--report-on-signal', '--report-signal=SIGUSR2', `--report-directory=${this.logDir}`, `dist/apps/${name}/main.js`],
        {
          cwd: ROOT,
          env: { ...process.env, ...this.env, HTTP_PORT: String(port) },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      ),
    );
    child.stdout?.pipe(out);
    child.stderr?.pipe(out);
    const p = { name, child, port, logFile };
    this.processes.push(p);
    spawned(p);
    try {
      await until(
        async () => {
          if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode}: ${this.logOf(p).slice(-1000)}`);
          return this.ready(p);
        },
        READY_TIMEOUT_MS,
        `${name} to be ready`,
      );
    } catch (err) {
      if (child.exitCode === null) (err as Error).message += `\n${await this.diagnose(p)}`;
      throw err;
    }
    return p;
  }

  /**
   * Why a live process is not ready: its scheduler state and CPU time over two samples (blocked,
   * spinning or starved), what it waits in, and a Node diagnostic report written to the log dir.
   */
  async diagnose(p: ServiceProcess): Promise<string> {
    const pid = p.child.pid;
    const sample = (): { state: string; cpuTicks: number; wchan: string } => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        let wchan = '';
        try {
          wchan = readFileSync(`/proc/${pid}/wchan`, 'utf8');
        } catch {
          wchan = '?';
        }
        return { state: fields[0], cpuTicks: Number(fields[11]) + Number(fields[12]), wchan };
      } catch {
        return { state: 'gone', cpuTicks: 0, wchan: '' };
      }
    };
    const first = sample();
    p.child.kill('SIGUSR2');
    await new Promise((r) => setTimeout(r, 3_000));
    const second = sample();
    return (
      `${p.name} pid ${pid}: state ${first.state} -> ${second.state}, wchan ${second.wchan}, ` +
      `cpu ticks ${first.cpuTicks} -> ${second.cpuTicks} in 3 s; /readyz: ${await this.readiness(p)}; ` +
      `diagnostic report (SIGUSR2) in ${this.logDir}`
    );
  }

  async ready(p: ServiceProcess): Promise<boolean> {
    try {
      return (await fetch(`http://127.0.0.1:${p.port}/readyz`)).ok;
    } catch {
      return false;
    }
  }

  /** The body of `/readyz` (which checks fail), or the error reaching it. */
  async readiness(p: ServiceProcess): Promise<string> {
    try {
      return await (await fetch(`http://127.0.0.1:${p.port}/readyz`)).text();
    } catch (err) {
      return `unreachable: ${(err as Error).message}`;
    }
  }

  logOf(p: ServiceProcess): string {
    try {
      return readFileSync(p.logFile, 'utf8');
    } catch {
      return '';
    }
  }

  /** The running processes (of `name`, when given), oldest first. */
  live(name?: ServiceName): ServiceProcess[] {
    return this.processes.filter(
      (p) => (name === undefined || p.name === name) && p.child.exitCode === null && p.child.signalCode === null,
    );
  }

  /**
   * Sends `signal` to the oldest running process of `name` and waits for it to exit. A process
   * still running `graceMs` after a non-SIGKILL signal is killed (`forced`), as an orchestrator does.
   */
  async kill(
    name: ServiceName,
    signal: NodeJS.Signals = 'SIGKILL',
    graceMs = 30_000,
  ): Promise<{ process: ServiceProcess; code: number | null; signal: NodeJS.Signals | null; forced: boolean }> {
    const p = this.live(name)[0];
    if (!p) throw new Error(`no running ${name} to send ${signal} to`);
    let forced = false;
    const timer = setTimeout(() => {
      forced = true;
      p.child.kill('SIGKILL');
    }, graceMs);
    p.child.kill(signal);
    await exited(p.child);
    clearTimeout(timer);
    return { process: p, code: p.child.exitCode, signal: p.child.signalCode, forced };
  }

  /** A fresh process of `name` with the same env (as a Kubernetes restart), once it is ready. */
  async restart(name: ServiceName): Promise<ServiceProcess> {
    return this.add(name);
  }

  /** SIGTERM to each (graceful drain), SIGKILL to any still running after `graceMs`. */
  async stop(graceMs = 10_000): Promise<void> {
    await Promise.all(
      this.processes.map(async (p) => {
        p.child.kill('SIGTERM');
        const timer = setTimeout(() => p.child.kill('SIGKILL'), graceMs);
        await exited(p.child);
        clearTimeout(timer);
      }),
    );
    if (this.ownsLogDir) rmSync(this.logDir, { recursive: true, force: true });
  }
}
