import {
  COUNCIL_EVENT_TYPES as E,
  CouncilEvent,
  councilRunStream,
  RunRecord,
  TERMINAL_STATES,
  Usage,
  validateRunRecord,
} from '@conclave/council-protocol';
import type { EventLog } from '@conclave/event-log';
import { acpStreamNames, councilSubjects } from '@conclave/messaging';
import { CouncilClient, CouncilRequestError, CouncilTask, ed25519Signer } from '@conclave/sdk';
import {
  cleanBehaviour,
  scriptedArtifact,
  ScriptedBehaviour,
  scriptedGoalContract,
  ScriptedMember,
  scriptedPanel,
} from '@conclave/sdk/testing';
import { EVENT_LOG } from '@conclave/service-kit';
import { headers as natsHeaders } from 'nats';
import { RunDriver } from '../../apps/council/src/app/run-driver';
import { RunLeases } from '../../apps/council/src/app/run-lease';
import { eventually, SecureConclaveHarness } from '../support/conclave-harness';
import { CouncilDecisionCollector } from '../support/council-harness';
import { parseExposition, sumOf } from '../support/metrics-text';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Council runs started at once, by the OWNERS. */
const RUNS = 24;
const OWNERS = ['cb-owner-1', 'cb-owner-2', 'cb-owner-3', 'cb-owner-4'];
const DOMAIN = 'council.burst';
/** A registered, signed participant with a grant in the domain, on no panel and owning no run. */
const STRANGER = 'cb-stranger';
/** Two proposer pools: one that agrees at once (one round), one that revises once (two rounds). */
const QUICK = ['cb-q1', 'cb-q2', 'cb-q3', 'cb-q4'];
const CLEAN = ['cb-c1', 'cb-c2', 'cb-c3', 'cb-c4'];
const CHAIRS = ['cb-chair-1', 'cb-chair-2'];
/** A wide panel's proposers: ten, whose answers of a stage land on the run at the same instant. */
const WIDE = Array.from({ length: 10 }, (_, k) => `cb-w${k}`);
const isWide = (i: number) => i % 8 === 2;
/** Members that answer some of their tasks slowly (well inside the stage timeout). */
const SLOW = new Set(['cb-q2', 'cb-c3', 'cb-chair-2']);
const MEMBERS = [...QUICK, ...CLEAN, ...CHAIRS, ...WIDE];
const STAGE_TIMEOUT_MS = 15_000;
const ROOMY = { max_cost: 10_000, max_tokens: 10_000_000 };
/** How long after its decision is published a replica may still be dropping a run's loop. */
const DROP_GRACE_MS = 2_000;
/**
 * How long a run may sit with every task settled before its controller acts. Under this burst the
 * driver takes up to a few seconds (the last answer often lands on the other replica and reaches
 * the driver through the run index); a run that only moves on at its stage deadline (15 s) is stuck.
 */
const IDLE_GRACE_MS = 8_000;

/** What each member reports per answer: integers, so sums are exact. */
const usageOf = (memberId: string): Required<Usage> => {
  const n = MEMBERS.indexOf(memberId);
  return { cost: 1 + (n % 3), tokens: 50 * (1 + (n % 4)) };
};

/** FNV-1a of a task id: picks, deterministically, what each task's answers go through. */
function pick(taskId: string, n: number): number {
  let x = 0x811c9dc5;
  for (let i = 0; i < taskId.length; i++) x = Math.imul(x ^ taskId.charCodeAt(i), 0x01000193) >>> 0;
  return x % n;
}

/**
 * What is done to each task's answer besides the SDK's own send:
 * - race: two more signed copies, sent concurrently with the SDK's (they land on either replica);
 * - retry: a signed copy again after the verdict (a member that never saw its verdict);
 * - replay: the SDK's exact signed message again, same nonce (an eavesdropper's replay);
 * - abuse: the stranger answers on the member's subject, and a fellow member answers the task as itself.
 */
type Extra = 'race' | 'retry' | 'replay' | 'abuse';
const EXTRAS: Extra[] = ['race', 'retry', 'replay', 'abuse'];

interface PlannedRun {
  i: number;
  runId: string;
  owner: string;
  proposers: string[];
  chair: string;
  budget: { max_rounds: number; max_time: string; max_cost: number; max_tokens: number };
  /** The budget limit the run is built to reach mid-run, if any. */
  tight?: 'max-cost' | 'max-tokens';
}

