import { ANSWER_SCHEMAS, memberApiSchemas, RUN_RECORD_SCHEMAS } from '@conclave/council-protocol';
import { councilSubjects } from '@conclave/messaging';
import { candidateFor, cleanBehaviour, ScriptedMember, scriptedGoalContract, scriptedPanel } from '@conclave/sdk/testing';
import { CouncilHarness } from '../support/council-harness';

/**
 * The member API end to end (apps/council over NATS): tasks wait in each member's durable queue,
 * so a member that is offline for a few seconds mid-stage still contributes; answers are content
 * only; the schemas are served; a run that ends tells members to stop.
 */
describe('Council member API end to end (durable task queues, content-only answers)', () => {
  const c = new CouncilHarness();
  let n = 0;
  const tag = () => `mb${++n}`;
  const enc = (x: unknown) => new TextEncoder().encode(JSON.stringify(x));
  const dec = (b: Uint8Array) => JSON.parse(new TextDecoder().decode(b));

  beforeAll(() => c.start());
  afterAll(() => c.stop());
  afterEach(() => c.stopMembers());

  it('a member offline for a few seconds mid-stage (its review task issued while it is away) still contributes; the run decides without failures', async () => {
    const t = tag();
    const proposers = [`${t}-builder`, `${t}-skeptic`, `${t}-operator`];
    const [builder, skeptic, operator] = proposers;
    const chair = `${t}-chair`;
    // The builder's proposal waits until the skeptic is gone, so the review stage opens without it.
    let skepticGone!: () => void;
    const gone = new Promise<void>((r) => (skepticGone = r));
    const members = c.join({
      ...Object.fromEntries([...proposers, chair].map((id) => [id, cleanBehaviour()])),
      [builder]: cleanBehaviour({ hold: (x) => (x.stage === 'proposal' ? gone : undefined) }),
    });
    const runId = await c.client.start({
      goal_contract: scriptedGoalContract(),
      panel: scriptedPanel({ proposers, chair }),
      policy: { stage_timeout_ms: 20_000 },
    });
    // The skeptic goes offline as soon as its proposal is accepted.
    await members[skeptic].until(() => members[skeptic].verdicts.some((v) => v.task.stage === 'proposal' && v.verdict.ok), 15_000);
    await members[skeptic].stop();
    skepticGone();
    // The review stage opens without it; the others review; the stage waits for the skeptic.
    const reviewed = (id: string) => members[id].verdicts.some((v) => v.task.stage === 'review' && v.verdict.ok);
    await ScriptedMember.until(
      [members[builder], members[operator]],
      () => reviewed(builder) && reviewed(operator),
      15_000,
      'the others review',
    );
    expect(members[skeptic].tasks.some((x) => x.stage === 'review')).toBe(false);
    await new Promise((r) => setTimeout(r, 2_000));

    // Back online (a new session of the same member): the queued review task is delivered.
    const back = c.join({ [skeptic]: cleanBehaviour() })[skeptic];
    const d = await c.decisions.waitFor(runId, 40_000);
    expect(d.terminal_state).toMatch(/^decided/);
    expect(back.verdicts.some((v) => v.task.stage === 'review' && v.verdict.ok)).toBe(true);
    const run = await c.client.get(runId, 'human-owner');
    expect(run.failures).toEqual([]);
    expect(run.artifacts.reviews.some((r) => r.reviewer_member_id === skeptic)).toBe(true);
  });

  it('a member that drops out while working on a task hands it back; its next session answers it and the run decides', async () => {
    const t = tag();
    const proposers = [`${t}-builder`, `${t}-skeptic`, `${t}-operator`];
    const skeptic = proposers[1];
    const chair = `${t}-chair`;
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const members = c.join({
      ...Object.fromEntries([...proposers, chair].map((id) => [id, cleanBehaviour()])),
      [skeptic]: cleanBehaviour({ hold: (x) => (x.stage === 'review' ? held : undefined) }),
    });
    const runId = await c.client.start({
      goal_contract: scriptedGoalContract(),
      panel: scriptedPanel({ proposers, chair }),
      policy: { stage_timeout_ms: 20_000 },
    });
    await members[skeptic].until(() => members[skeptic].tasks.some((x) => x.stage === 'review'), 15_000, 'the skeptic to start reviewing');
    const reviewTask = members[skeptic].tasks.find((x) => x.stage === 'review')?.task_id as string;
    await members[skeptic].stop();
    release();
    expect(members[skeptic].aborted.get(reviewTask)).toBe('member stopping');

    const back = c.join({ [skeptic]: cleanBehaviour() })[skeptic];
    const d = await c.decisions.waitFor(runId, 40_000);
    expect(d.terminal_state).toMatch(/^decided/);
    expect(back.requests.get(reviewTask)).toBe(1);
    expect(back.verdicts.some((v) => v.task.task_id === reviewTask && v.verdict.ok)).toBe(true);
    expect((await c.client.get(runId)).failures).toEqual([]);
  });

  it('members answer content only: the RunRecord carries the ids the controller stamped from the task ids', async () => {
    const t = tag();
    const proposers = [`${t}-builder`, `${t}-skeptic`, `${t}-operator`];
    const chair = `${t}-chair`;
    const members = c.join(Object.fromEntries([...proposers, chair].map((id) => [id, cleanBehaviour()])));
    const runId = await c.client.start({ goal_contract: scriptedGoalContract(), panel: scriptedPanel({ proposers, chair }), policy: {} });
    const d = await c.decisions.waitFor(runId, 40_000);
    expect(d.terminal_state).toMatch(/^decided/);
    const run = await c.client.get(runId, 'human-owner');
    for (const cand of run.artifacts.candidates) {
      expect(cand.candidate_id.startsWith(`${runId}:`)).toBe(true);
      expect(cand.candidate_id.endsWith(`:${cand.author_member_id}`)).toBe(true);
    }
    expect(run.artifacts.reviews.length).toBeGreaterThan(0);
    for (const r of run.artifacts.reviews) expect(r.review_id).toMatch(new RegExp(`^${runId}:\\d+:review:${r.reviewer_member_id}:\\d+$`));
    const record = d.decision_record as { decision_id: string; decision_owner: string; goal_contract_id: string };
    expect(record).toMatchObject({
      decision_id: `${runId}:2:synthesis:${chair}`,
      decision_owner: 'human-owner',
      goal_contract_id: 'gc-001',
    });
    // What the members sent had none of those fields.
    for (const m of Object.values(members)) for (const v of m.verdicts) expect(v.verdict.ok).toBe(true);
  });

  it('a member in any language: reads the schemas on <prefix>.v1.schemas, and an answer with an unknown field is refused by name and recorded', async () => {
    const subjects = councilSubjects(c.prefix);
    const reply = dec((await c.h.nc.request(subjects.schemas, enc({}), { timeout: 5_000 })).data);
    expect(reply).toEqual({ ok: true, schemas: JSON.parse(JSON.stringify({ ...memberApiSchemas(), run_record: RUN_RECORD_SCHEMAS })) });
    expect(Object.keys(reply.schemas.answers.proposal.properties)).toEqual(Object.keys(ANSWER_SCHEMAS.proposal.properties));

    const t = tag();
    const proposers = [`${t}-builder`, `${t}-skeptic`, `${t}-operator`];
    const raw = proposers[2];
    const chair = `${t}-chair`;
    c.join(Object.fromEntries([proposers[0], proposers[1], chair].map((id) => [id, cleanBehaviour()])));
    const runId = await c.client.start({
      goal_contract: scriptedGoalContract(),
      panel: scriptedPanel({ proposers, chair }),
      policy: { stage_timeout_ms: 20_000 },
    });
    const taskId = `${runId}:1:proposal:${raw}`;
    const answer = (artifact: unknown) =>
      c.h.nc.request(subjects.answer(raw), enc({ run_id: runId, task_id: taskId, ok: true, artifact }), { timeout: 5_000 });
    const content = candidateFor(
      { run_id: runId, task_id: taskId, goal_contract: scriptedGoalContract() } as Parameters<typeof candidateFor>[0],
      raw,
    );
    const refused = dec((await answer({ ...content, sentiment: 'upbeat' })).data);
    expect(refused).toMatchObject({ ok: false, retry: true, error: { code: 'SCHEMA_VIOLATION', field: 'sentiment' } });
    const mismatch = dec((await answer({ ...content, author_member_id: proposers[0] })).data);
    expect(mismatch).toMatchObject({ ok: false, retry: true, error: { code: 'STAMPED_FIELD_MISMATCH', field: 'author_member_id' } });
    expect(dec((await answer(content)).data)).toEqual({ ok: true, retry: false });
    // The same answer again (a member retrying after a lost verdict) is accepted once.
    expect(dec((await answer(content)).data)).toEqual({ ok: true, retry: false });
    // From here an SDK session answers for it (its proposal task, still queued, is accepted again once).
    c.join({ [raw]: cleanBehaviour() });

    const d = await c.decisions.waitFor(runId, 40_000);
    expect(d.terminal_state).toMatch(/^decided/);
    const run = await c.client.get(runId, 'human-owner');
    expect(run.refusals.filter((r) => r.task_id === taskId).map((r) => [r.error.code, r.error.field])).toEqual([
      ['SCHEMA_VIOLATION', 'sentiment'],
      ['STAMPED_FIELD_MISMATCH', 'author_member_id'],
    ]);
  });

  it('a run interrupted while members work: each open task gets a cancel notice and its handler signal aborts', async () => {
    const t = tag();
    const proposers = [`${t}-builder`, `${t}-skeptic`, `${t}-operator`];
    const chair = `${t}-chair`;
    const never = new Promise<void>(() => undefined);
    const members = c.join(
      Object.fromEntries(
        [...proposers, chair].map((id) => [id, cleanBehaviour({ hold: (x) => (x.stage === 'review' ? never : undefined) })]),
      ),
    );
    const runId = await c.client.start({
      goal_contract: scriptedGoalContract(),
      panel: scriptedPanel({ proposers, chair }),
      policy: { stage_timeout_ms: 20_000 },
    });
    const all = Object.values(members);
    const reviewing = () => proposers.every((id) => members[id].tasks.some((x) => x.stage === 'review'));
    await ScriptedMember.until(all, reviewing, 15_000, 'every proposer reviewing');
    await c.client.interrupt({ run_id: runId, reason: 'owner stops the run', actor: 'human-owner' });
    const cancelled = () => proposers.every((id) => members[id].cancels.length === 1);
    await ScriptedMember.until(all, cancelled, 15_000, 'a cancel notice for every open task');
    for (const id of proposers) {
      const review = members[id].tasks.find((x) => x.stage === 'review')?.task_id as string;
      expect(members[id].cancels[0]).toMatchObject({ notice: 'cancel', run_id: runId, task_id: review, reason: 'run-terminated' });
      expect(members[id].aborted.get(review)).toBe('cancelled: run-terminated');
      expect(members[id].verdicts.some((v) => v.task.task_id === review)).toBe(false);
    }
  });
});
