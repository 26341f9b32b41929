/** One sample of the Prometheus text format: `name{labels} value`. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Every sample of a Prometheus text exposition; throws on a line that is not one. */
export function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, k, v] of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[k] = v;
    samples.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return samples;
}

/** The sum of the samples named `metric` whose labels include `labels`. */
export function sumOf(samples: readonly Sample[], metric: string, labels: Record<string, string> = {}): number {
  return samples
    .filter((s) => s.name === metric && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0);
}

/** The value of the first line of a Prometheus text exposition that `line` matches; NaN when none does. */
export function sampleValue(text: string, line: RegExp): number {
  return Number(
    text
      .split('\n')
      .find((l) => line.test(l))
      ?.split(' ')
      .pop() ?? NaN,
  );
}
