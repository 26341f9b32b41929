import { tracing } from '@opentelemetry/sdk-node';
import { acpStreamNames } from '@conclave/messaging';
import { startTracing, stopTracing } from '@conclave/service-kit';
import { CouncilClient, CouncilDecisionMessage } from '@conclave/sdk';
import { ScriptedBehaviour, ScriptedMember } from '@conclave/sdk/testing';
import type { ConsumerMessages } from 'nats';
import { ConclaveHarness } from './conclave-harness';

/**
 * The Council side of the harness: a client for the owner's subjects, scripted members on the
 * harness's council prefix, and a reader of the COUNCIL_DECISIONS stream as a downstream consumer
 * would read it. Every wait ends on an event or a deadline, never on a sleep.
 */
export class CouncilHarness {
  readonly h: ConclaveHarness;
  client!: CouncilClient;
  decisions!: CouncilDecisionCollector;
  private readonly members: ScriptedMember[] = [];

  constructor(extraEnv: Record<string, string> = {}) {
    this.h = new ConclaveHarness({ LOG_LEVEL: 'error', ...extraEnv });
  }

  get prefix(): string {
    return this.h.env['CONCLAVE_COUNCIL_PREFIX'];
  }

  async start(): Promise<this> {
    await this.h.start('council');
    this.client = new CouncilClient(this.h.nc, this.prefix);
    this.decisions = await CouncilDecisionCollector.open(this.h, acpStreamNames(this.h.run).councilDecisions);
    return this;
  }

  /** Starts scripted members answering on `<prefix>.v1.tasks.<id>`. */
  join(specs: Record<string, ScriptedBehaviour>): Record<string, ScriptedMember> {
    const out: Record<string, ScriptedMember> = {};
    for (const [id, behaviour] of Object.entries(specs)) {
      const m = new ScriptedMember(this.h.nc, id, behaviour, this.prefix).start();
      this.members.push(m);
      out[id] = m;
    }
    return out;
  }

  async stopMembers(): Promise<void> {
    await Promise.all(this.members.splice(0).map((m) => m.stop()));
  }

  async stop(): Promise<void> {
    await this.stopMembers();
    await this.decisions?.close();
    for (const i of [...this.h.instances].reverse()) await this.h.kill(i).catch(() => undefined);
    const jsm = await this.h.nc.jetstreamManager();
    await jsm.streams.delete(`KV_${this.h.env['CONCLAVE_EVENT_STREAM']}_COUNCIL_LEASES`).catch(() => undefined);
    await this.h.stop();
  }
}

export class CouncilDecisionCollector {
  readonly received: CouncilDecisionMessage[] = [];
  private waiters: { test: () => boolean; resolve: () => void }[] = [];

  private constructor(private readonly messages: ConsumerMessages) {
    void (async () => {
      for await (const m of messages) {
        this.received.push(m.json<CouncilDecisionMessage>());
        this.waiters = this.waiters.filter((w) => (w.test() ? (w.resolve(), false) : true));
      }
    })().catch(() => undefined);
  }

  static async open(h: ConclaveHarness, stream: string): Promise<CouncilDecisionCollector> {
    const consumer = await h.nc.jetstream().consumers.get(stream);
    return new CouncilDecisionCollector(await consumer.consume());
  }

  /** The decision of a run, once it is on the stream. */
  async waitFor(runId: string, timeoutMs = 20_000): Promise<CouncilDecisionMessage> {
    const find = () => this.received.find((d) => d.run_id === runId);
    const found = find();
    if (found) return found;
    {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`timed out after ${timeoutMs} ms waiting for the decision of run ${runId}`)),
          timeoutMs,
        );
        this.waiters.push({ test: () => find() !== undefined, resolve: () => (clearTimeout(timer), resolve()) });
      });
    }
    return find() as CouncilDecisionMessage;
  }

  async close(): Promise<void> {
    await this.messages.close().catch(() => undefined);
  }
}

/**
 * A council service traced into an in-memory exporter for the enclosing `describe`: tracing starts
 * before the harness and stops after it.
 */
export function tracedCouncil(): { exporter: tracing.InMemorySpanExporter; c: CouncilHarness } {
  const exporter = new tracing.InMemorySpanExporter();
  const c = new CouncilHarness();
  beforeAll(async () => {
    startTracing('council', { spanProcessors: [new tracing.SimpleSpanProcessor(exporter)] });
    await c.start();
  });
  afterAll(async () => {
    await c.stop();
    await stopTracing();
  });
  return { exporter, c };
}
