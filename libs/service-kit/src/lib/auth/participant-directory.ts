import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown, Optional } from '@nestjs/common';
import { AcpError } from '@conclave/acp-protocol';
import { AggregateCache, CommandConflictError, EventLog, LogEvent, StoredEvent, handleCommand } from '@conclave/event-log';
import {
  PARTICIPANT_STREAM_CATEGORY,
  ParticipantRecord,
  ParticipantState,
  REGISTRY_COMMAND_TYPES,
  RegistryCommand,
  RegistryEvent,
  administratorLostBy,
  decideRegistry,
  evolveParticipant,
  initialParticipantState,
  isActiveAdministrator,
  isParticipantId,
  keysAddedBy,
  participantStream,
} from '@conclave/registry-protocol';
import { Readiness } from '../readiness';
import { Reactor, Reactors } from '../reactor';
import type { Clock, IdGenerator } from '../runtime';
import { ServiceConfig } from '../service-config';
import { CLOCK, EVENT_LOG, IDS, SERVICE_CONFIG } from '../tokens';
import { authSettingsOf } from './auth-config';
import { NonceStore } from './nonce-store';

/** Short-lived reservations of public keys shared by every replica (NonceStore's bucket). */
export type KeyReservations = Pick<NonceStore, 'reserve'>;

const MAX_ATTEMPTS = 8;

/**
 * The participant registry at the edge: each participant's state folded from its
 * `participant-<id>` stream (cached, checked fresh against the log on every load, so a revoked
 * key stops working on every replica at once), the registry commands' pipeline (read, decide,
 * append with the version read, retried on conflict), and a list of all participants followed
 * from the log.
 */
