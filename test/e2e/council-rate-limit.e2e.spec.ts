import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { validateVerdict, type MemberVerdict } from '@conclave/council-protocol';
// eslint-disable-next-line @nx/enforce-module-boundaries -- the CLI's commands are exercised in-process, as in council-l4.e2e
import { registerCouncilCommands } from '../../apps/cli/src/commands/council.command';
import { SecureConclaveHarness } from '../support/conclave-harness';
import { parseExposition, sumOf } from '../support/metrics-text';

const PER_SECOND = 1;
const BURST = 3;
const ANSWERS = 10;

/**
 * A member answering faster than its allowance, as a member in any language would see it: the
 * council service's verdict on a refused answer says whether to send it again. A RATE_LIMITED
 * refusal comes before the nonce is spent or anything is recorded, so the same answer is still
 * good after the hint: `retry: true` with `retry_after_ms`. Any other refusal stays final.
 */
describe('Council requests refused RATE_LIMITED: member answers and the CLI (authentication required, real NATS)', () => {
  const h = new SecureConclaveHarness({
    CONCLAVE_RATE_LIMIT_PER_SECOND: String(PER_SECOND),
    CONCLAVE_RATE_LIMIT_BURST: String(BURST),
  });
  const member = 'rl-member';
  const reader = 'rl-reader';
  const keysDir = mkdtempSync(join(tmpdir(), 'conclave-rl-keys-'));

  beforeAll(async () => {
    await h.start('intake', 'council');
    await h.seed([{ participant_id: member }, { participant_id: reader }]);
  });
  afterAll(async () => {
    rmSync(keysDir, { recursive: true, force: true });
    await h.stop();
  });

  /** One `conclave` invocation in process, its own program and connection, as a shell would run it. */
  async function cli(...args: string[]): Promise<void> {
    const program = new Command()
      .option('--nats <url>')
      .option('--json', '', false)
      .option('--participant <id>')
      .option('--key-file <path>')
      .exitOverride();
    registerCouncilCommands(program);
    await program.parseAsync(['node', 'conclave', ...args]);
  }

  it(`given a member allowed ${BURST} at once, when it sends ${ANSWERS} signed answers at once, then each refusal past the allowance is RATE_LIMITED with retry: true and a positive retry_after_ms, and the others keep retry: false`, async () => {
    const subject = `c${h.prefix}.v1.answers.${member}`;
    const replies = await Promise.all(
      Array.from({ length: ANSWERS }, (_, i) =>
        h.signedRequest<MemberVerdict>(member, subject, {
          run_id: 'no-such-run',
          task_id: `task-${i}`,
          ok: false,
          error: { code: 'CANNOT', message: 'cannot do it' },
        }),
      ),
    );
    const verdicts = replies.map((r) => r.reply);
    // Every verdict is what the member API's schema describes.
    for (const v of verdicts) expect(validateVerdict(v)).toEqual(v);
    const limited = verdicts.filter((v) => !v.ok && v.error.code === 'RATE_LIMITED');
    const others = verdicts.filter((v) => v.ok || v.error.code !== 'RATE_LIMITED');
    expect(limited.length).toBeGreaterThanOrEqual(ANSWERS - BURST - 1);
    for (const v of limited) {
      expect(v).toMatchObject({ ok: false, retry: true });
      expect(!v.ok && v.error.retry_after_ms).toBeGreaterThan(0);
    }
    expect(others.length).toBeGreaterThan(0);
    for (const v of others) expect(v.retry).toBe(false);
  });

  it(`given a reader allowed ${BURST} at once, when it runs \`conclave council estimates\` ${ANSWERS} times at once, then every run answers: each RATE_LIMITED refusal was resent after its hint`, async () => {
    const keyFile = join(keysDir, `${reader}.pem`);
    writeFileSync(keyFile, h.privateKeyOf(reader), { mode: 0o600 });
    const lines: string[] = [];
    const log = jest.spyOn(console, 'log').mockImplementation((line: string) => void lines.push(line));
    try {
      const runs = Array.from({ length: ANSWERS }, () =>
        cli('--json', '--participant', reader, '--key-file', keyFile, 'council', '--council-prefix', `c${h.prefix}`, 'estimates'),
      );
      await Promise.all(runs);
    } finally {
      log.mockRestore();
    }
    expect(lines).toHaveLength(ANSWERS);
    for (const line of lines) expect(JSON.parse(line)).toEqual({ ok: true, estimates: [], ended_runs: 0, rebuilt: false });
    // The refusals happened: the service answered RATE_LIMITED, and the CLI sent those again.
    const council = h.instances.find((i) => i.name === 'council')!;
    const samples = parseExposition(await (await fetch(`${await council.app.getUrl()}/metrics`)).text());
    expect(
      sumOf(samples, 'conclave_api_errors_total', { subject: 'v1.capability.estimates', code: 'RATE_LIMITED' }),
    ).toBeGreaterThanOrEqual(ANSWERS - BURST - 1);
  });
});
