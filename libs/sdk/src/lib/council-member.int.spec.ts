import { MemberAnswerMessage, MemberVerdict } from '@conclave/council-protocol';
import { councilSubjects, ensureCouncilTaskStream, ensureMemberTaskConsumer, isNotFound } from '@conclave/messaging';
import { connect, JetStreamManager, NatsConnection, Subscription } from 'nats';
import { CouncilMember, CouncilTask, CouncilVerdict } from './council-member';
import { ed25519Signer, generateParticipantKeys } from './signing';
import { candidateFor, ScriptedMember, scriptedGoalContract } from './scripted-members';

/**
 * The member side of the task protocol against the real NATS server, the controller played by the
 * test: tasks queued on the member's durable JetStream queue, answers served on
 * `<prefix>.v1.answers.<member_id>` with a scripted verdict.
 */
describe('CouncilMember over NATS (durable task queue)', () => {
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  const run = Date.now().toString(36);
  const prefix = `sdk${run}`;
  const stream = `COUNCIL_TASKS_sdk${run}`;
  const subjects = councilSubjects(prefix);
  const enc = (x: unknown) => new TextEncoder().encode(JSON.stringify(x));
  const dec = (b: Uint8Array) => JSON.parse(new TextDecoder().decode(b));
  let n = 0;
  const task = (stage: CouncilTask['stage'], member: string, deadlineMs = 5_000): CouncilTask => ({
    run_id: 'run1',
    task_id: `run1:${++n}:${stage}:${member}`,
    stage,
    role: 'proposer',
    deadline: new Date(Date.now() + deadlineMs).toISOString(),
    goal_contract: scriptedGoalContract(),
    inputs: stage === 'proposal' ? { goal_contract: scriptedGoalContract() } : { candidates: [], reviews: [], required_dissent: [] },
  });
  /** Queues as the council service does: the member's queue is made before its first task. */
  const queue = async (member: string, body: unknown, id: string) => {
    await ensureMemberTaskConsumer(jsm, stream, prefix, member);
    return nc.jetstream().publish(subjects.task(member), enc(body), { msgID: id });
  };

  /** Plays the controller's answer subject: records every answer, replies with the next verdict. */
  class Controller {
    readonly answers: { member: string; body: MemberAnswerMessage }[] = [];
    /** Per answer: its nonce (signed answers) and when it arrived. */
    readonly received: { nonce: string | undefined; at: number }[] = [];
    private sub: Subscription | undefined;
    private waiters: { count: number; resolve: () => void }[] = [];
    constructor(private readonly verdicts: (body: MemberAnswerMessage, i: number) => MemberVerdict = () => ({ ok: true, retry: false })) {}
    listen(): this {
      this.sub = nc.subscribe(subjects.allAnswers, {
        callback: (_e, m) => {
          const body = dec(m.data) as MemberAnswerMessage;
          this.answers.push({ member: m.subject.split('.').pop() as string, body });
          this.received.push({ nonce: m.headers?.get('Conclave-Nonce') || undefined, at: Date.now() });
          m.respond(enc(this.verdicts(body, this.answers.length - 1)));
          this.waiters = this.waiters.filter((w) => (this.answers.length >= w.count ? (w.resolve(), false) : true));
        },
      });
      return this;
    }
    until(count: number, timeoutMs = 10_000): Promise<void> {
      if (this.answers.length >= count) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const t = setTimeout(() => reject(new Error(`only ${this.answers.length} of ${count} answers`)), timeoutMs);
        this.waiters.push({ count, resolve: () => (clearTimeout(t), resolve()) });
      });
    }
    stop(): void {
      this.sub?.unsubscribe();
    }
  }
  const pendingFor = async (member: string) => (await jsm.consumers.info(stream, `member-${member}`)).num_pending;
  const eventually = async (test: () => Promise<boolean>, what: string) => {
    for (let i = 0; i < 100; i++) {
      if (await test()) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`never: ${what}`);
  };

  beforeAll(async () => {
    nc = await connect({ servers: process.env['NATS_URL'] ?? 'nats://127.0.0.1:4222' });
    jsm = await nc.jetstreamManager();
    await ensureCouncilTaskStream(jsm, stream, prefix);
  });
  afterAll(async () => {
    await jsm.streams.delete(stream).catch(() => undefined);
    await nc.drain();
  });

  it('given a handler per stage, when tasks are queued, then it answers {ok: true, artifact, usage} or a typed failure, and acknowledges each', async () => {
    const controller = new Controller().listen();
    const m = new CouncilMember({ nc, memberId: 'm-1', prefix })
      .onPropose((t, ctx) => (ctx.reportUsage({ tokens: 42 }), candidateFor(t, 'm-1')))
      .start();
    try {
      const proposal = task('proposal', 'm-1');
      await queue('m-1', proposal, proposal.task_id);
      const synthesis = task('synthesis', 'm-1');
      await queue('m-1', synthesis, synthesis.task_id);
      await controller.until(2);
      const byTask = Object.fromEntries(controller.answers.map((a) => [a.body.task_id, a]));
      expect(byTask[proposal.task_id]).toEqual({
        member: 'm-1',
        body: { run_id: 'run1', task_id: proposal.task_id, ok: true, artifact: candidateFor(proposal, 'm-1'), usage: { tokens: 42 } },
      });
      expect(byTask[synthesis.task_id].body).toMatchObject({ ok: false, error: { code: 'UNSUPPORTED_STAGE' } });
      await eventually(
        async () => (await pendingFor('m-1')) === 0 && (await jsm.consumers.info(stream, 'member-m-1')).num_ack_pending === 0,
        'acked',
      );
    } finally {
      await m.stop();
      controller.stop();
    }
  });

  it('given a handler that throws, when a task arrives, then it reports {ok: false, error: MEMBER_FAILURE}', async () => {
    const controller = new Controller().listen();
    const m = new CouncilMember({ nc, memberId: 'm-2', prefix })
      .onPropose(() => {
        throw new Error('provider down');
      })
      .start();
    try {
      const t = task('proposal', 'm-2');
      await queue('m-2', t, t.task_id);
      await controller.until(1);
      expect(controller.answers[0].body).toEqual({
        run_id: 'run1',
        task_id: t.task_id,
        ok: false,
        error: { code: 'MEMBER_FAILURE', message: 'provider down' },
      });
    } finally {
      await m.stop();
      controller.stop();
    }
  });

  it('given a refused answer with retry: true, then the handler answers again with task.refusal, and once accepted is not asked again', async () => {
    const controller = new Controller((_b, i) =>
      i === 0
        ? { ok: false, retry: true, error: { code: 'UNKNOWN_REFERENCE', message: 'bad', field: 'claims' } }
        : { ok: true, retry: false },
    ).listen();
    const seen: (string | undefined)[] = [];
    const m = new CouncilMember({ nc, memberId: 'm-3', prefix })
      .onPropose((t) => (seen.push(t.refusal?.code), candidateFor(t, 'm-3')))
      .start();
    try {
      const t = task('proposal', 'm-3');
      await queue('m-3', t, t.task_id);
      await controller.until(2);
      await eventually(async () => (await jsm.consumers.info(stream, 'member-m-3')).num_ack_pending === 0, 'acked');
      expect(seen).toEqual([undefined, 'UNKNOWN_REFERENCE']);
      expect(controller.answers).toHaveLength(2);
    } finally {
      await m.stop();
      controller.stop();
    }
  });

  it('given an answer with an unknown field, then the SDK refuses it by name before sending and the handler fixes it', async () => {
    const controller = new Controller().listen();
    const refusals: (string | undefined)[] = [];
    const m = new CouncilMember({ nc, memberId: 'm-4', prefix })
      .onPropose((t) => (refusals.push(t.refusal?.field), t.refusal ? candidateFor(t, 'm-4') : { ...candidateFor(t, 'm-4'), mood: 'keen' }))
      .start();
    try {
      const t = task('proposal', 'm-4');
      await queue('m-4', t, t.task_id);
      await controller.until(1);
      expect(refusals).toEqual([undefined, 'mood']);
      expect(controller.answers).toHaveLength(1);
      expect(controller.answers[0].body).toMatchObject({ ok: true, artifact: { position: expect.any(String) } });
      expect(controller.answers[0].body).not.toHaveProperty('artifact.mood');
    } finally {
      await m.stop();
      controller.stop();
    }
  });

  it('given a task queued while the member is offline, when it starts, then it still answers (the queue is durable)', async () => {
    const controller = new Controller().listen();
    const t = task('proposal', 'm-5');
    // The member's consumer exists (the controller issued it a task before) but nothing consumes it now.
    await ensureMemberTaskConsumer(jsm, stream, prefix, 'm-5');
    const first = new CouncilMember({ nc, memberId: 'm-5', prefix }).onPropose((x) => candidateFor(x, 'm-5')).start();
    await first.ready;
    await first.stop();
    await queue('m-5', t, t.task_id);
    const m = new CouncilMember({ nc, memberId: 'm-5', prefix }).onPropose((x) => candidateFor(x, 'm-5')).start();
    try {
      await controller.until(1);
      expect(controller.answers[0].body).toMatchObject({ task_id: t.task_id, ok: true });
    } finally {
      await m.stop();
      controller.stop();
    }
  });

  it('given a member started before its queue exists, when the controller issues its first task, then it binds to the queue the controller made and answers, having created no consumer itself', async () => {
    const controller = new Controller().listen();
    const m = new CouncilMember({ nc, memberId: 'm-10', prefix }).onPropose((x) => candidateFor(x, 'm-10')).start();
    try {
      // Given: the member waits for a queue nobody has made yet.
      await new Promise((r) => setTimeout(r, 1_000));
      const missing = await jsm.consumers.info(stream, 'member-m-10').then(
        () => false,
        (err) => isNotFound(err),
      );
      expect(missing).toBe(true);
      // When: the controller makes the queue and issues the task.
      const t = task('proposal', 'm-10');
      await queue('m-10', t, t.task_id);
      // Then: the member binds and answers.
      await m.ready;
      await controller.until(1);
      expect(controller.answers[0].body).toMatchObject({ task_id: t.task_id, ok: true });
    } finally {
      await m.stop();
      controller.stop();
    }
  });

  it('given no controller listening when it answers, when one comes back, then the cached answer is sent again and the handler ran once', async () => {
    let calls = 0;
    const m = new CouncilMember({ nc, memberId: 'm-6', prefix }).onPropose((x) => (calls++, candidateFor(x, 'm-6'))).start();
    const t = task('proposal', 'm-6', 15_000);
    try {
      await queue('m-6', t, t.task_id);
      await eventually(async () => calls === 1, 'the handler ran');
      // No responders: the member hands the task back and receives it again; the cache answers it.
      await new Promise((r) => setTimeout(r, 1_500));
      const controller = new Controller().listen();
      await controller.until(1);
      controller.stop();
      expect(calls).toBe(1);
      expect(controller.answers[0].body).toMatchObject({ task_id: t.task_id, ok: true, artifact: candidateFor(t, 'm-6') });
    } finally {
      await m.stop();
    }
  });

  it('given a handler still working, when a cancel notice arrives, then its signal aborts and nothing is answered', async () => {
    const controller = new Controller().listen();
    const aborted: string[] = [];
    let started!: () => void;
    const working = new Promise<void>((r) => (started = r));
    const m = new CouncilMember({ nc, memberId: 'm-7', prefix })
      .onPropose(
        (_t, ctx) =>
          new Promise((_resolve, reject) => {
            started();
            ctx.signal.addEventListener(
              'abort',
              () => (aborted.push(String((ctx.signal.reason as Error).message)), reject(ctx.signal.reason)),
            );
          }),
      )
      .start();
    try {
      const t = task('proposal', 'm-7');
      await queue('m-7', t, t.task_id);
      await working;
      await queue('m-7', { notice: 'cancel', run_id: 'run1', task_id: t.task_id, reason: 'run-terminated' }, `${t.task_id}:cancel`);
      await eventually(async () => aborted.length === 1, 'aborted');
      expect(aborted[0]).toMatch(/cancelled: run-terminated/);
      await eventually(async () => (await jsm.consumers.info(stream, 'member-m-7')).num_ack_pending === 0, 'both messages settled');
      expect(controller.answers).toEqual([]);
    } finally {
      await m.stop();
      controller.stop();
    }
  });

  it('given a handler slower than the deadline, then its signal aborts at the deadline and nothing is answered', async () => {
    const controller = new Controller().listen();
    let reason = '';
    let abortedAt = 0;
    const m = new CouncilMember({ nc, memberId: 'm-8', prefix })
      .onPropose(
        (_t, ctx) =>
          new Promise((_r, reject) =>
            ctx.signal.addEventListener('abort', () => {
              abortedAt = Date.now();
              reason = (ctx.signal.reason as Error).message;
              reject(ctx.signal.reason);
            }),
          ),
      )
      .start();
    try {
      const t = task('proposal', 'm-8', 400);
      await queue('m-8', t, t.task_id);
      await eventually(async () => reason !== '', 'aborted at the deadline');
      expect(reason).toBe('deadline passed');
      // Not before the deadline (a few ms of timer slack allowed).
      expect(abortedAt).toBeGreaterThanOrEqual(Date.parse(t.deadline) - 5);
      // Settled (acknowledged) without an answer.
      await eventually(async () => (await jsm.consumers.info(stream, 'member-m-8')).num_ack_pending === 0, 'the task settled');
      expect(controller.answers).toEqual([]);
    } finally {
      await m.stop();
      controller.stop();
    }
  });

  /** The edge's refusal of an answer for its rate, as the council service replies it. */
  const rateLimited = (retryAfterMs: number): MemberVerdict => {
    const error = { code: 'RATE_LIMITED', message: 'too many commands', retry_after_ms: retryAfterMs };
    return { ok: false, retry: false, error };
  };

  it('given an answer refused RATE_LIMITED at the edge, then it is sent again after the hint, signed afresh, the handler is not asked again, and the refusal is no verdict', async () => {
    const controller = new Controller((_b, i) => (i === 0 ? rateLimited(100) : { ok: true, retry: false })).listen();
    const verdicts: CouncilVerdict[] = [];
    let calls = 0;
    const m = new CouncilMember({
      nc,
      memberId: 'm-11',
      prefix,
      signer: ed25519Signer('m-11', generateParticipantKeys().privateKeyPem),
      onVerdict: (_t, v) => verdicts.push(v),
    })
      .onPropose((t) => (calls++, candidateFor(t, 'm-11')))
      .start();
    try {
      const t = task('proposal', 'm-11');
      await queue('m-11', t, t.task_id);
      await controller.until(2, 4_000);
      await eventually(async () => (await jsm.consumers.info(stream, 'member-m-11')).num_ack_pending === 0, 'acked');
      expect(controller.answers.map((a) => a.body)).toEqual([controller.answers[0].body, controller.answers[0].body]);
      const [first, second] = controller.received;
      expect(first.nonce).toEqual(expect.any(String));
      expect(second.nonce).not.toBe(first.nonce);
      expect(second.at - first.at).toBeGreaterThanOrEqual(100);
      expect(calls).toBe(1);
      expect(verdicts).toEqual([{ ok: true, retry: false }]);
    } finally {
      await m.stop();
      controller.stop();
    }
  });

  it('given a wait budget of 0, when an answer is refused RATE_LIMITED, then it is not settled: the task comes back and its cached answer is sent again', async () => {
    const controller = new Controller((_b, i) => (i === 0 ? rateLimited(100) : { ok: true, retry: false })).listen();
    const verdicts: CouncilVerdict[] = [];
    let calls = 0;
    const m = new CouncilMember({ nc, memberId: 'm-12', prefix, rateLimitWaitMs: 0, onVerdict: (_t, v) => verdicts.push(v) })
      .onPropose((t) => (calls++, candidateFor(t, 'm-12')))
      .start();
    try {
      const t = task('proposal', 'm-12', 15_000);
      await queue('m-12', t, t.task_id);
      await controller.until(2, 4_000);
      await eventually(async () => (await jsm.consumers.info(stream, 'member-m-12')).num_ack_pending === 0, 'acked');
      expect(controller.answers[1].body).toEqual(controller.answers[0].body);
      expect(calls).toBe(1);
      expect(verdicts).toEqual([{ ok: true, retry: false }]);
    } finally {
      await m.stop();
      controller.stop();
    }
  });

  it('given a scripted member, then it counts handler calls per task id and answers content only', async () => {
    const controller = new Controller().listen();
    const s = new ScriptedMember(nc, 'm-9', {}, prefix).start();
    try {
      const t = task('proposal', 'm-9');
      await queue('m-9', t, t.task_id);
      await controller.until(1);
      const artifact = controller.answers[0].body.ok ? (controller.answers[0].body.artifact as Record<string, unknown>) : {};
      for (const stamped of ['candidate_id', 'author_member_id', 'version', 'parent_candidate_id', 'confidence_scheme'])
        expect(artifact).not.toHaveProperty(stamped);
      expect(s.requests.get(t.task_id)).toBe(1);
    } finally {
      await s.stop();
      controller.stop();
    }
  });
});
