import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createWriteStream, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, NatsConnection, RetentionPolicy, StorageType } from 'nats';
import { ulid } from 'ulid';
import { freePort } from './processes';

const NATS_SERVER = process.env['NATS_SERVER_BIN'] ?? '/usr/sbin/nats-server';

/** The version of the nats-server binary the tests run, e.g. [2, 9, 10]. */
export function natsServerVersion(): [number, number, number] {
  const out = execFileSync(NATS_SERVER, ['--version'], { encoding: 'utf8' });
  const m = /v?(\d+)\.(\d+)\.(\d+)/.exec(out);
  if (!m) throw new Error(`cannot read the nats-server version from "${out.trim()}"`);
  return [Number(m[1]), Number(m[2]), Number(m[3])];
}

export function compareVersions(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < Math.max(a.length, b.length); i++) if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) - (b[i] ?? 0);
  return 0;
}

/** One node of the cluster: its own client port, route port, store directory and log. */
export interface ClusterNode {
  readonly name: string;
  readonly port: number;
  readonly routePort: number;
  readonly dir: string;
  child: ChildProcess | undefined;
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((ok) => child.once('exit', () => ok()));
}

/**
 * Three nats-server processes on free loopback ports forming one JetStream cluster (routes between
 * all three), each with its own store directory under a temporary folder. Streams created with
 * `replicas: 3` are replicated to every node, so one node can be killed and the stream keeps a
 * quorum (2 of 3). `dispose()` kills the nodes and deletes the folder.
 *
 * The nodes only listen on 127.0.0.1, run without authentication and are for tests only.
 */
export class NatsCluster {
  readonly dir = mkdtempSync(join(tmpdir(), 'conclave-nats-cluster-'));
  readonly name = `conclave-test-${ulid().toLowerCase()}`;
  readonly nodes: ClusterNode[] = [];

  constructor(private readonly size = 3) {}

  /** Client URLs of every node, comma-separated (what a client's `servers` takes as a list). */
  get urls(): string[] {
    return this.nodes.map((n) => `nats://127.0.0.1:${n.port}`);
  }

  /** Starts the nodes and resolves once the cluster has a JetStream meta leader and takes an R3 stream. */
  async start(): Promise<this> {
    for (let i = 0; i < this.size; i++) {
      const name = `n${i + 1}`;
      const dir = join(this.dir, name);
      mkdirSync(dir, { recursive: true });
      this.nodes.push({ name, port: await freePort(), routePort: await freePort(), dir, child: undefined });
    }
    for (const node of this.nodes) this.writeConfig(node);
    await Promise.all(this.nodes.map((n) => this.startNode(n)));
    await this.waitForJetStream();
    return this;
  }

  /** The node whose server name is `serverName` (as a stream's `cluster.leader` reports it). */
  node(serverName: string): ClusterNode {
    const node = this.nodes.find((n) => n.name === serverName);
    if (!node) throw new Error(`no cluster node named ${serverName}`);
    return node;
  }

  /**
   * The node that leads `stream` now. Asked again until `withinMs`: during an election the
   * stream has no leader, and a request may time out.
   */
  async leaderOf(nc: NatsConnection, stream: string, withinMs = 15_000): Promise<ClusterNode> {
    const deadline = Date.now() + withinMs;
    for (;;) {
      let why: string;
      try {
        const info = await (await nc.jetstreamManager({ timeout: 2_000 })).streams.info(stream);
        const leader = info.cluster?.leader;
        if (leader) return this.node(leader);
        why = `stream ${stream} has no leader`;
      } catch (err) {
        why = (err as Error).message;
      }
      if (Date.now() > deadline) throw new Error(`no leader of ${stream} found within ${withinMs} ms: ${why}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  /** Kills a node (SIGKILL by default: no flush, no leadership hand-off) and waits for it to exit. */
  async kill(node: ClusterNode, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const child = node.child;
    if (!child) return;
    child.kill(signal);
    await exited(child);
    node.child = undefined;
  }

  /** Starts a stopped node again on its ports and store: it rejoins and catches up from its peers. */
  async restart(node: ClusterNode): Promise<void> {
    if (node.child) return;
    await this.startNode(node);
  }

  /** A client connection that knows every node, so it fails over when the one it uses dies. */
  connect(name = 'cluster test'): Promise<NatsConnection> {
    return connect({ servers: this.urls, name, maxReconnectAttempts: -1, reconnectTimeWait: 250 });
  }

  log(node: ClusterNode): string {
    try {
      return readFileSync(join(node.dir, 'nats-server.log'), 'utf8');
    } catch {
      return '';
    }
  }

  async dispose(): Promise<void> {
    await Promise.all(this.nodes.map((n) => this.kill(n).catch(() => undefined)));
    rmSync(this.dir, { recursive: true, force: true });
  }

  private writeConfig(node: ClusterNode): void {
    const routes = this.nodes.filter((n) => n !== node).map((n) => `nats-route://127.0.0.1:${n.routePort}`);
    const conf = [
      `server_name: ${node.name}`,
      `listen: 127.0.0.1:${node.port}`,
      `jetstream {`,
      `  store_dir: "${join(node.dir, 'store')}"`,
      // Small limits: a test cluster on a shared machine.
      `  max_memory_store: 64MB`,
      `  max_file_store: 2GB`,
      `}`,
      `cluster {`,
      `  name: ${this.name}`,
      `  listen: 127.0.0.1:${node.routePort}`,
      `  routes: [${routes.join(', ')}]`,
      `}`,
      '',
    ].join('\n');
    writeFileSync(join(node.dir, 'nats.conf'), conf);
  }

  private async startNode(node: ClusterNode): Promise<void> {
    const out = createWriteStream(join(node.dir, 'nats-server.log'), { flags: 'a' });
    const child = spawn(NATS_SERVER, ['-c', join(node.dir, 'nats.conf')], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout?.pipe(out);
    child.stderr?.pipe(out);
    node.child = child;
    const deadline = Date.now() + 15_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`nats-server ${node.name} exited with ${child.exitCode}: ${this.log(node).slice(-800)}`);
      try {
        const nc = await connect({ servers: `nats://127.0.0.1:${node.port}`, reconnect: false, timeout: 1_000 });
        await nc.close();
        return;
      } catch {
        if (Date.now() > deadline)
          throw new Error(`nats-server ${node.name} did not answer on ${node.port}: ${this.log(node).slice(-800)}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }

  /** The cluster is usable once an R3 stream can be created (a meta leader exists and every peer is known). */
  private async waitForJetStream(): Promise<void> {
    const nc = await this.connect('cluster readiness probe');
    try {
      const deadline = Date.now() + 30_000;
      const probe = `PROBE_${ulid()}`;
      for (;;) {
        try {
          const jsm = await nc.jetstreamManager({ timeout: 2_000 });
          await jsm.streams.add({
            name: probe,
            subjects: [`probe.${probe.toLowerCase()}`],
            num_replicas: this.size,
            storage: StorageType.Memory,
            retention: RetentionPolicy.Limits,
          });
          await jsm.streams.delete(probe);
          return;
        } catch (err) {
          if (Date.now() > deadline) throw new Error(`the JetStream cluster did not form: ${(err as Error).message}`);
          await new Promise((r) => setTimeout(r, 250));
        }
      }
    } finally {
      await nc.close();
    }
  }
}
