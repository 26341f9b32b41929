import { ed25519Signer } from '@conclave/sdk';
import { runCouncilDemo } from '../../apps/cli/src/commands/demo.command';
import { SecureConclaveHarness } from '../support/conclave-harness';

/**
 * The demo's council with authentication required, as the compose stack and Kubernetes run it:
 * the owner signs `council.v1.start`, each member signs its answers, and the run decides with its
 * dissent, as it does with authentication off.
 */
describe('the Council demo with authentication required', () => {
  const h = new SecureConclaveHarness();

  beforeAll(async () => {
    await h.start('intake', 'council');
    await h.seed(
      ['demo-owner', 'demo-chair', 'demo-builder', 'demo-skeptic', 'demo-operator'].map((participant_id) => ({
        participant_id,
        ...(participant_id === 'demo-owner' ? { grants: [{ domain: 'general', domain_authority: 0.9, trust_score: 0.9 }] } : {}),
      })),
    );
  });
  afterAll(async () => {
    const jsm = await h.nc.jetstreamManager();
    await jsm.streams.delete(`KV_${h.env['CONCLAVE_EVENT_STREAM']}_COUNCIL_LEASES`).catch(() => undefined);
    await h.stop();
  });

  it('given a registered owner who signs, when the demo council runs, then it decides and keeps the skeptic dissent', async () => {
    const lines: string[] = [];
    const d = await runCouncilDemo(h.nc, (l) => lines.push(l), {
      prefix: `c${h.prefix}`,
      streamSuffix: h.run,
      timeoutMs: 20_000,
      owner: 'demo-owner',
      signer: ed25519Signer('demo-owner', h.keys.get('demo-owner')!.privateKeyPem),
      memberSigner: (id) => ed25519Signer(id, h.keys.get(id)!.privateKeyPem),
    });
    expect(d.terminal_state).toMatch(/^decided/);
    expect(lines.join('\n')).toContain('dissent:');
    expect(lines.join('\n')).toContain('skeptic: dual writes may still drift');
  });

  it('given no signature, when the demo council starts, then it is refused as unauthenticated', async () => {
    await expect(
      runCouncilDemo(h.nc, () => undefined, { prefix: `c${h.prefix}`, streamSuffix: h.run, timeoutMs: 5_000, owner: 'demo-owner' }),
    ).rejects.toMatchObject({
      code: 'UNAUTHENTICATED',
    });
  });
});
