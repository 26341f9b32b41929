import fc from 'fast-check';
import {
  COUNCIL_COMMAND_TYPES as C,
  CouncilError,
  CouncilEvent,
  CouncilRunState,
  EMPTY_RUN,
  acceptMemberAnswer,
  controllerEvents,
  councilRunStream,
  decide,
  decideNextFolding,
  foldRun,
  pendingTaskRequests,
} from '@conclave/council-protocol';
import { ConcurrencyError, InMemoryEventLog, type EventLog } from '@conclave/event-log';
import { overTheNetwork } from '@conclave/event-log/testing';
import { RunRepository } from './run-repository';

/*
 * RunRepository keeps the latest state it knows of each recent run (`known`) and serves it when
 * the log's version still matches. Several council replicas write to one run at once: the driving
 * replica's loop, and the replicas that receive members' answers for a run they do not drive. The
 * invariant checked over every burst: whatever a repository serves is the fold of the run's log,
 * and every answer is in the log exactly once.
 */

const SUBJECT_PREFIX = 'council.v1';
const RUN_ID = 'run_concurrency';
const stream = councilRunStream(RUN_ID);

const member = (member_id: string, role: string, independence_group: string, council_roles?: string[]) => ({
  member_id,
  model_family: 'model-x',
  provider_runtime: 'local',
  role,
  role_contract: `Argue as ${role}`,
  context_scope: 'full',
  memory_scope: 'none',
  tools: [],
  independence_group,
  ...(council_roles ? { council_roles } : {}),
});

/** A run started and its first stage issued: three proposal tasks, one per proposer. */
async function startedRun(log: EventLog<CouncilEvent>): Promise<CouncilRunState> {
  const now = new Date().toISOString();
  const start = decide(
    {
      type: C.StartRun,
      run_id: RUN_ID,
      goal_contract: {
        goal_contract_id: 'gc-concurrency',
        question: 'Should we migrate the billing service to event sourcing this quarter?',
        goal: 'A migration decision with a rollback plan',
        success_criteria: ['no billing downtime'],
        constraints: ['one quarter'],
        non_goals: ['rewrite the UI'],
        decision_owner: 'human-owner',
        risk_level: 'medium',
        time_horizon: '6 months',
        evidence_set: ['ev-load-test'],
        unknowns: ['peak load next quarter'],
        budget: { max_rounds: 3, max_time: '15m', max_cost: 100, max_tokens: 1_000_000 },
      },
      panel: [
        member('member-builder-01', 'builder', 'group-a'),
        member('member-skeptic-01', 'skeptic', 'group-b'),
        member('member-operator-01', 'operator', 'group-a'),
        member('member-chair-01', 'chair', 'group-c', ['chair']),
      ],
      policy: {},
      seed: 'seed-concurrency',
      actor: 'human-owner',
      now,
    } as never,
    EMPTY_RUN,
  );
  const started = foldRun(start);
  const issued = controllerEvents(decideNextFolding(started, now, { subjectPrefix: SUBJECT_PREFIX }).actions);
  const first = await log.append(stream, start, 'no_stream');
  await log.append(stream, issued, first.version);
  return foldRun(issued, started);
}

type Answer = { task_id: string; member_id: string; content: Record<string, unknown> };

/** A proposer's candidate, content only (the controller stamps ids, author and version), as the SDK's scripted members answer. */
const candidate = (memberId: string) => ({
  position: `Migrate in two phases (${memberId} view)`,
  claims: ['Phase one covers the ledger'],
  evidence_refs: ['ev-load-test'],
  assumptions: ['load stays flat'],
  expected_outcomes: ['auditable ledger by Q4'],
  risks: ['dual-write drift'],
  reversal_signals: ['reconciliation errors above 0.1%'],
  actions: ['build the ledger projection'],
  confidence: 'medium',
});

/** The three open proposal tasks, each with the content its member answers (the same every time it is sent). */
const answersOf = (state: CouncilRunState): Answer[] =>
  pendingTaskRequests(state, SUBJECT_PREFIX).map((t) => {
    const member_id = t.request.task_id.split(':').pop() as string;
    return { task_id: t.request.task_id, member_id, content: candidate(member_id) };
  });

const submitted = (state: CouncilRunState, answer: Answer): CouncilEvent[] =>
  decide(
    {
      type: C.SubmitTaskResult,
      task_id: answer.task_id,
      member_id: answer.member_id,
      artifact: acceptMemberAnswer(state, answer.task_id, answer.member_id, answer.content),
      now: new Date().toISOString(),
    },
    state,
  );

/**
 * One member's answer written as a council replica writes it: load the run through its
 * repository, decide on that state, append with its version and the folded state after it (as
 * RunLoop.append does), and on a conflict load again and decide again. `conflicts` counts the
 * appends refused because another replica had written first.
 */
