import { CapabilityRunInput, capabilityOf, projectCapabilities } from './capability';
import { calibrationReport, runForecasts } from './calibration';
import { selectChair } from './chair-selection';
import { concentrationAudit } from './concentration';
import { memberFixture, runRecordFixture } from './evaluation-fixtures';
import { StructuredOutcome } from './outcomes';

/**
 * The L4/L5 loop without a controller: each run's chair comes from the capability projection of
 * the runs before it; outcomes arrive; the projection, the chair and the audit follow. A rebuild
 * of the same history reproduces every estimate and every chair choice.
 */
const ann = memberFixture('ann', 'model-a', 'v1');
const bob = memberFixture('bob', 'model-b', 'v1');
const cat = memberFixture('cat', 'model-c', 'v1');
const panel = [ann, bob, cat];

/** Whether a decision chaired by `chair` in `domain` works out: ann is good at infra, bob at legal. */
const works = (chair: string, domain: string) => (domain === 'infra' ? chair === 'ann' : chair === 'bob');

function outcome(decision_id: string, success: boolean, at: string): StructuredOutcome {
  return {
    outcome_id: `${decision_id}:outcome`,
    decision_id,
    observed_at: at,
    recorded_by: 'owner-1',
    recorder_role: 'decision-owner',
    source_kind: 'operational-observation',
    verdict: success ? 'success' : 'failure',
    actions: [],
    expected_outcomes: [],
    reversal_signals: [],
    stop_loss_conditions: [],
    summary: success ? 'worked' : 'rolled back',
    evidence_refs: ['ops-log'],
  };
}

function simulate(domains: string[]): { history: CapabilityRunInput[]; chairs: string[] } {
  const history: CapabilityRunInput[] = [];
  const chairs: string[] = [];
  domains.forEach((domain, i) => {
    const day = String(i + 1).padStart(2, '0');
    const capabilities = projectCapabilities(history);
    const selection = selectChair(
      { policy: 'exploration', rate: 0.25, min_observations: 2, base: 'scoped-capability' },
      {
        panel,
        domain,
        seed: `run-${i}`,
        capabilities,
        previous_chairs: chairs,
      },
    );
    const chair = selection.chair as string;
    chairs.push(chair);
    const record = runRecordFixture({
      run_id: `run-${i}`,
      at: `2025-01-${day}T10:00:00Z`,
      members: panel,
      candidates: panel.map((m) => ({ id: `run-${i}-${m.member_id}`, author: m.member_id })),
      chair,
      selected: `run-${i}-${chair}`,
      confidence: 'high',
    });
    const decisionId = (record.decision_record as NonNullable<typeof record.decision_record>).decision_id;
    history.push({ record, domain, outcomes: [outcome(decisionId, works(chair, domain), `2025-01-${day}T20:00:00Z`)] });
  });
  return { history, chairs };
}

describe('council:L4 + L5 loop: outcomes change estimates and chair choice; a rebuild reproduces them', () => {
  const domains = Array.from({ length: 24 }, (_, i) => (i % 2 === 0 ? 'infra' : 'legal'));
  const { history, chairs } = simulate(domains);

  it('given alternating infra and legal runs, when outcomes accrue, then the late infra chairs are mostly ann and the late legal chairs mostly bob', () => {
    const late = chairs.slice(12).map((c, i) => [domains[12 + i], c]);
    const infra = late.filter(([d]) => d === 'infra').map(([, c]) => c);
    const legal = late.filter(([d]) => d === 'legal').map(([, c]) => c);
    expect(infra.filter((c) => c === 'ann').length).toBeGreaterThan(infra.length / 2);
    expect(legal.filter((c) => c === 'bob').length).toBeGreaterThan(legal.length / 2);
  });

  it('given the history, when projected, then the synthesizer estimates are domain-scoped: ann high in infra, low or unseen in legal', () => {
    const p = projectCapabilities(history);
    expect(capabilityOf(p, ann, 'synthesizer', 'infra').estimate).toBeGreaterThan(0.7);
    expect(capabilityOf(p, ann, 'synthesizer', 'legal').estimate).toBeLessThanOrEqual(0.5);
    expect(capabilityOf(p, bob, 'synthesizer', 'legal').estimate).toBeGreaterThan(0.7);
  });

  it('given the same log, when rebuilt from scratch, then the estimates and every chair choice are identical', () => {
    const again = simulate(domains);
    expect(again.chairs).toEqual(chairs);
    expect(projectCapabilities(JSON.parse(JSON.stringify(again.history)))).toEqual(projectCapabilities(history));
  });

  it('given a failed decision, when the next run of that domain picks its chair, then the failed chair is not picked again (its lower bound fell)', () => {
    const failures = history.map((h, i) => [i, h.domain, chairs[i], h.outcomes[0].verdict] as const).filter(([, , , v]) => v === 'failure');
    expect(failures.length).toBeGreaterThan(0);
    for (const [i, domain, chair] of failures) {
      const next = domains.findIndex((d, j) => j > i && d === domain);
      if (next >= 0) expect(chairs[next]).not.toBe(chair);
    }
  });

  it('given always-"high" decisions, when calibrated, then a chair in its good domain scores (1 − 0.75)² and one outside it (0.75)²', () => {
    const report = calibrationReport(history.flatMap((h) => runForecasts(h).forecasts)).filter((s) => s.role === 'synthesizer');
    expect(report.some((s) => !works(s.member_id, s.domain))).toBe(true);
    for (const s of report) expect(s.brier).toBeCloseTo(works(s.member_id, s.domain) ? 0.0625 : 0.5625, 12);
  });

  it('given the history, when audited per domain and month, then each domain shows its dominant chair', () => {
    const audit = concentrationAudit(history.map((h) => ({ record: h.record, domain: h.domain })));
    const infra = audit.cells.find((c) => c.domain === 'infra');
    expect(infra?.dimensions.chairs.shares[0].who).toBe('ann');
    expect(audit.cells.find((c) => c.domain === 'legal')?.dimensions.chairs.shares[0].who).toBe('bob');
  });
});
