/**
 * Where the CPU of a profiled overhead round went (BENCH_OVERHEAD_PROFILE): the share of busy
 * samples in tracing code (OpenTelemetry and the two tracing.ts helpers), metrics code
 * (prom-client and the metrics*.ts files), the garbage collector, and everything else. A sample in
 * Node's own or native code counts for the first application or library frame that called it,
 * so the cost of what tracing asks of Node (clocks, async context) is counted as tracing.
 * Wall-clock A/B figures move by tens of percent on a shared machine; these shares do not
 * depend on what else runs.
 *
 *   node -r @swc-node/register bench/profile-shares.ts <dir of .cpuprofile files>
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

interface CallFrame {
  functionName: string;
  url: string;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

type Share = 'tracing' | 'metrics' | 'gc' | 'other';

function classify(frame: CallFrame): Share | 'idle' | undefined {
  const { url, functionName } = frame;
  if (functionName === '(idle)') return 'idle';
  if (functionName === '(garbage collector)') return 'gc';
  if (!url || url.startsWith('node:')) return undefined;
  if (url.includes('@opentelemetry') || url.endsWith('/tracing.ts')) return 'tracing';
  if (url.includes('prom-client') || /\/metrics[^/]*\.ts$/.test(url)) return 'metrics';
  return 'other';
}

export function shares(profile: Profile): Record<Share, number> & { busyMs: number } {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const owner = (id: number): Share | 'idle' => {
    for (let x: number | undefined = id; x !== undefined; x = parent.get(x)) {
      const frame = byId.get(x)?.callFrame;
      const c = frame && classify(frame);
      if (c) return c;
    }
    return 'other';
  };
  const time: Record<Share, number> = { tracing: 0, metrics: 0, gc: 0, other: 0 };
  profile.samples.forEach((id, i) => {
    const c = owner(id);
    if (c !== 'idle') time[c] += profile.timeDeltas[i] ?? 0;
  });
  const busy = time.tracing + time.metrics + time.gc + time.other;
  return {
    tracing: (100 * time.tracing) / busy,
    metrics: (100 * time.metrics) / busy,
    gc: (100 * time.gc) / busy,
    other: (100 * time.other) / busy,
    busyMs: busy / 1000,
  };
}

if (require.main === module) {
  const dir = process.argv[2];
  if (!dir) throw new Error('usage: profile-shares.ts <dir of .cpuprofile files>');
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith('.cpuprofile'))
    .sort()) {
    const s = shares(JSON.parse(readFileSync(join(dir, file), 'utf8')) as Profile);
    console.log(
      `${file}: busy ${(s.busyMs / 1000).toFixed(1)} s; tracing ${s.tracing.toFixed(1)}%, metrics ${s.metrics.toFixed(1)}%, GC ${s.gc.toFixed(1)}%, other ${s.other.toFixed(1)}%`,
    );
  }
}
