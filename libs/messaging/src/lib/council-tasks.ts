import {
  AckPolicy,
  ConsumerConfig,
  DeliverPolicy,
  DiscardPolicy,
  JetStreamManager,
  RetentionPolicy,
  StorageType,
  StreamConfig,
} from 'nats';
import { isNotFound } from './jetstream';
import { councilSubjects } from './subjects';
import { openRacingCreate } from '@conclave/event-log';

const NS_PER_MS = 1_000_000;

/**
 * How long an unacknowledged task stays with a member before it is delivered again: a member that
 * crashed mid-task gets it back (or its next session does) this long after. A member working on a
 * task keeps it by signalling progress (the SDK does every third of this).
 */
export const MEMBER_TASK_ACK_WAIT_MS = 5_000;
/** Tasks nobody ever consumed are dropped after a day (every task's deadline is long past by then). */
const TASK_MAX_AGE_MS = 24 * 3_600_000;

/**
 * The durable queue behind `<prefix>.v1.tasks.<member_id>`: a work-queue stream, so a task is kept
 * until its member acknowledges it (after the controller's verdict), whether or not the member is
 * connected when the task is issued. `Nats-Msg-Id` = the task id: a controller that resends after a
 * restart does not queue a task twice within the duplicate window.
 */
export function councilTaskStreamConfig(name: string, prefix: string, replicas = 1): Partial<StreamConfig> {
  return {
    name,
    subjects: [councilSubjects(prefix).allTasks],
    storage: StorageType.File,
    retention: RetentionPolicy.Workqueue,
    discard: DiscardPolicy.Old,
    num_replicas: replicas,
    duplicate_window: 2 * 60_000 * NS_PER_MS,
    max_age: TASK_MAX_AGE_MS * NS_PER_MS,
  };
}

export function ensureCouncilTaskStream(jsm: JetStreamManager, name: string, prefix: string, replicas = 1): Promise<void> {
  return openRacingCreate(async () => {
    try {
      await jsm.streams.info(name);
    } catch (err) {
      if (!isNotFound(err)) throw err;
      await jsm.streams.add(councilTaskStreamConfig(name, prefix, replicas));
    }
  });
}

/** Durable consumer names cannot hold `.`; member ids never do (MEMBER_ID_PATTERN). */
export function memberTaskConsumerName(memberId: string): string {
  return `member-${memberId}`;
}

/**
 * One durable pull consumer per member, filtered on its task subject: redelivered until acked
 * (no delivery limit: the member drops a task past its deadline itself).
 */
export function memberTaskConsumerConfig(prefix: string, memberId: string): Partial<ConsumerConfig> {
  return {
    durable_name: memberTaskConsumerName(memberId),
    filter_subject: councilSubjects(prefix).task(memberId),
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    ack_wait: MEMBER_TASK_ACK_WAIT_MS * NS_PER_MS,
    max_deliver: -1,
    max_ack_pending: 1_000,
  };
}

/**
 * Creates the member's consumer if it is missing (idempotent; two callers at once both succeed).
 * Only the council service calls it, before a member's first task: members bind to their queue and
 * may not create consumers, since a create request can name a deliver subject that the server
 * then publishes to past the member's own permissions (deploy/nats/nats-accounts.conf).
 */
export async function ensureMemberTaskConsumer(jsm: JetStreamManager, stream: string, prefix: string, memberId: string): Promise<string> {
  const name = memberTaskConsumerName(memberId);
  try {
    await jsm.consumers.info(stream, name);
  } catch (err) {
    if (!isNotFound(err)) throw err;
    try {
      await jsm.consumers.add(stream, memberTaskConsumerConfig(prefix, memberId));
    } catch (e) {
      // Two council replicas issuing a member's first task together: the other one created it.
      if (!/already (exists|in use)/i.test((e as Error).message)) throw e;
    }
  }
  return name;
}
