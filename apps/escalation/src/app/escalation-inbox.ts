import { Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import {
  EscalationMetadata,
  EscalationRouting,
  HumanSignOff,
  ladderStepDueAt,
  PROPOSAL_EVENT_TYPES,
  PROPOSAL_STREAM_CATEGORY,
  ProposalEvent,
  Resolution,
} from '@conclave/acp-protocol';
import type { StoredEvent } from '@conclave/event-log';
import { Reactor, Reactors } from '@conclave/service-kit';

export type InboxStatus = 'open' | 'resolved' | 'expired';

/** One escalation as the desk sees it (spec 10.3 metadata plus routing, ladder and sign-offs). */
export interface InboxEntry {
  proposal_id: string;
  domain: string;
  status: InboxStatus;
  /** The ProposalEscalated event id: a resolution may name it to bind itself to this escalation. */
  escalation_id: string;
  escalation: EscalationMetadata;
  /** Vote totals when it was escalated. */
  votes_for: number;
  votes_against: number;
  /** Who is responsible now (10.3). */
  assignees: string[];
  routed: boolean;
  route_id: string | null;
  payload_hash: string | null;
  routing: EscalationRouting | null;
  /** Index of the next ladder step, and when it falls due (null: no further step). */
  next_step: number;
  next_step_due_at: string | null;
  sign_offs: HumanSignOff[];
  /** The final resolution once closed (human, sign-off or ladder default). */
  resolution: Resolution | null;
  updated_at: string;
}

export interface InboxState {
  /** Domain of every proposal seen (escalation events do not carry it). */
  domains: Map<string, string>;
  entries: Map<string, InboxEntry>;
}

export const emptyInbox = (): InboxState => ({ domains: new Map(), entries: new Map() });

function nextDue(entry: InboxEntry): string | null {
  if (entry.status !== 'open' || !entry.routing) return null;
  return ladderStepDueAt(entry.escalation.escalated_at, entry.routing.ladder, entry.next_step);
}

/**
 * Folds one proposal event into the inbox; returns the entry it changed, if any. Pure over the
 * log, so the inbox is rebuilt identically at every start (a projection, STYLE rule 8).
 */
export function applyToInbox(inbox: InboxState, event: ProposalEvent): InboxEntry | undefined {
  const id = event.data.proposal_id;
  if (event.type === PROPOSAL_EVENT_TYPES.ProposalSubmitted) {
    inbox.domains.set(id, event.data.domain);
    return undefined;
  }
  if (event.type === PROPOSAL_EVENT_TYPES.ProposalEscalated) {
    const e = event.data.escalation;
    const entry: InboxEntry = {
      proposal_id: id,
      domain: inbox.domains.get(id) ?? '',
      status: 'open',
      escalation_id: event.event_id,
      escalation: e,
      votes_for: event.data.resolution.votes_for,
      votes_against: event.data.resolution.votes_against,
      assignees: e.assigned_to ? [e.assigned_to] : [],
      routed: false,
      route_id: null,
      payload_hash: null,
      routing: null,
      next_step: 0,
      next_step_due_at: null,
      sign_offs: [],
      resolution: null,
      updated_at: event.occurred_at,
    };
    inbox.entries.set(id, entry);
    return entry;
  }
  const entry = inbox.entries.get(id);
  if (!entry) return undefined;
  switch (event.type) {
    case PROPOSAL_EVENT_TYPES.EscalationRouted:
      entry.routed = true;
      entry.routing = event.data.routing;
      entry.route_id = event.data.routing.route_id;
      entry.assignees = [...event.data.routing.assignees];
      entry.payload_hash = event.data.payload_hash;
      break;
    case PROPOSAL_EVENT_TYPES.EscalationReminded:
      entry.next_step = event.data.step + 1;
      break;
    case PROPOSAL_EVENT_TYPES.EscalationReassigned:
      entry.next_step = event.data.step + 1;
      entry.assignees = [...event.data.to];
      break;
    case PROPOSAL_EVENT_TYPES.EscalationSignedOff:
      entry.sign_offs = [...entry.sign_offs, event.data.sign_off];
      break;
    case PROPOSAL_EVENT_TYPES.EscalationResolved:
      entry.status = 'resolved';
      entry.resolution = event.data.resolution;
      break;
    case PROPOSAL_EVENT_TYPES.EscalationDefaulted:
      entry.status = event.data.resolution.outcome === 'expired' ? 'expired' : 'resolved';
      entry.resolution = event.data.resolution;
      break;
    default:
      return undefined;
  }
  entry.next_step_due_at = nextDue(entry);
  entry.updated_at = event.occurred_at;
  return entry;
}

/**
 * One proposal's inbox entry folded from its own stream, as `applyToInbox` folds the whole log:
 * what the log says now, however far the inbox's reactor has read.
 */
export function inboxEntryOf(proposalEvents: readonly ProposalEvent[]): InboxEntry | undefined {
  const inbox = emptyInbox();
  let entry: InboxEntry | undefined;
  for (const e of proposalEvents) entry = applyToInbox(inbox, e) ?? entry;
  return entry;
}

export interface InboxFilter {
  status?: InboxStatus | 'all';
  domain?: string;
  assignee?: string;
}

type Listener = (entry: InboxEntry, event: ProposalEvent, live: boolean) => void;

/**
 * The queue of escalated proposals: a projection of the proposal streams, rebuilt from the log at
 * start and followed live. Other parts of the service (router, ladder timer) listen to its changes.
 */
@Injectable()
export class EscalationInbox implements OnApplicationBootstrap, OnApplicationShutdown {
  private state = emptyInbox();
  private readonly listeners: Listener[] = [];
  private readonly reactor: Reactor<ProposalEvent>;
  private caughtUp = false;
  private markCaughtUp!: () => void;
  /** Resolves once the inbox reflects every event that existed at start. */
  readonly ready = new Promise<void>((resolve) => (this.markCaughtUp = resolve));

  constructor(reactors: Reactors) {
    // A reactor with a snapshot: a restart resumes from the last one, a log outage only pauses it.
    this.reactor = reactors.create<ProposalEvent>({
      name: 'escalation-inbox',
      categories: [PROPOSAL_STREAM_CATEGORY],
      apply: (e) => this.apply(e),
      snapshot: {
        schema: 1,
        take: () => this.state,
        restore: (saved) => {
          this.state = saved as InboxState;
        },
      },
    });
  }

  onChange(listener: Listener): void {
    this.listeners.push(listener);
  }

  get live(): boolean {
    return this.caughtUp;
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.reactor.start('start');
    this.caughtUp = true;
    this.markCaughtUp();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.reactor.stop();
  }

  get(proposalId: string): InboxEntry | undefined {
    return this.state.entries.get(proposalId);
  }

  open(): InboxEntry[] {
    return [...this.state.entries.values()].filter((e) => e.status === 'open');
  }

  /** Entries matching the filter, oldest escalation first (default: the open ones). */
  list(filter: InboxFilter = {}): InboxEntry[] {
    const status = filter.status ?? 'open';
    return [...this.state.entries.values()]
      .filter((e) => status === 'all' || e.status === status)
      .filter((e) => !filter.domain || e.domain === filter.domain || e.domain.startsWith(`${filter.domain}.`))
      .filter((e) => !filter.assignee || e.assignees.includes(filter.assignee))
      .sort((a, b) =>
        a.escalation.escalated_at < b.escalation.escalated_at
          ? -1
          : a.escalation.escalated_at > b.escalation.escalated_at
            ? 1
            : a.proposal_id < b.proposal_id
              ? -1
              : 1,
      );
  }

  private apply({ event, endOfCommit }: StoredEvent<ProposalEvent>): void {
    const entry = applyToInbox(this.state, event);
    if (entry && endOfCommit) for (const l of this.listeners) l(entry, event, this.caughtUp);
  }
}
