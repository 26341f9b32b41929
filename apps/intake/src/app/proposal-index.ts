import { Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import {
  isWithinDomain,
  PROPOSAL_EVENT_TYPES,
  PROPOSAL_STREAM_CATEGORY,
  ProposalEvent,
  ProposalStatus,
  statusAfter,
} from '@conclave/acp-protocol';
import type { StoredEvent } from '@conclave/event-log';
import { Reactor, Reactors } from '@conclave/service-kit';

interface Entry {
  domain: string;
  status: ProposalStatus;
}

/**
 * The read model behind `acp.v1.list`: every proposal's id, domain and status, in id order
 * (ULIDs sort by creation time), rebuilt from the log at start and followed live. It holds no
 * payloads: a page loads its proposals through the store, so what `list` returns is as fresh as
 * `get`. Lag: a proposal appears here shortly after its submission is appended. A reactor with a
 * snapshot: a restart resumes from the last one, and a log outage only pauses it.
 */
@Injectable()
export class ProposalIndex implements OnApplicationBootstrap, OnApplicationShutdown {
  private entries = new Map<string, Entry>();
  /** Sorted ids; appends are at the end unless a client chose an older ULID. */
  private ids: string[] = [];
  private readonly reactor: Reactor<ProposalEvent>;

  constructor(reactors: Reactors) {
    this.reactor = reactors.create<ProposalEvent>({
      name: 'proposal-index',
      categories: [PROPOSAL_STREAM_CATEGORY],
      apply: (e) => this.apply(e),
      snapshot: {
        schema: 1,
        take: () => ({ entries: this.entries, ids: this.ids }),
        restore: (saved) => {
          ({ entries: this.entries, ids: this.ids } = saved as { entries: Map<string, Entry>; ids: string[] });
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

  /** Ids after `cursor` matching the filters, at most `limit`, and whether more follow. */
  page(filter: { domain?: string; status?: ProposalStatus; cursor?: string; limit: number }): { ids: string[]; more: boolean } {
    const start = filter.cursor === undefined ? 0 : upperBound(this.ids, filter.cursor);
    const ids: string[] = [];
    for (let i = start; i < this.ids.length; i++) {
      const id = this.ids[i];
      const entry = this.entries.get(id)!;
      if (filter.domain !== undefined && !isWithinDomain(entry.domain, filter.domain)) continue;
      if (filter.status !== undefined && entry.status !== filter.status) continue;
      if (ids.length === filter.limit) return { ids, more: true };
      ids.push(id);
    }
    return { ids, more: false };
  }

  private apply({ event }: StoredEvent<ProposalEvent>): void {
    const id = event.data.proposal_id;
    const entry = this.entries.get(id);
    if (event.type === PROPOSAL_EVENT_TYPES.ProposalSubmitted) {
      if (entry) return;
      this.entries.set(id, { domain: event.data.domain, status: statusAfter(event, undefined) });
      this.ids.splice(upperBound(this.ids, id), 0, id);
      return;
    }
    if (entry) entry.status = statusAfter(event, entry.status);
  }
}

/** First index whose id is greater than `id`. */
function upperBound(sorted: readonly string[], id: string): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid] <= id) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
