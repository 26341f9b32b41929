import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import type { DecisionEvent } from '@conclave/acp-protocol';
import { acpStreamNames, acpSubjects, ensureStream, follow } from '@conclave/messaging';
import { NATS_CONNECTION, Readiness, retryWithBackoff, SERVICE_CONFIG } from '@conclave/service-kit';
import { ConsumerMessages, DeliverPolicy, NatsConnection } from 'nats';
import { EscalationConfig } from './escalation.config';

const KEEP = 200;
type Listener = (decision: DecisionEvent) => void;

/**
 * The console's live feed: one ordered JetStream consumer on ACP_DECISIONS (all domains), started
 * with the decisions of the last CONCLAVE_FEED_HISTORY_MS, fanned out to every open browser over
 * Server-Sent Events. It reads the same stream downstream systems read, so what the console shows
 * is what was published.
 */
@Injectable()
export class DecisionFeed implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(DecisionFeed.name);
  private readonly recent: DecisionEvent[] = [];
  private readonly listeners = new Set<Listener>();
  private messages: ConsumerMessages | undefined;
  private loop: Promise<void> | undefined;
  private started = false;
  private stopping = false;

  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(SERVICE_CONFIG) private readonly config: EscalationConfig,
    readiness: Readiness,
  ) {
    readiness.register('decision-feed', () => this.started);
  }

  async onApplicationBootstrap(): Promise<void> {
    const subjects = acpSubjects(this.config.subjectPrefix);
    const stream = acpStreamNames(this.config.streamSuffix).decisions;
    await ensureStream(await this.nc.jetstreamManager(), {
      name: stream,
      subjects: [subjects.allDecisions],
      replicas: this.config.logReplicas,
    });
    const since = new Date(Date.now() - this.config.feedHistoryMs).toISOString();
    // A feed not made in time at start is made again (a consumer object consumes once), and said so.
    const made = await retryWithBackoff(
      async () =>
        follow(
          await this.nc.jetstream().consumers.get(stream, {
            filterSubjects: subjects.allDecisions,
            deliver_policy: DeliverPolicy.StartTime,
            opt_start_time: since,
          }),
        ),
      {
        stopped: () => this.stopping,
        onFailure: (err) => this.logger.warn(`decision feed not made yet: ${(err as Error).message}`),
      },
    );
    if (!made) return;
    const messages = made.value;
    this.messages = messages;
    this.loop = (async () => {
      for await (const m of messages) {
        let decision: DecisionEvent;
        try {
          decision = JSON.parse(new TextDecoder().decode(m.data)) as DecisionEvent;
        } catch {
          continue;
        }
        this.recent.push(decision);
        if (this.recent.length > KEEP) this.recent.shift();
        for (const l of this.listeners) l(decision);
      }
    })().catch((err: Error) => this.logger.warn(`decision feed stopped: ${err.message}`));
    this.started = true;
  }

  async onModuleDestroy(): Promise<void> {
    this.stopping = true;
    this.started = false;
    this.listeners.clear();
    await this.messages?.close().catch(() => undefined);
    await this.loop;
  }

  /** The recent decisions, oldest first, then every new one until `unsubscribe()`. */
  subscribe(listener: Listener): { recent: DecisionEvent[]; unsubscribe: () => void } {
    this.listeners.add(listener);
    return { recent: [...this.recent], unsubscribe: () => this.listeners.delete(listener) };
  }
}
