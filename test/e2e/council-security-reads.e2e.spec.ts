import { acpStreamNames } from '@conclave/messaging';
import { REGISTRY_PATTERNS } from '@conclave/registry-protocol';
import { ed25519Signer } from '@conclave/sdk';
import { scriptedGoalContract, scriptedPanel, ScriptedMember } from '@conclave/sdk/testing';
import { eventually, SecureConclaveHarness } from '../support/conclave-harness';
import { CouncilDecisionCollector } from '../support/council-harness';

interface Reply {
  ok: boolean;
  error?: { code: string; field?: string; message?: string };
  [key: string]: unknown;
}

interface Estimates {
  estimates: { domain: string; model_family: string }[];
  ended_runs: number;
  rebuilt: boolean;
}
interface Calibration {
  calibration: { domain: string; member_id: string }[];
  forecasts: number;
}
interface Audit {
  audit: { cells: { domain: string; run_ids: string[] }[]; skipped: { run_id: string }[] };
}

/**
 * The Council's evaluation read models (`council.v1.capability.estimates`, `.calibration`,
 * `.concentration`) attacked with CONCLAVE_AUTH_MODE=required. They tell, per domain, how each
 * model family and member did, whose forecasts held and who dominates; reading them follows ACP's
 * rule for reads (RFC 14.2): a domain needs a grant on it, and without a domain the reply holds
 * only the domains the reader may read, counts included. The administrator role reads nothing
 * more than its grants (it only allows the rebuild).
 *
 * Runs (each ended, with a structured outcome when decided): in risk one decided and one
 * interrupted, in risk.credit one decided, in ops one decided and one interrupted.
 * Registry: rk-owner (grant on risk), op-owner (grant on ops), mallory (grant on ops only),
 * carol (grant on risk.credit only), alice (grants on risk and ops), root (administrator, grant
 * on ops), admin (the bootstrap administrator, no grant), and the panels.
 */
