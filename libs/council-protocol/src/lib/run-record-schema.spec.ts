import fc from 'fast-check';
import { COUNCIL_LEVELS, CouncilLevel } from './contracts';
import { buildRunRecord } from './run-record';
import { RUN_RECORD_SCHEMAS, runRecordSchemaProblems } from './run-record-schema';
import { validateRunRecord } from './single-agent-council';
import { StartedRun } from './state';
import { defaultBehaviour, drive, highIssue, startCommand } from '../testing/council-fixtures';

/** The RunRecord JSON Schema per level (spec 8.7, checklist 22), and its use by the offline validator. */
const controllerRecord = () => {
  const d = drive(
    startCommand(),
    defaultBehaviour({ issues: (_r, round) => (round === 1 ? [highIssue()] : []), score: (_r, round) => 2 + round }),
  );
  return JSON.parse(JSON.stringify(buildRunRecord(d.state as StartedRun))) as Record<string, unknown>;
};
const L3_ONLY = ['budgets', 'timing', 'policy', 'controller_decisions', 'rounds', 'checkpoints', 'failures'];

describe('RunRecord JSON Schema per level (spec 8.7, checklist 22)', () => {
  it('given a record the controller wrote, when checked against every level schema, then it meets each', () => {
    const rec = controllerRecord();
    for (const level of COUNCIL_LEVELS) expect([level, runRecordSchemaProblems(rec, level)]).toEqual([level, []]);
  });

  it('given a record without the L3 sections, when checked, then it meets council:L0 to L2 and council:L3 names each missing section', () => {
    const rec = controllerRecord();
    for (const s of L3_ONLY) delete rec[s];
    for (const level of ['council:L0', 'council:L1', 'council:L2'] as const) expect(runRecordSchemaProblems(rec, level)).toEqual([]);
    const l3 = runRecordSchemaProblems(rec, 'council:L3');
    expect(l3.map((p) => `${p.code} ${p.path}`).sort()).toEqual(L3_ONLY.map((s) => `MISSING_SECTION ${s}`).sort());
  });

  it('given a council:L3 record whose sections have the wrong shape, when validated offline, then the schema problems name the field', () => {
    const rec = { ...controllerRecord(), failures: [{ member_id: 'member-builder-01' }], timing: 'yesterday', level: 'council:L3' };
    const problems = validateRunRecord(rec).problems.map((p) => `${p.code} ${p.path}`);
    expect(problems).toContain('MISSING_SECTION failures[0].reason');
    expect(problems).toContain('SCHEMA_VIOLATION timing');
  });

  it('given the same gap seen by the schema and by a rule, when validated, then it is reported once', () => {
    const rec = controllerRecord();
    delete rec['participants'];
    const problems = validateRunRecord(rec).problems.filter((p) => p.path === 'participants');
    expect(problems.map((p) => p.code)).toEqual(['MISSING_SECTION']);
  });

  it('property: a level requires everything the levels below it require (a record valid at a level is valid below it)', () => {
    const base = controllerRecord();
    const sections = Object.keys(base);
    fc.assert(
      fc.property(fc.subarray(sections), fc.constantFrom(...COUNCIL_LEVELS), (dropped, level: CouncilLevel) => {
        const rec = Object.fromEntries(Object.entries(base).filter(([k]) => !dropped.includes(k)));
        if (runRecordSchemaProblems(rec, level).length > 0) return;
        for (const lower of COUNCIL_LEVELS.slice(0, COUNCIL_LEVELS.indexOf(level))) expect(runRecordSchemaProblems(rec, lower)).toEqual([]);
      }),
    );
  });

  it('given the schemas, then they are plain JSON (shippable as files) and each names its level', () => {
    for (const level of COUNCIL_LEVELS) {
      expect(JSON.parse(JSON.stringify(RUN_RECORD_SCHEMAS[level]))).toEqual(RUN_RECORD_SCHEMAS[level]);
      expect(RUN_RECORD_SCHEMAS[level].$id).toBe(`council.v1/run-record/${level}`);
    }
  });
});