@Injectable()
export class ParticipantDirectory implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(ParticipantDirectory.name);
  private readonly cache: AggregateCache<ParticipantState, RegistryEvent>;
  private readonly all = new Map<string, ParticipantState>();
  private readonly reactor: Reactor<RegistryEvent>;
  private readonly decider = { decide: decideRegistry, evolve: evolveParticipant };
  private caughtUp = false;

  constructor(
    @Inject(EVENT_LOG) private readonly log: EventLog<LogEvent>,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(IDS) private readonly ids: IdGenerator,
    @Inject(SERVICE_CONFIG) private readonly config: ServiceConfig,
    readiness: Readiness,
    reactors: Reactors,
    @Optional() @Inject(NonceStore) private readonly reservations?: KeyReservations,
  ) {
    readiness.register('participant-registry', () => this.caughtUp && this.cache.following);
    // The list of every participant: a reactor, so a log outage only pauses it.
    this.reactor = reactors.create<RegistryEvent>({
      name: 'participant-list',
      categories: [PARTICIPANT_STREAM_CATEGORY],
      apply: (e) => this.follow(e),
    });
    this.cache = new AggregateCache<ParticipantState, RegistryEvent>(log as unknown as EventLog<RegistryEvent>, {
      categories: [PARTICIPANT_STREAM_CATEGORY],
      initial: () => initialParticipantState,
      evolve: evolveParticipant,
    });
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.cache.start();
    await this.reactor.start('start');
    await this.bootstrapAdmin();
    this.caughtUp = true;
  }

  async onApplicationShutdown(): Promise<void> {
    await this.reactor.stop();
    await this.cache.stop();
  }

  /** The participant's current state (`unregistered` for an unknown or malformed id). */
  /**
   * `'log'` (authentication): checked against the log's version, so a revoked key stops working
   * on every replica at once. `'followed'` (declared identities, auth off): the participant list
   * as followed from the log, a moment behind it, with no request per command.
   */
  async load(participantId: string, source: 'log' | 'followed' = 'log'): Promise<ParticipantState> {
    if (!isParticipantId(participantId)) return initialParticipantState;
    if (source === 'followed') return this.all.get(participantId) ?? initialParticipantState;
    return (await this.cache.load(participantStream(participantId))).state;
  }

  /** Every participant, as of the followed log (a moment behind the last append). */
  list(): ParticipantRecord[] {
    return [...this.all.values()].flatMap((s) => (s.status === 'unregistered' ? [] : [s.participant]));
  }

  /**
   * Decides and appends a registry command; returns the events appended and the new state. On
   * every attempt, before the append: a key it adds is reserved for the participant
   * (reserveKeys), and one that would leave an active administrator unable to administer is kept
   * to the registry's rule (keepAnAdministrator).
   */
  async execute(command: RegistryCommand): Promise<{ events: RegistryEvent[]; state: ParticipantState }> {
    const id = command.data.participant_id;
    if (!isParticipantId(id)) {
      throw new AcpError(
        'SCHEMA_VIOLATION',
        'participant_id must be 1 to 60 characters of letters, digits and _ - . : @',
        'participant_id',
      );
    }
    const stream = participantStream(id);
    try {
      const outcome = await handleCommand(this.cache, stream, this.decider, command, {
        maxAttempts: MAX_ATTEMPTS,
        // Two removals confirming each other's targets collide in step; a random pause parts them.
        onConflict: (_stream, attempt) => new Promise((r) => setTimeout(r, Math.random() * 2 ** attempt)),
        beforeAppend: async (loaded, events) => {
          await this.reserveKeys(events);
          await this.keepAnAdministrator(command, loaded.state, events);
        },
      });
      return { events: [...outcome.events], state: outcome.state };
    } catch (err) {
      if (err instanceof CommandConflictError) throw new AcpError('CONFLICT', `${stream} kept changing; retry the command`);
      throw err;
    }
  }

  /**
   * One public key, one participant, when several add the same key at once: intake refuses a key
   * the followed list shows another participant holding, but the list is a moment behind the log.
   * Each key added is reserved for its participant in a bucket every replica shares, for longer
   * than that moment; another participant's reservation is refused CONFLICT at `public_key`,
   * before anything is appended. Without a shared bucket (authentication off: keys sign nothing)
   * only the list's check applies.
   */
  private async reserveKeys(events: readonly RegistryEvent[]): Promise<void> {
    if (!this.reservations || this.config.authMode !== 'required') return;
    for (const { participant_id, public_key } of keysAddedBy(events)) {
      if (!(await this.reservations.reserve(public_key, participant_id))) {
        throw new AcpError('CONFLICT', 'this public key is already registered to another participant', 'public_key');
      }
    }
  }

  /**
   * The registry keeps an active administrator: the last one can neither drop the role, be
   * deactivated nor lose its last active key (CONFLICT), since nobody could then register, grant
   * or recover, and the bootstrap setting only creates an administrator that is not registered.
   *
   * Before X is left unable to administer, another active administrator W is confirmed by an event
   * appended to W's stream at the version W was read active at (the actor first, then the others
   * the list follows). X's events are then appended at the version X was read at before that. Two
   * removals relying on each other cannot both pass: each confirmation changes the stream the
   * other one's removal expects unchanged, so at least one fails its version check and decides
   * again on what the log now holds. A chain of removals can never end with the last confirmed
   * administrator removed, so one always remains, on any number of replicas.
   */
  private async keepAnAdministrator(command: RegistryCommand, state: ParticipantState, events: readonly RegistryEvent[]): Promise<void> {
    const field = administratorLostBy(state, events);
    if (!field) return;
    const removed = command.data.participant_id;
    const others = [...this.all.values()]
      .flatMap((s) => (isActiveAdministrator(s) && s.status === 'active' ? [s.participant.participant_id] : []))
      .filter((id) => id !== removed)
      .sort((a, b) => Number(b === command.actor) - Number(a === command.actor));
    for (const witness of others) {
      try {
        await this.execute({
          type: REGISTRY_COMMAND_TYPES.ConfirmAdministrator,
          command_id: this.ids.next(),
          now: command.now,
          actor: command.actor,
          data: { participant_id: witness, confirmed_for: removed },
        });
        return;
      } catch (err) {
        // No longer an administrator, or its stream kept changing: the next one may do.
        if (!(err instanceof AcpError)) throw err;
      }
    }
    throw new AcpError('CONFLICT', `${removed} is the last active administrator: make another administrator first`, field);
  }

  private follow({ event }: StoredEvent<RegistryEvent>): void {
    const id = event.data.participant_id;
    this.all.set(id, evolveParticipant(this.all.get(id) ?? initialParticipantState, event));
  }

  private async bootstrapAdmin(): Promise<void> {
    const admin = authSettingsOf(this.config).bootstrapAdmin;
    if (!admin) return;
    if ((await this.load(admin.participant_id)).status !== 'unregistered') return;
    try {
      await this.execute({
        type: REGISTRY_COMMAND_TYPES.RegisterParticipant,
        command_id: this.ids.next(),
        now: this.clock.now().toISOString(),
        actor: 'bootstrap',
        data: {
          participant_id: admin.participant_id,
          roles: ['administrator'],
          public_key: admin.public_key,
          display_name: 'bootstrap administrator',
        },
      });
      this.logger.log(`registered bootstrap administrator ${admin.participant_id}`);
    } catch (err) {
      // Another replica registered it first.
      if (!(err instanceof AcpError && err.code === 'CONFLICT')) throw err;
    }
  }
}