async function answerThrough(repo: RunRepository, answer: Answer, conflicts: { n: number }): Promise<string> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const loaded = await repo.load(RUN_ID);
    let events: CouncilEvent[];
    try {
      events = submitted(loaded.state, answer);
    } catch (err) {
      if (err instanceof CouncilError) return err.code;
      throw err;
    }
    if (events.length === 0) return 'nothing';
    try {
      const result = await repo.append(RUN_ID, events, loaded.version, foldRun(events, loaded.state));
      return result.duplicate ? 'duplicate' : 'appended';
    } catch (err) {
      if (!(err instanceof ConcurrencyError)) throw err;
      conflicts.n++;
    }
  }
  throw new Error(`${answer.task_id}: still conflicting after 50 attempts`);
}

/**
 * The in-memory log, except that the n-th append is let in whatever version it expects when
 * `stale[n]` says so: what a clustered JetStream did during a leader election (docs/event-log.md,
 * "A stale expected sequence is admitted during a leader election, and the services saw it").
 * `forks` counts the appends it let in that really were stale.
 */
function admittingStale(
  base: InMemoryEventLog<CouncilEvent>,
  stale: readonly boolean[],
): { log: EventLog<CouncilEvent>; forks: () => number } {
  let appends = 0;
  let forks = 0;
  const append: EventLog<CouncilEvent>['append'] = async (s, events, expected, options) => {
    const admit = stale[appends++ % stale.length];
    if (admit && expected !== (await base.version(s))) forks++;
    return base.append(s, events, admit ? 'any' : expected, options);
  };
  return {
    log: new Proxy(base, { get: (t, p) => (p === 'append' ? append : (t as never)[p]) }) as EventLog<CouncilEvent>,
    forks: () => forks,
  };
}

/**
 * A replica's run index: follows the run's events in log order, each after a small delay (taken in
 * turn from `delays`: the subscription lags the appends), and tells the replica's repository of
 * each, as RunIndex.apply does. `settled` waits until it has told of every event the log holds.
 */
function runIndexOf(base: InMemoryEventLog<CouncilEvent>, repo: RunRepository, delays: readonly number[]) {
  let n = 0;
  let seen = -1;
  const sub = base.subscribe(['council-run'], 'start', async (e) => {
    await new Promise((r) => setTimeout(r, delays[n++ % delays.length]));
    repo.observed(e.event.correlation_id, e.event.event_id);
    seen = Number(e.position);
  });
  return {
    async settled(): Promise<void> {
      for (;;) {
        const head = await base.head();
        if (head === 'start' || Number(head) <= seen) break;
        await new Promise((r) => setTimeout(r, 2));
      }
      await sub.stop();
    },
  };
}

/**
 * A burst: each step sends one proposer's answer through one replica after a delay; some answers
 * are sent twice (a redelivered task). A replica decides one command on a run at a time (the
 * RunLoop's chain, RunDriver.oneAtATime): the races are between replicas.
 */
type Plan = [task: number, replica: number, delayMs: number][];

async function runBurst(log: EventLog<CouncilEvent>, base: InMemoryEventLog<CouncilEvent>, replicas: number, plan: Plan) {
  const answers = answersOf(await startedRun(base));
  const repos = Array.from({ length: replicas }, () => new RunRepository(log as EventLog));
  const indexes = repos.map((repo, i) => runIndexOf(base, repo, [i, 1, 0, 2]));
  // Every replica has read the run once: each holds it as its latest known state.
  for (const repo of repos) await repo.load(RUN_ID);
  const queues: Promise<unknown>[] = repos.map(() => Promise.resolve());
  const conflicts = { n: 0 };
  const outcomes = await Promise.all(
    plan.map(async ([task, replica, delay]) => {
      await new Promise((r) => setTimeout(r, delay));
      const r = replica % replicas;
      const outcome = queues[r].then(() => answerThrough(repos[r], answers[task % answers.length], conflicts));
      queues[r] = outcome.catch(() => undefined);
      return outcome;
    }),
  );
  await Promise.all(indexes.map((x) => x.settled()));
  const read = await base.read(stream);
  return { repos, outcomes, read, conflicts: conflicts.n, sent: new Set(plan.map(([task]) => answers[task % answers.length].task_id)) };
}

/** The events a state has folded, by id: what a stale state is missing shows at a glance. */
const applied = (state: CouncilRunState) => (state.status === 'empty' ? [] : Object.keys(state.applied_event_ids).sort());

const plans = fc.array(fc.tuple(fc.nat(2), fc.nat(2), fc.nat(3)), { minLength: 3, maxLength: 12 });
const latencies = fc.array(fc.nat(2), { minLength: 1, maxLength: 16 });

