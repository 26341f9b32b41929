/**
 * One arm of an overhead round in a process of its own (bench/e2e-overhead.ts,
 * BENCH_OVERHEAD_MODE=concurrent or isolated): deploys BENCH_OVERHEAD_ARM, warms up, says `ready`, measures on `go`,
 * says `measured` with its figures, stops its deployment and exits.
 */
import { deploy, PROPOSALS, type ArmMessage } from './e2e-overhead';

const arm = process.env['BENCH_OVERHEAD_ARM'] as NonNullable<ArmMessage['arm']>;
const n = Number(process.env['BENCH_OVERHEAD_ROUND'] ?? 1);
const say = (m: ArmMessage) => new Promise<void>((resolve) => process.send?.(m, () => resolve()));

async function main(): Promise<void> {
  const deployment = await deploy(arm);
  try {
    const go = new Promise<void>((resolve) => process.on('message', (m: ArmMessage) => m.type === 'go' && resolve()));
    await say({ type: 'ready', arm });
    await go;
    await say({ type: 'measured', arm, round: await deployment.measure(n, PROPOSALS) });
  } finally {
    await deployment.stop();
  }
}

main().then(
  () => process.exit(0),
  async (err: Error) => {
    await say({ type: 'failed', arm, error: err.stack ?? err.message });
    process.exit(1);
  },
);