type Verdict = { ok: boolean; retry?: boolean; error?: { code: string; message?: string } } | { transport: string };

interface SentExtra {
  kind: Extra | 'stranger' | 'cross-member';
  runId: string;
  taskId: string;
  verdict: Verdict;
}

/**
 * The Council under a signed burst (CONCLAVE_AUTH_MODE=required), on two council replicas with
 * intake (the registry): four signed owners start 24 runs at once (a third of the starts sent
 * twice, concurrently); signed SDK members answer their tasks concurrently (three proposers per
 * run, ten on the wide runs, some members slow), and each answer is also raced, retried, replayed
 * or answered by someone else on purpose. Over every run: one start, one end, one decision message;
 * no run stuck (never idle with every task settled), no loop or lease left behind, no replica still driving (or serving) a run after its
 * end; every task answered and counted at most once, the recorded spend exactly the distinct
 * accepted answers' usage, no valid answer refused; no work issued once a budget is reached; never
 * two replicas driving one run; each accepted answer accepted in its member's eyes; the owner reads
 * the RunRecord, a stranger, another owner, an impersonator and an unsigned reader are refused.
 */
describe('council burst, signed: many runs and duplicated answers on two replicas with authentication required', () => {
  const h = new SecureConclaveHarness({ CONCLAVE_COUNCIL_LEASE_MS: '3000', LOG_LEVEL: 'error' });
  const prefix = h.env['CONCLAVE_COUNCIL_PREFIX'];
  const subjects = councilSubjects(prefix);
  const members = new Map<string, ScriptedMember>();
  /** The SDK's first signed send of each task's answer: bytes and headers, as they went out. */
  const sdkSends = new Map<string, { bytes: Uint8Array; headers: Record<string, string> }>();
  const extras: Promise<void>[] = [];
  const sentExtras: SentExtra[] = [];
  let decisions: CouncilDecisionCollector;
  let sampler: NodeJS.Timeout | undefined;

  const pem = (id: string) => h.privateKeyOf(id);

  beforeAll(async () => {
    await h.start('intake', 'council', 'council');
    const grant = { domain: DOMAIN, domain_authority: 0.8, trust_score: 0.9, actions: ['propose'] };
    await h.seed([
      ...OWNERS.map((participant_id) => ({ participant_id, grants: [grant] })),
      { participant_id: STRANGER, grants: [grant] },
      ...MEMBERS.map((participant_id) => ({ participant_id })),
    ]);
    decisions = await CouncilDecisionCollector.open(h, acpStreamNames(h.run).councilDecisions);
  });
  afterAll(async () => {
    clearInterval(sampler);
    await Promise.allSettled(extras);
    await Promise.all([...members.values()].map((m) => m.stop()));
    await decisions?.close();
    const jsm = await h.nc.jetstreamManager();
    await jsm.streams.delete(`KV_${h.env['CONCLAVE_EVENT_STREAM']}_COUNCIL_LEASES`).catch(() => undefined);
    await jsm.streams.delete(acpStreamNames(h.run).councilOutcomes).catch(() => undefined);
    await h.stop();
  });

  /** A signed request on a member's answer subject; `replay` sends captured bytes and headers verbatim. */
  async function sendAnswer(
    signer: string,
    subjectMember: string,
    message: Record<string, unknown>,
    replay?: { bytes: Uint8Array; headers: Record<string, string> },
  ): Promise<Verdict> {
    const subject = subjects.answer(subjectMember);
    const bytes = replay?.bytes ?? encoder.encode(JSON.stringify(message));
    const signed = replay?.headers ?? ed25519Signer(signer, pem(signer))(subject, bytes);
    const hs = natsHeaders();
    for (const [k, v] of Object.entries(signed)) hs.set(k, v);
    try {
      const reply = await h.nc.request(subject, bytes, { timeout: 10_000, headers: hs });
      return JSON.parse(decoder.decode(reply.data));
    } catch (err) {
      return { transport: (err as Error).message };
    }
  }

  function track(kind: SentExtra['kind'], task: CouncilTask, send: () => Promise<Verdict | undefined>): void {
    extras.push(
      send()
        .catch((err: Error): Verdict => ({ transport: `not sent: ${err.message}` }))
        .then((verdict) => void (verdict && sentExtras.push({ kind, runId: task.run_id, taskId: task.task_id, verdict }))),
    );
  }

  /** The answer the SDK sends for this task (the scripted artifact is a pure function of the task). */
  const answerOf = (task: CouncilTask, memberId: string, b: ScriptedBehaviour) => ({
    run_id: task.run_id,
    task_id: task.task_id,
    ok: true,
    artifact: scriptedArtifact(task, memberId, b),
    usage: usageOf(memberId),
  });

  /**
   * Holds a wide run's answers of one stage until all its proposers have theirs (at most 3 s), then
   * lets them go at once: ten answers to one run landing together, on either replica.
   */
  const gates = new Map<string, { waiting: number; open: Promise<void>; release: () => void }>();
  function together(task: CouncilTask): Promise<void> {
    const key = task.task_id.split(':').slice(0, 3).join(':');
    let gate = gates.get(key);
    if (!gate) {
      let release!: () => void;
      const open = new Promise<void>((r) => (release = r));
      gate = { waiting: 0, open, release };
      gates.set(key, gate);
      setTimeout(release, 3_000).unref();
    }
    if (++gate.waiting >= WIDE.length) gate.release();
    return gate.open;
  }

  /** A signed SDK member (ScriptedMember) whose answers are also duplicated, replayed or abused. */
  function startMember(memberId: string, base: ScriptedBehaviour, fellows: (task: CouncilTask) => string[]): ScriptedMember {
    const sign = ed25519Signer(memberId, pem(memberId));
    const signer = (subject: string, bytes: Uint8Array) => {
      const out = sign(subject, bytes);
      const taskId = (JSON.parse(decoder.decode(bytes)) as { task_id?: string }).task_id;
      if (taskId && !sdkSends.has(taskId)) sdkSends.set(taskId, { bytes, headers: out });
      return out;
    };
    // Once the SDK has its verdict on the task, or gave the task up (the run ended, or its stage went on).
    const afterVerdict = (task: CouncilTask) =>
      self.until(
        () => self.verdicts.some((v) => v.task.task_id === task.task_id) || self.aborted.has(task.task_id),
        30_000,
        `the verdict on ${task.task_id}`,
      );
    const behaviour: ScriptedBehaviour = {
      ...base,
      usage: usageOf(memberId),
      delayMs: (task) => (SLOW.has(memberId) && pick(task.task_id, 2) === 0 ? 600 + pick(task.task_id, 7) * 100 : 0),
      hold: async (task) => {
        if (WIDE.includes(memberId)) await together(task);
        const message = answerOf(task, memberId, behaviour);
        switch (EXTRAS[pick(task.task_id, EXTRAS.length)]) {
          case 'race':
            for (let k = 0; k < 2; k++) track('race', task, () => sendAnswer(memberId, memberId, message));
            break;
          case 'retry':
            track('retry', task, () => afterVerdict(task).then(() => sendAnswer(memberId, memberId, message)));
            break;
          case 'replay':
            track('replay', task, async () => {
              await afterVerdict(task);
              const sent = sdkSends.get(task.task_id);
              // Nothing to replay when the SDK gave the task up before answering it.
              return sent ? sendAnswer(memberId, memberId, message, sent) : undefined;
            });
            break;
          case 'abuse': {
            track('stranger', task, () => sendAnswer(STRANGER, memberId, message));
            const fellow = fellows(task).find((id) => id !== memberId);
            if (fellow) track('cross-member', task, () => sendAnswer(fellow, fellow, { ...message, usage: usageOf(fellow) }));
            break;
          }
        }
      },
    };
    const self = new ScriptedMember(h.nc, memberId, behaviour, prefix, signer).start();
    members.set(memberId, self);
    return self;
  }

  it('given two council replicas with authentication required and signed owners and members, when 24 runs start at once and their answers are raced, retried, replayed and abused, then every run ends exactly once with its spend counted once, within budget, driven by one replica at a time, readable by its owner only', async () => {
    // Given the runs: owners round-robin, three proposers of a pool (ten on wide runs), a chair
    // each; some budgets tight enough to be reached by the first review answer.
    const plan: PlannedRun[] = Array.from({ length: RUNS }, (_, i) => {
      const pool = i % 2 === 0 ? QUICK : CLEAN;
      const proposers = isWide(i) ? WIDE : [0, 1, 2].map((k) => pool[(i + k) % pool.length]);
      const spend = (key: 'cost' | 'tokens') => proposers.reduce((s, p) => s + usageOf(p)[key], 0);
      const tight = isWide(i) ? undefined : i % 6 === 1 ? ('max-cost' as const) : i % 6 === 4 ? ('max-tokens' as const) : undefined;
      const budget = {
        max_rounds: 3,
        max_time: '2m',
        max_cost: tight === 'max-cost' ? spend('cost') + 1 : ROOMY.max_cost,
        max_tokens: tight === 'max-tokens' ? spend('tokens') + 1 : ROOMY.max_tokens,
      };
      return {
        i,
        runId: `cb${i}_${h.run}`,
        owner: OWNERS[i % OWNERS.length],
        proposers,
        chair: CHAIRS[i % CHAIRS.length],
        budget,
        ...(tight ? { tight } : {}),
      };
    });
    const byRun = new Map(plan.map((r) => [r.runId, r]));
    const fellowsOf = (task: CouncilTask) => byRun.get(task.run_id)?.proposers ?? [];
    for (const id of QUICK) startMember(id, { score: () => 3 }, fellowsOf);
    for (const id of CLEAN) startMember(id, cleanBehaviour(), fellowsOf);
    for (const id of CHAIRS) startMember(id, cleanBehaviour(), fellowsOf);
    for (const id of WIDE) startMember(id, { score: () => 3 }, fellowsOf);

    const owners = new Map(
      OWNERS.map((id) => [id, new CouncilClient(h.nc, prefix, { signer: ed25519Signer(id, pem(id)), timeoutMs: 15_000 })]),
    );
    const stranger = new CouncilClient(h.nc, prefix, { signer: ed25519Signer(STRANGER, pem(STRANGER)), timeoutMs: 15_000 });
    const unsigned = new CouncilClient(h.nc, prefix, 15_000);
    const codeOf = (p: Promise<unknown>): Promise<string> =>
      p.then(
        () => 'ok',
        (e: unknown) => (e instanceof CouncilRequestError ? e.code : `thrown: ${(e as Error).message}`),
      );

    // Both replicas' drivers, sampled all along: a run driven by both at once, or by either once
    // its decision has been published (past a short grace to drop it), is a violation.
    const drivers = h.instances.filter((i) => i.name === 'council').map((i) => i.app.get(RunDriver));
    expect(drivers).toHaveLength(2);
    const doubleDriven = new Set<string>();
    const drivenAfterEnd = new Set<string>();
    const drivenBy = new Map<string, Set<number>>();
    const endSeenAt = new Map<string, number>();
    sampler = setInterval(() => {
      const now = Date.now();
      for (const d of decisions.received) if (!endSeenAt.has(d.run_id)) endSeenAt.set(d.run_id, now);
      for (const r of plan) {
        const on = drivers.flatMap((d, k) => (d.drives(r.runId) ? [k] : []));
        if (on.length > 1) doubleDriven.add(r.runId);
        const ended = endSeenAt.get(r.runId);
        for (const k of on) {
          (drivenBy.get(r.runId) ?? drivenBy.set(r.runId, new Set()).get(r.runId)!).add(k);
          if (ended !== undefined && now - ended > DROP_GRACE_MS) drivenAfterEnd.add(`${r.runId} on replica ${k}`);
        }
      }
    }, 10);

    // When every owner starts its runs at once (a third of the starts sent twice, concurrently),
    // and the stranger tries, at the same time, to start runs in an owner's name.
    const started = Date.now();
    const startBody = (r: PlannedRun) => ({
      run_id: r.runId,
      goal_contract: scriptedGoalContract({ goal_contract_id: `gc-cb-${r.i}`, decision_owner: r.owner, domain: DOMAIN, budget: r.budget }),
      panel: scriptedPanel({ proposers: r.proposers, chair: r.chair }),
      policy: { stage_timeout_ms: STAGE_TIMEOUT_MS },
    });
    const forgedRun = (k: number) => `cbforged${k}_${h.run}`;
    const forged = (k: number, actor?: string) => ({ ...startBody(plan[k]), run_id: forgedRun(k), ...(actor ? { actor } : {}) });
    const [starts, forgedStarts] = await Promise.all([
      Promise.all(
        plan.map(async (r) => {
          const client = owners.get(r.owner)!;
          const sends = r.i % 3 === 0 ? [client.start(startBody(r)), client.start(startBody(r))] : [client.start(startBody(r))];
          return Promise.all(
            sends.map((s) =>
              s.then(
                (id) => id,
                (e: Error) => `refused: ${e.message}`,
              ),
            ),
          );
        }),
      ),
      Promise.all([codeOf(stranger.start(forged(0))), codeOf(stranger.start(forged(1, OWNERS[1])))]),
    ]);
    // Then every start (and every concurrent retry of one) is accepted under its run id; the forged ones are refused.
    expect(starts).toEqual(plan.map((r) => (r.i % 3 === 0 ? [r.runId, r.runId] : [r.runId])));
    expect(forgedStarts).toEqual(['NOT_AUTHORIZED_ROLE', 'FORBIDDEN']);

    // While the runs run: each owner reads its run; the stranger and an unsigned reader are refused.
    const midReads = await Promise.all(
      plan.map(async (r) => ({
        run: r.runId,
        owner: await codeOf(owners.get(r.owner)!.get(r.runId)),
        stranger: await codeOf(stranger.get(r.runId)),
        unsigned: await codeOf(unsigned.get(r.runId, r.owner)),
      })),
    );
    expect(midReads).toEqual(
      plan.map((r) => ({ run: r.runId, owner: 'ok', stranger: 'NOT_AUTHORIZED_ROLE', unsigned: 'UNAUTHENTICATED' })),
    );

    // Then every run ends. Read at once, every run's RunRecord shows its end, whichever replica serves the read.
    await Promise.all(plan.map((r) => decisions.waitFor(r.runId, 40_000)));
    const endedMs = Date.now() - started;
    const readsAtEnd = await Promise.all(
      plan.flatMap((r) => [0, 1, 2].map(async () => ({ run: r.runId, rec: await owners.get(r.owner)!.get(r.runId) }))),
    );
    const staleReads = readsAtEnd.filter((x) => x.rec.terminal === null).map((x) => `${x.run}: read as ${x.rec.terminal ?? 'running'}`);

    // Nothing is left waiting: no duplicate in flight, no loop, no lease (bounded waits; what is left is reported below).
    await Promise.allSettled(extras);
    const leases = h.instances.find((i) => i.name === 'council')!.app.get(RunLeases);
    const leftDriving = () => plan.flatMap((r) => drivers.flatMap((d, k) => (d.drives(r.runId) ? [`${r.runId} on replica ${k}`] : [])));
    const leftLeased = async () => (await Promise.all(plan.map(async (r) => ((await leases.holderOf(r.runId)) ? [r.runId] : [])))).flat();
    await eventually(
      async () => (leftDriving().length === 0 && (await leftLeased()).length === 0 ? true : undefined),
      5_000,
      'no run loop or lease left',
    ).catch(() => undefined);
    const loopsLeft = leftDriving();
    const leasesLeft = await leftLeased();
    clearInterval(sampler);
    sampler = undefined;

    // The log of every run, and its RunRecord as its owner reads it (signed) after the end.
    const log = h.instances.find((i) => i.name === 'council')!.app.get<EventLog<CouncilEvent>>(EVENT_LOG);
    const logs = new Map(
      await Promise.all(plan.map(async (r) => [r.runId, (await log.read(councilRunStream(r.runId))).events.map((e) => e.event)] as const)),
    );
    const records = new Map(await Promise.all(plan.map(async (r) => [r.runId, await owners.get(r.owner)!.get(r.runId)] as const)));
    const settling = new Set<string>([
      E.CandidateSubmitted,
      E.ReviewSubmitted,
      E.ConflictMapRecorded,
      E.FrameCheckRecorded,
      E.RevisionSubmitted,
      E.ChairDecisionRecorded,
      E.MemberFailed,
    ]);
    const taskOf = (e: CouncilEvent) => (e.data as { task_id?: string }).task_id;
    const usageIn = (e: CouncilEvent) => (e.data as { usage?: Usage }).usage;

    const summaries = plan.map((r) => {
      const events = logs.get(r.runId)!;
      const rec = records.get(r.runId) as RunRecord;
      const count = (type: string) => events.filter((e) => e.type === type).length;
      const ids = events.map((e) => e.event_id);
      const settles = new Map<string, number>();
      for (const e of events) if (settling.has(e.type) && taskOf(e)) settles.set(taskOf(e)!, (settles.get(taskOf(e)!) ?? 0) + 1);
      // The spend the distinct accepted answers reported: one usage per task the RunRecord counts as answered.
      const expectedSpend = rec.tasks
        .filter((t) => t.status === 'answered')
        .reduce((s, t) => ({ cost: s.cost + usageOf(t.member_id).cost, tokens: s.tokens + usageOf(t.member_id).tokens }), {
          cost: 0,
          tokens: 0,
        });
      // Stall walk over the log: the run never sits idle, every task settled, without the controller acting.
      const open = new Set<string>();
      const stalls: string[] = [];
      events.forEach((e, k) => {
        if (e.type === E.TaskIssued) open.add(taskOf(e)!);
        else if (settling.has(e.type) && taskOf(e)) open.delete(taskOf(e)!);
        const next = events[k + 1];
        const idle = next ? Date.parse(next.occurred_at) - Date.parse(e.occurred_at) : 0;
        if (e.type !== E.RunTerminated && open.size === 0 && idle > IDLE_GRACE_MS)
          stalls.push(`idle ${idle} ms with every task settled after ${e.event_id}, until ${next.event_id}`);
      });
      // Budget walk over the log: no task issued once the spend so far reached a limit.
      let cost = 0;
      let tokens = 0;
      const issuedPastLimit: string[] = [];
      for (const e of events) {
        if (e.type === E.TaskIssued && (cost >= r.budget.max_cost || tokens >= r.budget.max_tokens))
          issuedPastLimit.push(`${taskOf(e)} issued at cost ${cost}, tokens ${tokens}`);
        cost += usageIn(e)?.cost ?? 0;
        tokens += usageIn(e)?.tokens ?? 0;
      }
      return {
        run: r.runId,
        r,
        rec,
        started: count(E.RunStarted),
        terminated: count(E.RunTerminated),
        decisionMessages: decisions.received.filter((d) => d.run_id === r.runId).length,
        duplicateEventIds: ids.filter((id, k) => ids.indexOf(id) !== k),
        settledTwice: [...settles].filter(([, n]) => n > 1).map(([t]) => t),
        refusals: events
          .filter((e) => e.type === E.TaskAnswerRefused || e.type === E.RefusedAnswerSpendRecorded)
          .map((e) => `${taskOf(e)}: ${(e.data as { error?: { code: string } }).error?.code ?? e.type} with ${JSON.stringify(usageIn(e))}`),
        issuedPastLimit,
        stalls,
        loggedSpend: { cost, tokens },
        recordedSpend: { cost: rec.budgets.usage.cost, tokens: rec.budgets.usage.tokens },
        expectedSpend,
        ms: Date.parse(events[events.length - 1].occurred_at) - Date.parse(events[0].occurred_at),
      };
    });

    // Each task reached its member's handler at most once; one verdict per task the SDK answered;
    // every task a RunRecord counts as answered was accepted in its member's eyes (the SDK's own
    // send got `ok`: a copy that landed first makes it a no-op, and "the same answer sent twice is
    // accepted once", docs/council-conformance.md, Member API).
    const sdkVerdict = new Map(
      [...members.values()].flatMap((m) =>
        m.verdicts.map((v) => [v.task.task_id, v.verdict.ok ? 'ok' : `${v.verdict.error?.code}: ${v.verdict.error?.message}`] as const),
      ),
    );
    const statusOf = new Map([...records.values()].flatMap((rec) => rec.tasks.map((t) => [t.task_id, t.status] as const)));
    // The extra answers: a copy of an accepted answer is accepted once (ok), a copy of an answer to a
    // task the run cancelled (it ended meanwhile) is refused INVALID_STATE; the replay, the stranger
    // and the fellow member are refused, and none of them is counted.
    const verdictCode = (v: Verdict) => ('transport' in v ? `transport: ${v.transport}` : v.ok ? 'ok' : (v.error?.code ?? 'refused'));
    const allowed = (x: SentExtra): string[] => {
      const copy = statusOf.get(x.taskId) === 'answered' ? ['ok'] : ['INVALID_STATE'];
      const byKind: Record<SentExtra['kind'], string[]> = {
        race: copy,
        retry: copy,
        replay: ['UNAUTHENTICATED'],
        abuse: [],
        stranger: ['FORBIDDEN'],
        'cross-member': ['NOT_TASK_ASSIGNEE', 'INVALID_STATE'],
      };
      return byKind[x.kind];
    };

    // After the end: the owner and a panel member read the run; the stranger, another owner, an
    // impersonator and an unsigned reader are refused.
    const endReads = await Promise.all(
      plan.map(async (r) => ({
        run: r.runId,
        owner: await codeOf(owners.get(r.owner)!.get(r.runId)),
        member: await codeOf(new CouncilClient(h.nc, prefix, { signer: ed25519Signer(r.chair, pem(r.chair)) }).get(r.runId)),
        stranger: await codeOf(stranger.get(r.runId)),
        otherOwner: await codeOf(owners.get(OWNERS[(r.i + 1) % OWNERS.length])!.get(r.runId)),
        impersonator: await codeOf(stranger.get(r.runId, r.owner)),
        unsigned: await codeOf(unsigned.get(r.runId, r.owner)),
      })),
    );
    const expectedRead: Record<string, string> = {
      owner: 'ok',
      member: 'ok',
      stranger: 'NOT_AUTHORIZED_ROLE',
      otherOwner: 'NOT_AUTHORIZED_ROLE',
      impersonator: 'FORBIDDEN',
      unsigned: 'UNAUTHENTICATED',
    };
    const wrongReads = endReads.filter((x) => Object.entries(expectedRead).some(([k, v]) => (x as Record<string, string>)[k] !== v));

    const slowest = [...summaries].sort((a, b) => b.ms - a.ms)[0];
    const overshoot = summaries.filter((s) => s.recordedSpend.cost > s.r.budget.max_cost || s.recordedSpend.tokens > s.r.budget.max_tokens);
    console.log(
      [
        `${RUNS} runs ended in ${endedMs} ms (slowest ${slowest.run}: ${slowest.ms} ms); driven by replica: ${plan.map((r) => [...(drivenBy.get(r.runId) ?? [])].join('+') || '-').join(' ')}`,
        `extra answers: ${(['race', 'retry', 'replay', 'stranger', 'cross-member'] as const).map((k) => `${k} ${sentExtras.filter((x) => x.kind === k).length}`).join(', ')}`,
        `terminal states: ${summaries.map((s) => `${s.rec.terminal?.terminal_state}/${s.rec.terminal?.reason}`).join(' ')}`,
        `recorded spend past a limit by answers already in flight: ${overshoot.map((s) => `${s.run} ${JSON.stringify(s.recordedSpend)}`).join('; ') || 'none'}`,
      ].join('\n'),
    );

    // The council series of both replicas, summed: each run started and ended once, and the spend
    // the log holds, whichever replica appended each event.
    const scrapes = await Promise.all(
      h.instances
        .filter((i) => i.name === 'council')
        .map(async (i) => parseExposition(await (await fetch(`${(await i.app.getUrl()).replace('[::1]', '127.0.0.1')}/metrics`)).text())),
    );
    const metric = (name: string, labels: Record<string, string> = {}) => scrapes.reduce((sum, x) => sum + sumOf(x, name, labels), 0);
    const terminalStates = [...new Set(summaries.map((s) => s.rec.terminal?.terminal_state ?? 'none'))];
    const fromMetrics = {
      started: metric('conclave_council_runs_total', { state: 'started' }),
      ended: Object.fromEntries(terminalStates.map((t) => [t, metric('conclave_council_runs_total', { state: t })])),
      tokens: metric('conclave_council_tokens_total'),
      cost: metric('conclave_council_cost_total'),
      answersRefused: metric('conclave_council_member_task_failures_total', { reason: 'answer-refused' }),
    };
    const fromLog = {
      started: summaries.reduce((n, s) => n + s.started, 0),
      ended: Object.fromEntries(
        terminalStates.map((t) => [t, summaries.filter((s) => (s.rec.terminal?.terminal_state ?? 'none') === t).length]),
      ),
      tokens: summaries.reduce((n, s) => n + s.loggedSpend.tokens, 0),
      cost: summaries.reduce((n, s) => n + s.loggedSpend.cost, 0),
      answersRefused: summaries.reduce((n, s) => n + s.refusals.length, 0),
    };

    // Then, over every run, no invariant is violated.
    const violations = {
      // one start and exactly one terminal state, published once; the terminal state the run was built for;
      notOneStartOneEnd: summaries
        .filter((s) => s.started !== 1 || s.terminated !== 1 || s.decisionMessages !== 1)
        .map((s) => `${s.run}: ${s.started} start(s), ${s.terminated} end(s), ${s.decisionMessages} decision message(s)`),
      unexpectedTerminal: summaries
        .filter((s) => {
          const t = s.rec.terminal;
          if (!t || !(TERMINAL_STATES as readonly string[]).includes(t.terminal_state)) return true;
          return s.r.tight
            ? t.terminal_state !== 'budget-exhausted-best-checkpoint' || t.reason !== s.r.tight
            : !t.terminal_state.startsWith('decided');
        })
        .map((s) => `${s.run}${s.r.tight ? ` (tight ${s.r.tight})` : ''}: ${JSON.stringify(s.rec.terminal)}`),
      // no run stuck: none sits with every task settled and its controller idle;
      runsStalled: summaries.flatMap((s) => s.stalls.map((x) => `${s.run}: ${x}`)),
      // no event appended twice, no task settled twice, no valid answer refused;
      duplicateEvents: summaries.flatMap((s) => s.duplicateEventIds),
      tasksSettledTwice: summaries.flatMap((s) => s.settledTwice),
      validAnswersRefused: summaries.flatMap((s) => s.refusals),
      // the spend in the log is the RunRecord's, and exactly the distinct accepted answers';
      spendNotDistinctAnswers: summaries
        .filter(
          (s) =>
            JSON.stringify(s.loggedSpend) !== JSON.stringify(s.expectedSpend) ||
            JSON.stringify(s.recordedSpend) !== JSON.stringify(s.expectedSpend),
        )
        .map(
          (s) =>
            `${s.run}: recorded ${JSON.stringify(s.recordedSpend)}, logged ${JSON.stringify(s.loggedSpend)}, distinct answers ${JSON.stringify(s.expectedSpend)}`,
        ),
      // no work issued once a budget was reached; no more rounds than the budget;
      tasksIssuedPastBudget: summaries.flatMap((s) => s.issuedPastLimit.map((x) => `${s.run}: ${x}`)),
      budgetExceeded: summaries.flatMap((s) =>
        validateRunRecord(s.rec)
          .problems.filter((p) => p.code === 'BUDGET_EXCEEDED')
          .map((p) => `${s.run}: ${p.message}`)
          .concat(s.rec.budgets.usage.rounds > s.r.budget.max_rounds ? [`${s.run}: ${s.rec.budgets.usage.rounds} rounds`] : []),
      ),
      // one replica drives a run at a time, and none once it has ended; nothing left behind;
      drivenByBothReplicas: [...doubleDriven],
      drivenAfterItsEnd: [...drivenAfterEnd],
      staleReadsAfterEnd: staleReads,
      loopsLeft,
      leasesLeft,
      // each task asked of its member once, one verdict each, and accepted in its member's eyes;
      tasksAskedTwice: [...members.values()].flatMap((m) => [...m.requests].filter(([, n]) => n > 1).map(([t, n]) => `${t}: ${n}`)),
      verdictsTwice: [...members.values()].flatMap((m) => {
        const n = new Map<string, number>();
        for (const v of m.verdicts) n.set(v.task.task_id, (n.get(v.task.task_id) ?? 0) + 1);
        return [...n].filter(([, k]) => k > 1).map(([t, k]) => `${t}: ${k}`);
      }),
      answeredButMemberToldOtherwise: [...statusOf]
        .filter(([t, status]) => status === 'answered' && sdkVerdict.get(t) !== 'ok')
        .map(([t]) => `${t} → ${sdkVerdict.get(t)}`),
      extraAnswersWithWrongVerdict: sentExtras
        .filter((x) => !allowed(x).includes(verdictCode(x.verdict)))
        .map((x) => `${x.kind} ${x.taskId} → ${verdictCode(x.verdict)} (expected ${allowed(x).join(' or ')})`),
      // the owner reads its RunRecord, with the mapping after the end; nobody else without a role.
      ownerCopyWithoutMapping: summaries.filter((s) => s.rec.anonymization.withheld === true).map((s) => s.run),
      wrongReadAnswers: wrongReads.map((x) => JSON.stringify(x)),
      // the replicas' metrics say what the log says.
      metricsNotTheLog:
        JSON.stringify(fromMetrics) === JSON.stringify(fromLog)
          ? []
          : [`metrics ${JSON.stringify(fromMetrics)}, log ${JSON.stringify(fromLog)}`],
    };
    expect(violations).toEqual(Object.fromEntries(Object.keys(violations).map((k) => [k, []])));

    // The burst did exercise every path, and the forged starts left no run behind.
    for (const kind of ['race', 'retry', 'replay', 'stranger', 'cross-member'] as const)
      expect({ kind, sent: sentExtras.some((x) => x.kind === kind) }).toEqual({ kind, sent: true });
    expect(plan.filter((r) => r.tight).length).toBeGreaterThan(0);
    for (const k of [0, 1]) expect((await log.read(councilRunStream(forgedRun(k)))).exists).toBe(false);
  }, 60_000);
});
