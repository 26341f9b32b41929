/** Small helpers shared by the benchmarks: env numbers, percentiles, formatting, process memory. */
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import type { NatsConnection } from 'nats';

export function int(name: string, fallback: number): number {
  const v = process.env[name];
  return v ? Number(v.replace(/_/g, '')) : fallback;
}

export const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] : NaN;
};

export const fmt = (n: number, d = 1): string => (Number.isFinite(n) ? n.toLocaleString('en-US', { maximumFractionDigits: d }) : String(n));

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Resident and peak resident memory of a process, in MiB (Linux /proc). */
export function rssOf(pid: number | undefined): { rss: number; peak: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
    return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
  } catch {
    return { rss: NaN, peak: NaN };
  }
}

/** "met" or "missed" for a goal, with the measured/goal ratio. */
export function verdict(measured: number, goal: number, higherIsBetter: boolean): string {
  if (!Number.isFinite(measured)) return 'not measured';
  const ok = higherIsBetter ? measured >= goal : measured < goal;
  return `${ok ? 'met' : 'MISSED'} (${fmt(measured / goal, 2)}x the goal)`;
}

/** Figures collected for the summary at the end of a run. */
export const summary: string[] = [];
export function report(line: string): void {
  console.log(line);
}

/** CPU time (user + system) a process has used, in ms (Linux /proc; clock ticks of 10 ms). */
export function cpuMsOf(pid: number | undefined): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return NaN;
  }
}

/** The value of the first series `name` in a Prometheus text exposition whose labels include `labels`. */
export function promValue(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(name) || (line[name.length] !== '{' && line[name.length] !== ' ')) continue;
    const close = line.indexOf('}');
    const labelText = line[name.length] === '{' ? line.slice(name.length + 1, close) : '';
    const found = new Map([...labelText.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([k, v]) => found.get(k) === v))
      return Number(line.slice(close >= 0 ? close + 1 : name.length).trim());
  }
  return undefined;
}

/** Load average over 1, 5 and 15 minutes, as `uptime` prints it. */
export function loadAverage(): string {
  return loadavg()
    .map((l) => l.toFixed(2))
    .join(', ');
}

export type StreamUsage = Map<string, { messages: number; bytes: number }>;

/** Messages and bytes of every JetStream stream on the server, from stream info. */
export async function streamUsage(nc: NatsConnection): Promise<StreamUsage> {
  const jsm = await nc.jetstreamManager();
  const out: StreamUsage = new Map();
  for await (const si of jsm.streams.list()) out.set(si.config.name, { messages: si.state.messages, bytes: si.state.bytes });
  return out;
}
