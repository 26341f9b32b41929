import { CapabilityRunInput, RunRecord, StructuredOutcome, projectCapabilities, scopeKey } from '@conclave/council-protocol';
import { acpStreamNames } from '@conclave/messaging';
import { MemberDescriptor } from '@conclave/council-protocol';
import { scriptedDescriptor, scriptedGoalContract } from '@conclave/sdk/testing';
import { CouncilHarness } from '../support/council-harness';
import { eventually } from '../support/conclave-harness';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * council:L5 end to end: councils over two domains on apps/council, structured outcomes recorded
 * by the decision owner and an evaluator, and the evaluation reactor's capability estimates,
 * calibration and chair choice changing as spec 15.3, 15.4 and 16 say; a rebuild from the log and
 * the pure projection of the RunRecords reproduce the estimates exactly.
 */
describe('council:L5 outcomes and calibration end to end (apps/council over NATS)', () => {
  const c = new CouncilHarness();
  const owner = 'human-owner';
  const evaluator = 'evaluator-qa';
  const chairs = { a: 'l5-chair-a', b: 'l5-chair-b' };
  const proposers = ['l5-builder', 'l5-skeptic', 'l5-operator'];

  /** Chairs of two model families, so that their synthesizer estimates are separate scopes (15.3). */
  const panel: MemberDescriptor[] = [
    // Proposers of distinct families too: each has its own proposer estimate.
    ...proposers.map((id) => ({ ...scriptedDescriptor(id, id.slice(3)), model_family: `family-${id}`, model_version: 'v1' })),
    { ...scriptedDescriptor(chairs.a, 'chair', ['chair']), model_family: 'family-a', model_version: 'v1' },
    { ...scriptedDescriptor(chairs.b, 'chair', ['chair']), model_family: 'family-b', model_version: 'v1' },
  ];
  const policy = {
    level: 'council:L5',
    stage_timeout_ms: 5_000,
    aggregation: 'schulze',
    chair_selection: 'scoped-capability',
    evaluators: [evaluator],
  };

  beforeAll(async () => {
    await c.start();
    // Clean reviews: no issue, so each run decides after one round.
    c.join(Object.fromEntries([...proposers, chairs.a, chairs.b].map((id) => [id, { score: () => 3 }])));
  });
  afterAll(async () => {
    const jsm = await c.h.nc.jetstreamManager();
    await jsm.streams.delete(acpStreamNames(c.h.run).councilOutcomes).catch(() => undefined);
    await c.stop();
  });

  async function request<T>(command: string, body: unknown): Promise<T> {
    const msg = await c.h.nc.request(`${c.prefix}.v1.${command}`, encoder.encode(JSON.stringify(body)), { timeout: 10_000 });
    return JSON.parse(decoder.decode(msg.data)) as T;
  }

  async function council(domain: string, id: string, members: MemberDescriptor[] = panel): Promise<RunRecord> {
    const runId = await c.client.start({
      goal_contract: scriptedGoalContract({ goal_contract_id: `gc-${id}`, domain }),
      panel: members,
      policy,
      run_id: id,
    });
    const d = await c.decisions.waitFor(runId);
    expect(d.terminal_state).toMatch(/^decided/);
    return c.client.get(runId, owner);
  }

  const chairOf = (r: RunRecord) => r.tasks.find((t) => t.stage === 'synthesis')?.member_id;

  function outcome(r: RunRecord, verdict: 'success' | 'failure', extra: Record<string, unknown> = {}) {
    const d = r.decision_record as NonNullable<RunRecord['decision_record']>;
    return {
      outcome_id: `out-${r.run_id}`,
      decision_id: d.decision_id,
      observed_at: '2026-11-30T12:00:00.000Z',
      source_kind: 'test-result',
      verdict,
      actions: [{ action: d.actions[0], status: 'done' }],
      summary: `${verdict} after rollout`,
      evidence_refs: [`ci-${r.run_id}`],
      ...extra,
    };
  }

  type Estimates = {
    ok: true;
    ended_runs: number;
    estimates: ({ estimate: number; observations: number; lower: number } & Record<string, unknown>)[];
  };
  const estimates = (body: Record<string, unknown> = {}) => request<Estimates>('capability.estimates', body);
  const synth = (e: Estimates, family: string, domain: string) =>
    e.estimates.find((x) => x['model_family'] === family && x['role'] === 'synthesizer' && x['domain'] === domain);

  it('outcomes move the estimates, outweigh peer preference, change the chair, calibrate, and a rebuild reproduces them', async () => {
    // Given no history, both chairs sit at the prior in payments; the seed picks one.
    const r1 = await council('payments', 'l5_pay_1');
    const first = chairOf(r1) as string;
    expect(r1.chair_selection).toMatchObject({ policy: 'scoped-capability', chair: first });
    expect(r1.domain).toBe('payments');
    const other = first === chairs.a ? chairs.b : chairs.a;
    const familyOf = (id: string) => (id === chairs.a ? 'family-a' : 'family-b');

    // Peer preference alone lifts the chosen proposer above the prior (1.25 / 2.25).
    const chosen = r1.lineage.find((l) => l.versions.includes((r1.decision_record as { selected_path: string }).selected_path));
    expect(chosen).toBeDefined();
    const proposerOf = (e: Estimates) =>
      e.estimates.find(
        (x) => x['role'] === 'proposer' && x['domain'] === 'payments' && x['model_family'] === `family-${chosen?.author_member_id}`,
      );
    const before = await eventually(
      async () => {
        const e = await estimates();
        return proposerOf(e) ? e : undefined;
      },
      10_000,
      'the first run in the estimates',
    );
    expect(proposerOf(before)?.estimate).toBeCloseTo(1.25 / 2.25, 12);
    // Each estimate is keyed by model family × version × role × domain × tools and carries an estimate, an uncertainty and a count.
    expect(proposerOf(before)).toMatchObject({
      model_family: `family-${chosen?.author_member_id}`,
      model_version: 'v1',
      role: 'proposer',
      domain: 'payments',
      tools: expect.any(String),
      estimate: expect.any(Number),
      uncertainty: expect.any(Number),
      observations: 1,
    });
    expect(proposerOf(before)?.['uncertainty']).toBeGreaterThan(0);

    // When a stranger records an outcome, it is refused; the owner's failure is stored.
    const refused = await request<{ ok: false; error: { code: string } }>('outcome.record', {
      run_id: r1.run_id,
      outcome: outcome(r1, 'failure'),
      actor: 'mallory',
    });
    expect(refused).toMatchObject({ ok: false, error: { code: 'NOT_AUTHORIZED_ROLE' } });
    expect(await request('outcome.record', { run_id: r1.run_id, outcome: outcome(r1, 'failure'), actor: owner })).toMatchObject({
      ok: true,
      outcome_id: `out-${r1.run_id}`,
    });
    const after1 = await eventually(
      async () => {
        const e = await estimates();
        const evidence = synth(e, familyOf(first), 'payments')?.['evidence'] as { outcome: { count: number } } | undefined;
        return evidence?.outcome.count === 1 ? e : undefined;
      },
      10_000,
      'the failure in the estimates',
    );
    // Then the chair that failed falls below the prior (Beta(1, 2): 1/3) ...
    expect(synth(after1, familyOf(first), 'payments')?.estimate).toBeCloseTo(1 / 3, 12);
    // ... and the chosen proposer's failed outcome (weight 1) outweighs its peer preference (0.25): 1.25 / 3.25.
    expect(proposerOf(after1)?.estimate).toBeCloseTo(1.25 / 3.25, 12);

    // When the next payments council starts, the other chair is chosen (higher lower bound).
    const r2 = await council('payments', 'l5_pay_2');
    expect(chairOf(r2)).toBe(other);
    expect(r2.chair_selection?.chair).toBe(other);
    expect(r2.chair_selection?.reason).toContain('payments');
    // Its scores, computed at the start: the failed chair at its estimate read above (1/3 on one
    // outcome), the other, never observed in payments, at the prior.
    const scoreOf = (id: string) => r2.chair_selection?.scores.find((x) => x.member_id === id);
    expect(synth(after1, familyOf(other), 'payments')).toBeUndefined();
    expect(scoreOf(first)).toMatchObject({ observations: synth(after1, familyOf(first), 'payments')?.observations });
    expect(scoreOf(first)?.observations).toBe(1);
    expect(scoreOf(first)?.estimate).toBeCloseTo(1 / 3, 12);
    expect(scoreOf(other)).toMatchObject({ estimate: 0.5, observations: 0 });
    expect(scoreOf(other)?.lower).toBeGreaterThan(scoreOf(first)?.lower as number);

    // A search council is scoped apart: the payments failure does not touch search (15.3).
    const r3 = await council('search', 'l5_search_1');
    expect(synth(await estimates({ domain: 'search' }), familyOf(first), 'search')).toBeUndefined();
    expect(r3.chair_selection?.scores.every((s) => s.observations === 0)).toBe(true);

    // An evaluator records success on the second payments decision.
    expect(await request('outcome.record', { run_id: r2.run_id, outcome: outcome(r2, 'success'), actor: evaluator })).toMatchObject({
      ok: true,
    });
    const after2 = await eventually(
      async () => {
        const e = await estimates();
        return synth(e, familyOf(other), 'payments')?.observations === 1 ? e : undefined;
      },
      10_000,
      'the success in the estimates',
    );
    expect(synth(after2, familyOf(other), 'payments')?.estimate).toBeCloseTo(2 / 3, 12);

    // Calibration: the chairs' DecisionRecord confidence (medium = 0.5) scored against the verdicts.
    const cal = await request<{
      ok: true;
      calibration: {
        member_id: string;
        role: string;
        domain: string;
        brier: number;
        log_loss: number;
        reliability: unknown[];
        count: number;
      }[];
    }>('capability.calibration', { domain: 'payments' });
    const chairCal = cal.calibration.filter((s) => s.role === 'synthesizer');
    expect(chairCal.map((s) => [s.member_id, s.count, s.brier]).sort()).toEqual([
      [chairs.a, 1, 0.25],
      [chairs.b, 1, 0.25],
    ]);
    // Log loss −ln 0.5 for both; reliability: the medium bin observed 0 for the failed chair, 1 for the other.
    for (const s of chairCal) expect(s.log_loss).toBeCloseTo(Math.LN2, 12);
    expect(Object.fromEntries(chairCal.map((s) => [s.member_id, s.reliability]))).toEqual({
      [first]: [{ confidence: 'medium', probability: 0.5, count: 1, observed_frequency: 0 }],
      [other]: [{ confidence: 'medium', probability: 0.5, count: 1, observed_frequency: 1 }],
    });

    // Rebuild from the log: the same estimates, exactly; and the pure projection of the RunRecords agrees.
    const live = await estimates();
    const rebuilt = await estimates({ rebuild: true });
    expect(rebuilt.estimates).toEqual(live.estimates);
    const records = await Promise.all([r1, r2, r3].map((r) => c.client.get(r.run_id, owner)));
    // The structured outcomes are on the runs' RunRecords as their owner reads them (council.v1.get, from the service's state of each run).
    expect(records.map((r) => r.outcomes.map((o) => [o.outcome_id, o.structured?.verdict, o.structured?.recorder_role]))).toEqual([
      [[`out-${r1.run_id}`, 'failure', 'decision-owner']],
      [[`out-${r2.run_id}`, 'success', 'evaluator']],
      [],
    ]);
    const pure = projectCapabilities(
      records.map(
        (record): CapabilityRunInput => ({
          record,
          domain: record.domain as string,
          outcomes: record.outcomes.map((o) => o.structured).filter((o): o is StructuredOutcome => o !== undefined),
        }),
      ),
    );
    for (const e of live.estimates) expect(pure.estimates[scopeKey(e as never)]).toEqual(e);
    expect(Object.keys(pure.estimates)).toHaveLength(live.estimates.length);

    // Both outcomes are on the outcomes stream, structured.
    const consumer = await c.h.nc.jetstream().consumers.get(acpStreamNames(c.h.run).councilOutcomes);
    const seen: { run_id: string; structured: { verdict: string; recorder_role: string } }[] = [];
    const messages = await consumer.fetch({ max_messages: 10, expires: 2_000 });
    for await (const m of messages) seen.push(m.json());
    expect(seen.map((m) => [m.run_id, m.structured.verdict, m.structured.recorder_role])).toEqual([
      [r1.run_id, 'failure', 'decision-owner'],
      [r2.run_id, 'success', 'evaluator'],
    ]);
  });

  it('an outcome naming someone else as recorder, or a known verdict without evidence, is refused with its field', async () => {
    const r = await council('ledger', 'l5_ledger_1');
    const forged = await request('outcome.record', {
      run_id: r.run_id,
      outcome: outcome(r, 'success', { recorded_by: evaluator }),
      actor: owner,
    });
    expect(forged).toMatchObject({ ok: false, error: { code: 'NOT_AUTHORIZED_ROLE', field: 'outcome.recorded_by' } });
    const bare = await request('outcome.record', { run_id: r.run_id, outcome: outcome(r, 'success', { evidence_refs: [] }), actor: owner });
    expect(bare).toMatchObject({ ok: false, error: { code: 'SCHEMA_VIOLATION', field: 'outcome.evidence_refs' } });
    // The explicit unknown needs no evidence and scores nothing.
    const unknown = await request('outcome.record', {
      run_id: r.run_id,
      outcome: outcome(r, 'failure', { verdict: 'unknown', source_kind: 'unknown', evidence_refs: [] }),
      actor: owner,
    });
    expect(unknown).toMatchObject({ ok: true });
    expect((await c.client.get(r.run_id, owner)).outcomes.map((o) => o.structured?.verdict)).toEqual(['unknown']);
    // A rebuild folds the log, unknown outcome included: the run is counted, and nothing in it scores an outcome.
    const rebuilt = await estimates({ domain: 'ledger', rebuild: true });
    expect(rebuilt).toMatchObject({ ended_runs: 1 });
    expect(rebuilt.estimates.length).toBeGreaterThan(0);
    for (const e of rebuilt.estimates) expect(e['evidence']).toMatchObject({ outcome: { count: 0 } });
    expect(rebuilt.estimates.filter((e) => e['role'] === 'synthesizer')).toEqual([]);
    const cal = await request<{ calibration: { domain: string }[] }>('capability.calibration', { domain: 'ledger' });
    expect(cal.calibration).toEqual([]);
  });

  it('a model version change: the chair’s estimate built on v1 is not carried to v2, which starts at the prior; v1 stays, superseded; a rebuild agrees', async () => {
    const domain = 'versioning';
    // One chair, the same participant on two model versions: its synthesizer profile is family-a in this domain.
    const on = (version: string): MemberDescriptor[] => [
      ...panel.filter((m) => proposers.includes(m.member_id)),
      { ...scriptedDescriptor(chairs.a, 'chair', ['chair']), model_family: 'family-a', model_version: version },
    ];
    type Estimate = Estimates['estimates'][number];
    const version = (e: Estimates, v: string): Estimate | undefined =>
      e.estimates.find(
        (x) => x['model_family'] === 'family-a' && x['model_version'] === v && x['role'] === 'synthesizer' && x['domain'] === domain,
      );
    const settled = (test: (e: Estimates) => boolean, what: string) =>
      eventually(
        async () => {
          const e = await estimates({ domain });
          return test(e) ? e : undefined;
        },
        10_000,
        what,
      );

    // Given two decisions chaired on v1, both successes.
    for (const id of ['l5_ver_1', 'l5_ver_2']) {
      const r = await council(domain, id, on('v1'));
      expect(chairOf(r)).toBe(chairs.a);
      expect(await request('outcome.record', { run_id: r.run_id, outcome: outcome(r, 'success'), actor: owner })).toMatchObject({
        ok: true,
      });
    }
    const v1Only = await settled((e) => version(e, 'v1')?.observations === 2, 'two v1 outcomes in the estimates');
    // Beta(1, 1) and two successes: Beta(3, 1).
    expect(version(v1Only, 'v1')).toMatchObject({ alpha: 3, beta: 1, estimate: 0.75, observations: 2 });

    // When the chair runs on v2: at the start its scoped capability is the prior, with no observation carried.
    const r3 = await council(domain, 'l5_ver_3', on('v2'));
    expect(r3.chair_selection?.scores.find((x) => x.member_id === chairs.a)).toMatchObject({ estimate: 0.5, observations: 0 });
    expect(await request('outcome.record', { run_id: r3.run_id, outcome: outcome(r3, 'failure'), actor: owner })).toMatchObject({
      ok: true,
    });

    // Then v2's estimate holds v2's evidence alone (Beta(1, 2) after one failure), and v1's stands, marked superseded.
    const after = await settled((e) => version(e, 'v2')?.observations === 1, 'the v2 outcome in the estimates');
    expect(version(after, 'v2')).toMatchObject({ alpha: 1, beta: 2, observations: 1, carried_from: null });
    expect(version(after, 'v2')?.estimate).toBeCloseTo(1 / 3, 12);
    expect(version(after, 'v1')).toMatchObject({ alpha: 3, beta: 1, observations: 2, superseded_by: 'v2' });
    // And a rebuild from the log gives the same.
    expect((await estimates({ domain, rebuild: true })).estimates).toEqual(after.estimates);
  });
});
