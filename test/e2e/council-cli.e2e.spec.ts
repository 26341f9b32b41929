import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { registerCouncilCommands } from '../../apps/cli/src/commands/council.command';
import { runCouncilDemo } from '../../apps/cli/src/commands/demo.command';
import { CouncilHarness } from '../support/council-harness';

/** The CLI's council parts: the demo's small council against the real service, and `council validate` offline. */
describe('conclave CLI: council demo and council validate', () => {
  const c = new CouncilHarness();
  beforeAll(() => c.start());
  afterAll(() => c.stop());

  async function cli(...args: string[]): Promise<{ out: string[]; exitCode: number | undefined }> {
    const out: string[] = [];
    const log = jest.spyOn(console, 'log').mockImplementation((line: string) => void out.push(line));
    const before = process.exitCode;
    try {
      const program = new Command().option('--nats <url>').option('--json', '', false).exitOverride();
      registerCouncilCommands(program);
      await program.parseAsync(['node', 'conclave', ...args]);
      return { out, exitCode: process.exitCode as number | undefined };
    } finally {
      log.mockRestore();
      process.exitCode = before;
    }
  }

  it('the demo council prints a DecisionRecord with its dissent; its RunRecord passes `council validate`', async () => {
    const lines: string[] = [];
    const d = await runCouncilDemo(c.h.nc, (l) => lines.push(l), { prefix: c.prefix, streamSuffix: c.h.run, timeoutMs: 20_000 });
    expect(d.terminal_state).toBe('decided-with-dissent');
    expect(lines.join('\n')).toMatch(/COUNCIL DECIDED-WITH-DISSENT/);
    expect(lines.some((l) => l.includes('dissent:') && l.includes('skeptic'))).toBe(true);

    const dir = mkdtempSync(join(tmpdir(), 'council-'));
    const file = join(dir, 'run.json');
    writeFileSync(file, JSON.stringify(await c.client.get(d.run_id, 'human-owner')));
    const ok = await cli('council', 'validate', file);
    expect(ok.exitCode).toBe(0);
    expect(ok.out[0]).toMatch(/^VALID RunRecord/);

    const broken = JSON.parse(JSON.stringify(await c.client.get(d.run_id, 'human-owner')));
    broken.artifacts.candidates[0].author_member_id = undefined;
    writeFileSync(file, JSON.stringify(broken));
    const bad = await cli('council', 'validate', file);
    expect(bad.exitCode).toBe(3);
    expect(bad.out[0]).toMatch(/^INVALID RunRecord/);
    // The problems are listed, each with its code and path.
    expect(bad.out.slice(2)).toEqual(expect.arrayContaining([expect.stringMatching(/^ {2}[A-Z_]+ at artifacts\.candidates\[0\]/)]));
  });
});
