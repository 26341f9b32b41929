import { connect, createInbox, NatsConnection } from 'nats';
import { CouncilMember, CouncilTask } from './council-member';
import { ScriptedMember, scriptedGoalContract } from './scripted-members';

/** The member side of the task protocol, against the real NATS server (the controller played by the test). */
describe('CouncilMember over NATS', () => {
  let nc: NatsConnection;
  const prefix = `sdk${Date.now().toString(36)}`;
  const enc = (x: unknown) => new TextEncoder().encode(JSON.stringify(x));
  const dec = (b: Uint8Array) => JSON.parse(new TextDecoder().decode(b));
  const task = (stage: CouncilTask['stage'], member = 'm-1'): CouncilTask => ({
    run_id: 'run1',
    task_id: `run1:1:${stage}:${member}`,
    stage,
    role: 'proposer',
    deadline: new Date(Date.now() + 5_000).toISOString(),
    goal_contract: scriptedGoalContract(),
    inputs: {},
  });

  beforeAll(async () => (nc = await connect({ servers: process.env['NATS_URL'] ?? 'nats://127.0.0.1:4222' })));
  afterAll(() => nc.drain());

  it('given a handler per stage, when a task arrives, then the reply is the artifact, or {ok: true, artifact, usage} when usage is reported', async () => {
    const m = new CouncilMember({ nc, memberId: 'm-1', prefix })
      .onPropose((t) => ({ candidate_id: `c-${t.task_id}` }))
      .onReview((_t, ctx) => (ctx.reportUsage({ tokens: 42 }), [{ review_id: 'r1' }]))
      .start();
    try {
      expect(dec((await nc.request(`${prefix}.v1.tasks.m-1`, enc(task('proposal')))).data)).toEqual({
        candidate_id: 'c-run1:1:proposal:m-1',
      });
      expect(dec((await nc.request(`${prefix}.v1.tasks.m-1`, enc(task('review')))).data)).toEqual({
        ok: true,
        artifact: [{ review_id: 'r1' }],
        usage: { tokens: 42 },
      });
      expect(dec((await nc.request(`${prefix}.v1.tasks.m-1`, enc(task('synthesis')))).data)).toMatchObject({
        ok: false,
        error: { code: 'UNSUPPORTED_STAGE' },
      });
    } finally {
      await m.stop();
    }
  });

  it('given a handler that throws, when a task arrives, then it reports a failure {ok: false, error}', async () => {
    const m = new CouncilMember({ nc, memberId: 'm-2', prefix })
      .onPropose(() => {
        throw new Error('provider down');
      })
      .start();
    try {
      expect(dec((await nc.request(`${prefix}.v1.tasks.m-2`, enc(task('proposal', 'm-2')))).data)).toEqual({
        ok: false,
        error: { code: 'MEMBER_FAILURE', message: 'provider down' },
      });
    } finally {
      await m.stop();
    }
  });

  it('given a refused answer, when the controller replies with the error, then the member answers again with task.refusal set', async () => {
    const seen: (string | undefined)[] = [];
    const m = new CouncilMember({ nc, memberId: 'm-3', prefix })
      .onPropose((t) => (seen.push(t.refusal?.code), { fixed: t.refusal !== undefined }))
      .start();
    try {
      const first = await nc.request(`${prefix}.v1.tasks.m-3`, enc(task('proposal', 'm-3')));
      expect(dec(first.data)).toEqual({ fixed: false });
      const inbox = createInbox();
      const sub = nc.subscribe(inbox, { max: 1 });
      first.respond(enc({ ok: false, error: { code: 'SCHEMA_VIOLATION', message: 'bad', field: 'claims' } }), { reply: inbox });
      for await (const second of sub) {
        expect(dec(second.data)).toEqual({ fixed: true });
        second.respond(enc({ ok: true }));
      }
      expect(seen).toEqual([undefined, 'SCHEMA_VIOLATION']);
    } finally {
      await m.stop();
    }
  });

  it('given a scripted member, then it counts requests per task id and answers every stage with a valid-looking artifact', async () => {
    const s = new ScriptedMember(nc, 'm-4', {}, prefix).start();
    try {
      const reply = dec((await nc.request(`${prefix}.v1.tasks.m-4`, enc(task('proposal', 'm-4')))).data);
      expect(reply).toMatchObject({ author_member_id: 'm-4', version: 1, parent_candidate_id: null });
      await nc.request(`${prefix}.v1.tasks.m-4`, enc(task('proposal', 'm-4')), { timeout: 1_000 }).catch(() => undefined);
      expect(s.requests.get('run1:1:proposal:m-4')).toBe(2);
    } finally {
      await s.stop();
    }
  });
});
