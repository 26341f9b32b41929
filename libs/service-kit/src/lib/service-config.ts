import 'reflect-metadata';
import { Expose, Type } from 'class-transformer';
import { IsIn, IsInt, IsOptional, IsString, Matches, Max, Min } from 'class-validator';

const NATS_TOKEN = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;

/**
 * Configuration every Conclave service shares. Each service extends it with its own
 * variables; `loadConfig` reads it once at start and refuses to start on a bad value.
 */
export class ServiceConfig {
  @Expose({ name: 'NATS_URL' })
  @IsString()
  natsUrl = 'nats://127.0.0.1:4222';

  /** Credentials for a NATS server with accounts (deploy/nats); nats.js ignores user:pass in URLs. */
  @Expose({ name: 'NATS_USER' })
  @IsOptional()
  @IsString()
  natsUser?: string;

  @Expose({ name: 'NATS_PASSWORD' })
  @IsOptional()
  @IsString()
  natsPassword?: string;

  /** A NATS credentials file (operator mode: the user's JWT and NKEY seed), instead of user and password. */
  @Expose({ name: 'NATS_CREDS' })
  @IsOptional()
  @IsString()
  natsCreds?: string;

  /** Where replies to this service arrive: the prefix its NATS user may subscribe to (`_INBOX_<user>`, deploy/nats). */
  @Expose({ name: 'NATS_INBOX_PREFIX' })
  @IsOptional()
  @Matches(/^_INBOX[A-Za-z0-9_-]*$/)
  natsInboxPrefix?: string;

  @Expose({ name: 'CONCLAVE_SUBJECT_PREFIX' })
  @Matches(NATS_TOKEN)
  subjectPrefix = 'acp';

  @Expose({ name: 'CONCLAVE_COUNCIL_PREFIX' })
  @Matches(NATS_TOKEN)
  councilPrefix = 'council';

  /** JetStream stream that holds the event log (when EVENTSTORE_URL is not set). */
  @Expose({ name: 'CONCLAVE_EVENT_STREAM' })
  @Matches(/^[A-Za-z0-9_-]+$/)
  eventStream = 'CONCLAVE_EVENTS';

  @Expose({ name: 'CONCLAVE_EVENT_SUBJECT_PREFIX' })
  @Matches(NATS_TOKEN)
  eventSubjectPrefix = 'conclave';

  /** Suffix for the consumer-facing streams (ACP_DECISIONS...), so test runs never collide. */
  @Expose({ name: 'CONCLAVE_STREAM_SUFFIX' })
  @IsOptional()
  @Matches(/^[A-Za-z0-9_-]*$/)
  streamSuffix = '';

  @Expose({ name: 'CONCLAVE_LOG_REPLICAS' })
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(5)
  logReplicas = 1;

  @Expose({ name: 'EVENTSTORE_URL' })
  @IsOptional()
  @IsString()
  eventStoreUrl?: string;

  @Expose({ name: 'HTTP_PORT' })
  @Type(() => Number)
  @IsInt()
  @Min(0)
  @Max(65535)
  httpPort = 0;

  /**
   * Health, metrics and each service's internal HTTP routes (audit export included) are not
   * authenticated: loopback unless a deployment opens them (containers set 0.0.0.0).
   */
  @Expose({ name: 'HTTP_HOST' })
  @IsString()
  httpHost = '127.0.0.1';

  @Expose({ name: 'LOG_LEVEL' })
  @IsIn(['error', 'warn', 'log', 'info', 'debug', 'verbose'])
  logLevel = 'info';

  @Expose({ name: 'LOG_FORMAT' })
  @IsIn(['text', 'json'])
  logFormat = 'text';

  /** RFC 15.5: grace added to expires_at before a proposal expires (clock skew). */
  @Expose({ name: 'CONCLAVE_EXPIRY_GRACE_MS' })
  @Type(() => Number)
  @IsInt()
  @Min(0)
  expiryGraceMs = 250;

  /** RFC 10.1 item 3: JSON array of policy rules that escalate on submission (see docs). */
  @Expose({ name: 'CONCLAVE_ESCALATION_POLICIES' })
  @IsOptional()
  @IsString()
  escalationPoliciesJson?: string;

  /**
   * A reactor whose subscription cannot be resumed makes the process exit non-zero, so the
   * orchestrator restarts it. `false` only where services run inside another process (tests).
   */
  @Expose({ name: 'CONCLAVE_EXIT_ON_FATAL' })
  @IsIn(['true', 'false'])
  exitOnFatal: 'true' | 'false' = 'true';

  /**
   * Creating the application (NATS connection, event log, checkpoint and snapshot stores) takes
   * a few requests, each with a timeout; a process still creating it after this long has hung,
   * and exits 70 to be restarted (with CONCLAVE_EXIT_ON_FATAL=true). Catching up afterwards is
   * not bounded by it: that grows with the log.
   */
  @Expose({ name: 'CONCLAVE_CREATE_TIMEOUT_MS' })
  @Type(() => Number)
  @IsInt()
  @Min(1000)
  createTimeoutMs = 30_000;

  /**
   * Starting then runs the bootstrap hooks: reactors, caches and outboxes catch up with the log.
   * That may take long on a big log, so it is bounded by progress rather than time: a start that
   * handles no event for this long is stuck, and exits 70 to be restarted (with
   * CONCLAVE_EXIT_ON_FATAL=true), naming the readiness checks still failing.
   */
  @Expose({ name: 'CONCLAVE_START_STALL_MS' })
  @Type(() => Number)
  @IsInt()
  @Min(1000)
  startStallMs = 30_000;

  /**
   * `off` leaves out the request, append and outbox metrics and tracing (whatever the OTEL_*
   * variables say): for measuring what they cost (npm run bench), not for production.
   */
  @Expose({ name: 'CONCLAVE_INSTRUMENTATION' })
  @IsIn(['on', 'off'])
  instrumentation: 'on' | 'off' = 'on';

  /** How long a reactor keeps trying to resume its subscription through a log outage before it gives up. */
  @Expose({ name: 'CONCLAVE_RESUBSCRIBE_GIVE_UP_MS' })
  @Type(() => Number)
  @IsInt()
  @Min(1000)
  resubscribeGiveUpMs = 300_000;

  /** A reactor saves a snapshot of its state after this many events... */
  @Expose({ name: 'CONCLAVE_SNAPSHOT_EVERY_EVENTS' })
  @Type(() => Number)
  @IsInt()
  @Min(1)
  snapshotEveryEvents = 10_000;

  /** ...or this long after the first event not in a snapshot. */
  @Expose({ name: 'CONCLAVE_SNAPSHOT_EVERY_MS' })
  @Type(() => Number)
  @IsInt()
  @Min(100)
  snapshotEveryMs = 30_000;

  @Expose({ name: 'CONCLAVE_AUTH_MODE' })
  @IsIn(['required', 'off'])
  authMode: 'required' | 'off' = 'required';
}