// Both ways a log may store an append: each event a commit (EventStoreDB), the append one commit (JetStream).
describe.each(['event', 'append'] as const)(
  'RunRepository: answers to one run written at once through several replicas (commits per %s)',
  (commits) => {
    it('given bursts of answers through 2 or 3 replicas over a log with latency, then each answer is in the log once, none is refused, and every replica serves the fold of the log', async () => {
      let conflicts = 0;
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: 2, max: 3 }), plans, latencies, async (replicas, plan, delays) => {
          // Given a run whose three proposal tasks are open, known to every replica
          const base = new InMemoryEventLog<CouncilEvent>({ commits });
          // When the answers come in at once, through any replica, some of them twice
          const burst = await runBurst(overTheNetwork(base, { delays }), base, replicas, plan);
          const { repos, outcomes, read, sent } = burst;
          conflicts += burst.conflicts;
          // Then each answer sent is in the log exactly once, and none was refused
          const results = read.events.filter((e) => e.event.type === 'CandidateSubmitted').map((e) => e.event.event_id);
          expect(new Set(results).size).toBe(results.length);
          expect(results.length).toBe(sent.size);
          expect(outcomes.filter((o) => !['appended', 'duplicate', 'nothing'].includes(o))).toEqual([]);
          // And every replica serves exactly what the log folds to, at the log's version
          const folded = foldRun(read.events.map((e) => e.event));
          for (const repo of repos) {
            const loaded = await repo.load(RUN_ID);
            expect(loaded.version).toBe(read.version);
            expect(loaded.state).toEqual(folded);
          }
        }),
        { numRuns: 60 },
      );
      // The replicas really raced: some appends were refused because another replica wrote first.
      expect(conflicts).toBeGreaterThan(0);
    }, 60_000);

    it('given bursts of answers on a log that sometimes lets an append in on a stale version, then every replica, once its run index has caught up, serves the fold of the log', async () => {
      let forks = 0;
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 2, max: 3 }),
          plans,
          latencies,
          fc.array(fc.boolean(), { minLength: 16, maxLength: 16 }),
          async (replicas, plan, delays, stale) => {
            // Given a run whose three proposal tasks are open, on a log that admits some appends whatever they expect
            const base = new InMemoryEventLog<CouncilEvent>({ commits });
            const admitting = admittingStale(base, stale);
            // When the answers come in at once, through any replica
            const { repos, read } = await runBurst(overTheNetwork(admitting.log, { delays }), base, replicas, plan);
            forks += admitting.forks();
            // Then no replica serves a state that left out a commit the log holds
            const folded = foldRun(read.events.map((e) => e.event));
            for (const repo of repos) {
              const loaded = await repo.load(RUN_ID);
              expect(loaded.version).toBe(read.version);
              expect(applied(loaded.state)).toEqual(applied(folded));
              expect(loaded.state).toEqual(folded);
            }
          },
        ),
        { numRuns: 60 },
      );
      // The property met forks (appends let in on a stale version), not only clean runs.
      expect(forks).toBeGreaterThan(0);
    }, 60_000);

    it('given two replicas at the same version, when one appends an answer and the log lets the other in on the version both read, then the second replica, once its run index has told it of the first answer, serves both', async () => {
      // Given a run with three open proposal tasks, read by replicas A and B
      const base = new InMemoryEventLog<CouncilEvent>({ commits });
      const [builder, skeptic] = answersOf(await startedRun(base));
      const admitting = admittingStale(base, [false, true]);
      const a = new RunRepository(admitting.log as EventLog);
      const b = new RunRepository(admitting.log as EventLog);
      const indexes = [runIndexOf(base, a, [0]), runIndexOf(base, b, [0])];
      const atA = await a.load(RUN_ID);
      const atB = await b.load(RUN_ID);
      expect(atB.version).toBe(atA.version);

      // When A records the builder's answer, and B's append of the skeptic's answer, decided on the
      // version both read, is let in after it (as in the leader-kill test of docs/event-log.md)
      const fromA = submitted(atA.state, builder);
      await a.append(RUN_ID, fromA, atA.version, foldRun(fromA, atA.state));
      const fromB = submitted(atB.state, skeptic);
      await b.append(RUN_ID, fromB, atB.version, foldRun(fromB, atB.state));
      expect(admitting.forks()).toBe(1);
      await Promise.all(indexes.map((x) => x.settled()));

      // Then the log holds both answers, and B, loading the run, serves both at the log's version
      const read = await base.read(stream);
      expect(read.events.map((e) => e.event.event_id)).toEqual(expect.arrayContaining([fromA[0].event_id, fromB[0].event_id]));
      const loaded = await b.load(RUN_ID);
      expect(loaded.version).toBe(read.version);
      expect(applied(loaded.state)).toContain(fromA[0].event_id);
      expect(loaded.state).toEqual(foldRun(read.events.map((e) => e.event)));
    });
  },
);
