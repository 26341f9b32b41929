import { Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { PROPOSAL_EVENT_TYPES, PROPOSAL_STREAM_CATEGORY, ProposalEvent } from '@conclave/acp-protocol';
import type { StoredEvent } from '@conclave/event-log';
import { Reactor, Reactors } from '@conclave/service-kit';

/**
 * The effects side of lineage (RFC 11.3): for each entry, the later entries that named it in
 * `caused_by`, in log order. Causes are on each entry itself; effects are only known by following
 * the log, so this read model lags the submission by a moment. A reactor with a snapshot.
 */
@Injectable()
export class LineageIndex implements OnApplicationBootstrap, OnApplicationShutdown {
  private effects = new Map<string, string[]>();
  private readonly reactor: Reactor<ProposalEvent>;

  constructor(reactors: Reactors) {
    this.reactor = reactors.create<ProposalEvent>({
      name: 'lineage-index',
      categories: [PROPOSAL_STREAM_CATEGORY],
      apply: (e) => this.apply(e),
      snapshot: {
        schema: 1,
        take: () => ({ effects: this.effects }),
        restore: (saved) => {
          ({ effects: this.effects } = saved as { effects: Map<string, string[]> });
        },
      },
    });
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.reactor.start('start');
  }

  async onApplicationShutdown(): Promise<void> {
    await this.reactor.stop();
  }

  /** Entries that named `id` as a cause, oldest first. */
  effectsOf(id: string): readonly string[] {
    return this.effects.get(id) ?? [];
  }

  private apply({ event }: StoredEvent<ProposalEvent>): void {
    if (event.type !== PROPOSAL_EVENT_TYPES.ProposalSubmitted) return;
    for (const cause of event.data.caused_by ?? []) {
      const list = this.effects.get(cause) ?? [];
      if (!list.includes(event.data.proposal_id)) this.effects.set(cause, [...list, event.data.proposal_id]);
    }
  }
}
