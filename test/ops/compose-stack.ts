import { spawn, spawnSync } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { join } from 'node:path';

/** The repository root (test/ops/..). */
export const ROOT = join(__dirname, '..', '..');

export interface Engine {
  name: 'podman' | 'docker';
  /** The compose command: podman-compose, or docker's compose plugin. */
  compose: string[];
  env: NodeJS.ProcessEnv;
}

/**
 * The container engine this machine can run containers with, or why there is none: docker when
 * its daemon answers (and has the compose plugin), else podman with deploy/images/containers.conf
 * (installed with apt-get by deploy/images/ensure-podman.sh where it is missing and we are root).
 */
export function detectEngine(): { engine?: Engine; reason?: string } {
  const ok = (cmd: string, args: string[], env = process.env) =>
    spawnSync(cmd, args, { env, stdio: 'ignore', timeout: 60_000 }).status === 0;
  if (ok('docker', ['info']) && ok('docker', ['compose', 'version'])) {
    return { engine: { name: 'docker', compose: ['docker', 'compose'], env: process.env } };
  }
  if (!ok('bash', [join(ROOT, 'deploy/images/ensure-podman.sh')])) {
    return { reason: 'no docker daemon answers, and podman with podman-compose is not installed and cannot be installed here' };
  }
  const env = { ...process.env, CONTAINERS_CONF: process.env['CONTAINERS_CONF'] ?? join(ROOT, 'deploy/images/containers.conf') };
  if (!ok('podman', ['info'], env)) return { reason: '`podman info` fails on this machine' };
  return { engine: { name: 'podman', compose: ['podman-compose'], env } };
}

/** Runs a command to completion; rejects with its output when it exits non-zero. */
export function run(cmd: string, args: string[], env: NodeJS.ProcessEnv, logFile?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const log = logFile ? createWriteStream(logFile, { flags: 'a' }) : undefined;
    let out = '';
    const take = (chunk: Buffer) => {
      out += chunk.toString();
      log?.write(chunk);
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    child.on('error', reject);
    child.on('close', (code) => {
      log?.end();
      if (code === 0) resolve(out);
      else reject(new Error(`${cmd} ${args.join(' ')} exited ${code}:\n${out.slice(-4000)}`));
    });
  });
}

/** Probes a container's healthcheck once: true when it passes. */
async function healthy(engine: Engine, container: string): Promise<boolean> {
  if (engine.name === 'podman') {
    // Podman runs healthchecks from systemd timers; without systemd (containers, CI VMs) nothing
    // runs them, so the test runs the container's own healthcheck command itself.
    return spawnSync('podman', ['healthcheck', 'run', container], { env: engine.env, stdio: 'ignore' }).status === 0;
  }
  const r = spawnSync('docker', ['inspect', '--format', '{{.State.Health.Status}}', container], { env: engine.env, encoding: 'utf8' });
  return r.stdout.trim() === 'healthy';
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** docker-compose.yml brought up under a project name of its own, with the engine found. */
export class ComposeStack {
  constructor(
    readonly engine: Engine,
    readonly project: string,
    readonly env: NodeJS.ProcessEnv,
    readonly logFile: string,
  ) {}

  private get allEnv(): NodeJS.ProcessEnv {
    return { ...this.engine.env, ...this.env };
  }

  compose(...args: string[]): Promise<string> {
    const [cmd, ...pre] = this.engine.compose;
    return run(cmd, [...pre, '-p', this.project, '-f', join(ROOT, 'docker-compose.yml'), ...args], this.allEnv, this.logFile);
  }

  engineCmd(...args: string[]): Promise<string> {
    return run(this.engine.name, args, this.allEnv, this.logFile);
  }

  /** Starts the named services (podman-compose ignores profiles, so they are always named). */
  up(services: string[]): Promise<string> {
    return this.compose('up', '-d', '--no-build', ...services);
  }

  async down(): Promise<void> {
    await this.compose('down', '-v').catch(() => undefined);
  }

  async container(service: string): Promise<string> {
    const out = await this.engineCmd(
      'ps',
      '-a',
      '-q',
      '--filter',
      `label=com.docker.compose.project=${this.project}`,
      '--filter',
      `label=com.docker.compose.service=${service}`,
    );
    const id = out.trim().split('\n')[0];
    if (!id) throw new Error(`no container for service ${service}`);
    return id;
  }

  async inspect(service: string, format: string): Promise<string> {
    return (await this.engineCmd('inspect', '--format', format, await this.container(service))).trim();
  }

  /** Polls the service's healthcheck until it passes; resolves with the moment it first did. */
  async waitHealthy(service: string, timeoutMs: number): Promise<number> {
    const id = await this.container(service);
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (await healthy(this.engine, id)) return Date.now();
      await sleep(250);
    }
    const logs = await this.engineCmd('logs', '--tail', '40', id).catch((e: Error) => e.message);
    throw new Error(`${service} not healthy within ${timeoutMs} ms; its last log lines:\n${logs}`);
  }

  /** When the service's container last started, by the engine's clock (the same host's). */
  async startedAt(service: string): Promise<number> {
    // Podman's StartedAt is a Go time (formatted here as RFC 3339); docker's is RFC 3339 already.
    const format = this.engine.name === 'podman' ? '{{.State.StartedAt.Format "2006-01-02T15:04:05.000Z07:00"}}' : '{{.State.StartedAt}}';
    return Date.parse(await this.inspect(service, format));
  }
}