describe('Council security: who reads the evaluation read models (authentication required, over NATS)', () => {
  const h = new SecureConclaveHarness();
  const prefix = `c${h.prefix}`;
  const council = (pattern: string) => `${prefix}.${pattern}`;
  const members: ScriptedMember[] = [];
  let decisions: CouncilDecisionCollector;

  const panelOf = (tag: string) => ({ proposers: ['builder', 'skeptic', 'operator'].map((l) => `${tag}-${l}`), chair: `${tag}-chair` });
  const idsOf = (p: { proposers: string[]; chair: string }) => [...p.proposers, p.chair];
  // A model family per member, so that no estimate of one domain's panel looks like another's.
  const descriptors = (p: { proposers: string[]; chair: string }) =>
    scriptedPanel(p).map((m) => ({ ...m, model_family: `fam-${m.member_id}`, model_version: 'v1' }));
  const panels = { rk: panelOf('rk'), rs: panelOf('rs'), rc: panelOf('rc'), op: panelOf('op'), os: panelOf('os') };
  const runs = {
    riskDecided: `rk1_${h.run}`,
    riskStopped: `rk2_${h.run}`,
    creditDecided: `rc1_${h.run}`,
    opsDecided: `op1_${h.run}`,
    opsStopped: `op2_${h.run}`,
  };
  /** What of risk (and risk.credit) must never reach a reader without a grant there. */
  const riskSecrets = [
    'risk',
    runs.riskDecided,
    runs.riskStopped,
    runs.creditDecided,
    ...[...idsOf(panels.rk), ...idsOf(panels.rs), ...idsOf(panels.rc)],
  ];
  const SUBJECTS = ['v1.capability.estimates', 'v1.capability.calibration', 'v1.capability.concentration'] as const;
  const pem = (id: string) => h.privateKeyOf(id);

  beforeAll(async () => {
    await h.start('intake', 'audit', 'council');
    await h.seed([
      { participant_id: 'rk-owner', grants: [{ domain: 'risk', domain_authority: 0.9, trust_score: 0.9 }] },
      { participant_id: 'op-owner', grants: [{ domain: 'ops', domain_authority: 0.9, trust_score: 0.9 }] },
      { participant_id: 'mallory', grants: [{ domain: 'ops', domain_authority: 0.5, trust_score: 0.5 }] },
      { participant_id: 'carol', grants: [{ domain: 'risk.credit', domain_authority: 0.5, trust_score: 0.5 }] },
      {
        participant_id: 'alice',
        grants: [
          { domain: 'risk', domain_authority: 0.9, trust_score: 0.9 },
          { domain: 'ops', domain_authority: 0.9, trust_score: 0.9 },
        ],
      },
      { participant_id: 'root', roles: ['administrator'], grants: [{ domain: 'ops', domain_authority: 0.5, trust_score: 0.5 }] },
      ...Object.values(panels)
        .flatMap(idsOf)
        .map((participant_id) => ({ participant_id })),
    ]);
    decisions = await CouncilDecisionCollector.open(h, acpStreamNames(h.run).councilDecisions);
    // Clean reviews: no issue, so each seated run decides after one round.
    for (const id of [...idsOf(panels.rk), ...idsOf(panels.rc), ...idsOf(panels.op)])
      members.push(new ScriptedMember(h.nc, id, { score: () => 3 }, prefix, ed25519Signer(id, pem(id))).start());

    await Promise.all([
      decided('rk-owner', runs.riskDecided, 'risk', panels.rk),
      decided('rk-owner', runs.creditDecided, 'risk.credit', panels.rc),
      decided('op-owner', runs.opsDecided, 'ops', panels.op),
      stopped('rk-owner', runs.riskStopped, 'risk', panels.rs),
      stopped('op-owner', runs.opsStopped, 'ops', panels.os),
    ]);
    // The evaluation reactor has folded all five ended runs and the three outcomes.
    await eventually(
      async () => {
        const all = (await signed('alice', council('v1.capability.calibration'), {})).reply as unknown as Calibration;
        const ended = (await signed('alice', council('v1.capability.estimates'), {})).reply as unknown as Estimates;
        const scored = new Set(all.calibration.map((c) => c.domain));
        return ended.ended_runs === 5 && ['risk', 'risk.credit', 'ops'].every((d) => scored.has(d)) ? true : undefined;
      },
      20_000,
      'five ended runs and three outcomes in the read models',
    );
  }, 90_000);

  afterAll(async () => {
    await Promise.all(members.map((m) => m.stop()));
    await decisions?.close();
    const jsm = await h.nc.jetstreamManager();
    await jsm.streams.delete(`KV_${h.env['CONCLAVE_EVENT_STREAM']}_COUNCIL_LEASES`).catch(() => undefined);
    await jsm.streams.delete(acpStreamNames(h.run).councilOutcomes).catch(() => undefined);
    await h.stop();
  });

  /** A request signed by `id`: the reply as parsed and as sent, and the body's hash (as audited). */
  const signed = (id: string | undefined, subject: string, body: unknown) => h.signedRequest<Reply>(id, subject, body);

  const start = (owner: string, runId: string, domain: string, panel: { proposers: string[]; chair: string }) =>
    signed(owner, council('v1.start'), {
      run_id: runId,
      goal_contract: scriptedGoalContract({ goal_contract_id: `gc-${runId}`, decision_owner: owner, domain }),
      panel: descriptors(panel),
      policy: { level: 'council:L5', aggregation: 'borda', stage_timeout_ms: 20_000 },
    });

  /** A run that decides, and its owner's structured outcome of the decision (so it is scored). */
  async function decided(owner: string, runId: string, domain: string, panel: { proposers: string[]; chair: string }) {
    expect((await start(owner, runId, domain, panel)).reply).toMatchObject({ ok: true, run_id: runId });
    const d = await decisions.waitFor(runId, 40_000);
    expect(d.terminal_state).toMatch(/^decided/);
    const decision = d.decision_record as { decision_id: string; actions: string[] };
    const recorded = await signed(owner, council('v1.outcome.record'), {
      run_id: runId,
      outcome: {
        outcome_id: `out-${runId}`,
        decision_id: decision.decision_id,
        observed_at: '2026-11-30T12:00:00.000Z',
        source_kind: 'operational-observation',
        verdict: 'success',
        actions: [{ action: decision.actions[0], status: 'done' }],
        summary: 'held for a week',
        evidence_refs: [`dash-${runId}`],
      },
    });
    expect(recorded.reply).toMatchObject({ ok: true });
  }

  /** A run nobody answers, interrupted by its owner: ended, not decided (the audit's `skipped`). */
  async function stopped(owner: string, runId: string, domain: string, panel: { proposers: string[]; chair: string }) {
    expect((await start(owner, runId, domain, panel)).reply).toMatchObject({ ok: true, run_id: runId });
    expect((await signed(owner, council('v1.interrupt'), { run_id: runId, reason: 'stopped' })).reply).toMatchObject({ ok: true });
    expect((await decisions.waitFor(runId, 40_000)).terminal_state).not.toMatch(/^decided/);
  }

  /** The three read models as `reader` asks them, with `domain` when given (the audit over all time). */
  async function readModels(reader: string, extra: Record<string, unknown> = {}) {
    const [estimates, calibration, concentration] = await Promise.all(
      SUBJECTS.map((s) => signed(reader, council(s), s === 'v1.capability.concentration' ? { period: 'all', ...extra } : extra)),
    );
    for (const r of [estimates, calibration, concentration]) expect(r.reply).toMatchObject({ ok: true });
    return {
      estimates: estimates.reply as unknown as Estimates,
      calibration: calibration.reply as unknown as Calibration,
      audit: (concentration.reply as unknown as Audit).audit,
      text: [estimates.text, calibration.text, concentration.text].join('\n'),
    };
  }

  const domainsOf = (m: Awaited<ReturnType<typeof readModels>>) => [
    ...new Set([...m.estimates.estimates, ...m.calibration.calibration, ...m.audit.cells].map((e) => e.domain)),
  ];

  /** Waits for the audit chain to hold this refusal (matched by the refused body's hash). */
  const audited = (actor: string, command: string, hash: string) =>
    eventually(
      async () => (await h.auditEntries({ actor, action: `rejected:${command}` })).find((e) => e.payload_hash === hash),
      10_000,
      `the refused ${command} of ${actor} audited`,
    );

  it('given ended runs with outcomes in risk and ops, when mallory (grant on ops only) asks the estimates, the calibration and the concentration audit of risk, then each is FORBIDDEN naming domain, nothing of risk is in the reply, and each refusal is on the audit chain in her name', async () => {
    for (const subject of SUBJECTS) {
      const r = await signed(
        'mallory',
        council(subject),
        subject.endsWith('concentration') ? { domain: 'risk', period: 'all' } : { domain: 'risk' },
      );
      expect({ subject, reply: r.reply }).toMatchObject({ subject, reply: { ok: false, error: { code: 'FORBIDDEN', field: 'domain' } } });
      for (const secret of riskSecrets.slice(1)) expect(r.text).not.toContain(secret);
      expect(r.reply['estimates'] ?? r.reply['calibration'] ?? r.reply['audit']).toBeUndefined();
      const entry = await audited('mallory', subject.replace('v1.', 'council.'), r.hash);
      expect(entry).toMatchObject({ outcome: 'rejected', authenticated: true, error: { code: 'FORBIDDEN', field: 'domain' } });
    }
  });

  it('given the same runs, when mallory asks the three read models with no domain (or declaring alice as actor), then only ops is in them: no risk domain, member or run id anywhere in the replies, and ended_runs, forecasts, cells and skipped runs are the ops figures alone', async () => {
    const opsAsAlice = await readModels('alice', { domain: 'ops' });
    expect(opsAsAlice.estimates.ended_runs).toBe(2);
    expect(opsAsAlice.calibration.forecasts).toBeGreaterThan(0);

    for (const extra of [{}, { actor: 'alice' }]) {
      const seen = await readModels('mallory', extra);
      for (const secret of riskSecrets) expect(seen.text).not.toContain(secret);
      expect(domainsOf(seen)).toEqual(['ops']);
      expect(seen.estimates.ended_runs).toBe(2);
      expect(seen.estimates.estimates).toEqual(opsAsAlice.estimates.estimates);
      expect(seen.calibration).toEqual({ ok: true, ...opsAsAlice.calibration });
      expect(seen.audit.cells.map((c) => c.run_ids)).toEqual([[runs.opsDecided]]);
      expect(seen.audit.skipped.map((s) => s.run_id)).toEqual([runs.opsStopped]);
    }
  });

  it('given carol with a grant on risk.credit only, when she asks for risk, a prefix of it or a wildcard, then FORBIDDEN naming domain and audited; with risk.credit or no domain she reads risk.credit alone, never its parent risk', async () => {
    for (const domain of ['risk', 'ris', 'risk.', 'r', '>', '*']) {
      const r = await signed('carol', council('v1.capability.concentration'), { domain, period: 'all' });
      expect({ domain, reply: r.reply }).toMatchObject({ domain, reply: { ok: false, error: { code: 'FORBIDDEN', field: 'domain' } } });
      expect(r.text).not.toContain(runs.riskDecided);
      expect(r.text).not.toContain(runs.riskStopped);
      if (domain === 'risk') await audited('carol', 'council.capability.concentration', r.hash);
    }
    for (const extra of [{}, { domain: 'risk.credit' }]) {
      const seen = await readModels('carol', extra);
      expect(domainsOf(seen)).toEqual(['risk.credit']);
      for (const secret of [runs.riskDecided, runs.riskStopped, runs.opsDecided, runs.opsStopped, ...idsOf(panels.rk), ...idsOf(panels.op)])
        expect(seen.text).not.toContain(secret);
      expect(seen.estimates.ended_runs).toBe(1);
      expect(seen.audit.cells.map((c) => c.run_ids)).toEqual([[runs.creditDecided]]);
      expect(seen.audit.skipped).toEqual([]);
    }
  });

  it('given no signature, when any of the three read models is asked, with a domain or without, then UNAUTHENTICATED, no read model in the reply, and the refusal audited as not authenticated', async () => {
    for (const subject of SUBJECTS)
      for (const body of [{}, { domain: 'ops' }, { domain: 'risk' }]) {
        const r = await signed(undefined, council(subject), body);
        expect({ subject, body, reply: r.reply }).toMatchObject({
          subject,
          body,
          reply: { ok: false, error: { code: 'UNAUTHENTICATED' } },
        });
        expect(r.reply['estimates'] ?? r.reply['calibration'] ?? r.reply['audit']).toBeUndefined();
        for (const secret of [...riskSecrets.slice(1), runs.opsDecided, runs.opsStopped]) expect(r.text).not.toContain(secret);
        if (Object.keys(body).length === 0) {
          const entry = await audited('anonymous', subject.replace('v1.', 'council.'), r.hash);
          expect(entry).toMatchObject({ outcome: 'rejected', authenticated: false, error: { code: 'UNAUTHENTICATED' } });
        }
      }
  });

  it('given alice with grants on risk and ops, when she asks with no domain, then she reads risk, risk.credit and ops, and each count is the sum of the three domains', async () => {
    const all = await readModels('alice');
    expect(domainsOf(all).sort()).toEqual(['ops', 'risk', 'risk.credit']);
    const per = await Promise.all(['risk', 'risk.credit', 'ops'].map((domain) => readModels('alice', { domain })));
    const sum = (f: (m: (typeof per)[number]) => number) => per.reduce((n, m) => n + f(m), 0);
    expect(all.estimates.ended_runs).toBe(5);
    expect(sum((m) => m.estimates.ended_runs)).toBe(5);
    expect(all.calibration.forecasts).toBe(sum((m) => m.calibration.forecasts));
    expect(all.estimates.estimates).toHaveLength(sum((m) => m.estimates.estimates.length));
    expect(all.audit.cells.flatMap((c) => c.run_ids).sort()).toEqual([runs.creditDecided, runs.opsDecided, runs.riskDecided].sort());
    expect(all.audit.skipped.map((s) => s.run_id).sort()).toEqual([runs.opsStopped, runs.riskStopped].sort());
  });

  it('given administrators, when they read, then the role reads no more than their grants: the bootstrap administrator (no grant) is FORBIDDEN on risk and sees no domain, rebuilt or live; root (grant on ops) rebuilds ops alone, as mallory reads it live', async () => {
    const forbidden = await signed('admin', council('v1.capability.estimates'), { domain: 'risk', rebuild: true });
    expect(forbidden.reply).toMatchObject({ ok: false, error: { code: 'FORBIDDEN', field: 'domain' } });
    await audited('admin', 'council.capability.estimates', forbidden.hash);
    for (const rebuild of [false, true]) {
      const r = await signed('admin', council('v1.capability.estimates'), { rebuild });
      expect(r.reply).toMatchObject({ ok: true, rebuilt: rebuild, estimates: [], ended_runs: 0 });
    }
    const nothing = await readModels('admin');
    expect(domainsOf(nothing)).toEqual([]);
    expect(nothing.calibration.forecasts).toBe(0);
    expect(nothing.audit.skipped).toEqual([]);

    const rebuilt = await signed('root', council('v1.capability.estimates'), { rebuild: true });
    const live = await signed('mallory', council('v1.capability.estimates'), {});
    for (const secret of riskSecrets) expect(rebuilt.text).not.toContain(secret);
    expect(rebuilt.reply).toMatchObject({ ok: true, rebuilt: true, ended_runs: 2, estimates: live.reply['estimates'] });
    // Granting itself a domain is a registry command: on the audit chain like every other.
    await h.admin.call(REGISTRY_PATTERNS.grant, { participant_id: 'admin', domain: 'risk', domain_authority: 0.1, trust_score: 0.1 });
    const granted = await eventually(
      async () => {
        const r = await signed('admin', council('v1.capability.estimates'), { domain: 'risk' });
        return r.reply.ok ? r : undefined;
      },
      10_000,
      'the grant in the council service',
    );
    expect(granted.reply).toMatchObject({ ok: true, ended_runs: 2 });
  });
});
