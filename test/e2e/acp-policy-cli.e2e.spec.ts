import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { ConclaveError } from '@conclave/sdk';
import { registerParticipantCommands } from '../../apps/cli/src/commands/participants.command';
import { registerPolicyCommands } from '../../apps/cli/src/commands/policies.command';
import { addNatsLoginOptions } from '../../apps/cli/src/nats-connection';
import { NATS_URL, SecureConclaveHarness } from '../support/conclave-harness';

/**
 * `conclave policies set <file>` and `conclave policies get <domain>` with authentication
 * required: the commands as main.ts registers them, parsed in this process with their output
 * captured. An administrator's signature sets a document; another participant's is refused.
 */
describe('conclave policies set / get (signed, against the running intake)', () => {
  const h = new SecureConclaveHarness();
  const dir = mkdtempSync(join(tmpdir(), 'conclave-policies-'));
  const document = {
    schema_version: '1.0',
    domain: 'ops',
    version: 1,
    quorum_policies: [{ kind: 'two-of-us', min_responses: 2 }],
    default_quorum_policy: { kind: 'two-of-us' },
  };

  beforeAll(async () => {
    await h.start('intake');
    await h.seed([{ participant_id: 'agent-x', grants: [{ domain: 'ops', domain_authority: 0.5, trust_score: 0.5 }] }]);
    for (const id of ['admin', 'agent-x']) writeFileSync(join(dir, `${id}.pem`), h.keys.get(id)!.privateKeyPem);
    writeFileSync(join(dir, 'ops.json'), JSON.stringify(document));
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await h.stop();
  });

  /** Runs `conclave <args>` signed as `participant`; returns what it printed. */
  async function conclave(participant: string, ...args: string[]): Promise<string[]> {
    const program = new Command()
      .exitOverride()
      .option('--nats <url>', 'NATS server URL', NATS_URL)
      .option('--prefix <prefix>', 'ACP subject prefix', 'acp')
      .option('--stream-suffix <suffix>', 'suffix of the JetStream stream names', '')
      .option('--json', 'machine-readable output', false);
    addNatsLoginOptions(program, {});
    registerParticipantCommands(program);
    registerPolicyCommands(program);
    const lines: string[] = [];
    const log = jest.spyOn(console, 'log').mockImplementation((line: string) => void lines.push(line));
    try {
      const key = join(dir, `${participant}.pem`);
      await program.parseAsync(['--prefix', h.prefix, '--stream-suffix', h.run, '--participant', participant, '--key-file', key, ...args], {
        from: 'user',
      });
    } finally {
      log.mockRestore();
    }
    return lines;
  }

  it('an administrator sets version 1 from a file; get shows it as governing ops.deploy', async () => {
    expect(await conclave('admin', 'policies', 'set', join(dir, 'ops.json'))).toEqual(['policy of ops is now at version 1']);
    const [json] = await conclave('admin', '--json', 'policies', 'get', 'ops.deploy');
    expect(JSON.parse(json)).toEqual({ ok: true, policy: null, governing: document });
    const [v1] = await conclave('agent-x', '--json', 'policies', 'get', 'ops', '--version', '1');
    expect(JSON.parse(v1).policy).toEqual(document);
  });

  it('another participant signing the same command is refused: FORBIDDEN, and nothing changes', async () => {
    writeFileSync(join(dir, 'ops-v2.json'), JSON.stringify({ ...document, version: 2, default_quorum_policy: { kind: 'count' } }));
    await expect(conclave('agent-x', 'policies', 'set', join(dir, 'ops-v2.json'))).rejects.toThrow(ConclaveError);
    await expect(conclave('agent-x', 'policies', 'set', join(dir, 'ops-v2.json'))).rejects.toMatchObject({ code: 'FORBIDDEN' });
    const [json] = await conclave('admin', '--json', 'policies', 'get', 'ops');
    expect(JSON.parse(json).policy.version).toBe(1);
  });
});
