import { Inject, Injectable } from '@nestjs/common';
import { createHash, timingSafeEqual } from 'node:crypto';
import { AcpError } from '@conclave/acp-protocol';
import { AUTH_HEADERS } from '@conclave/registry-protocol';
import { CommandContext, CommandRequest, Identity, ParticipantDirectory, RateLimitedError } from '@conclave/service-kit';
import { ESCALATION_SETTINGS, EscalationSettings } from './escalation.config';

const digest = (s: string) => createHash('sha256').update(s).digest();

/** Failed token attempts accepted per source and window before every attempt is refused. */
export const TOKEN_FAILURES_PER_WINDOW = 10;
export const TOKEN_FAILURE_WINDOW_MS = 60_000;
/**
 * Sources whose failures are remembered at most. Over it, expired sources go first, then the
 * oldest ones not locked out: a flood of new sources (any name on NATS is one) never lifts a
 * lockout, and memory stays bounded.
 */
export const TOKEN_FAILURE_SOURCES = 10_000;

/** Where a request comes from and what it carries, whatever the channel (NATS, HTTP, console). */
export interface HumanCredentials {
  /** The request: on NATS a signed one (Ed25519 headers or a JWT) authenticates through the registry. */
  request?: CommandRequest;
  /** An `Authorization` value: `Bearer <token>` (or a JWT on NATS). */
  authorization?: string;
  /** The identity the body declares (`resolved_by`), taken as is only with auth off. */
  declared?: string;
  /**
   * Who is knocking, for the failed-token limit: `http:<client address>`, or `nats` (a NATS
   * message carries no address: the limit is then kept per participant the request names).
   */
  source: string;
}

/**
 * Who a person is, on every channel of the escalation service. A signed NATS request is
 * authenticated by CommandContext like any command. A bearer token (CONCLAVE_HUMAN_TOKENS) only
 * names a participant: with auth required that participant must be registered and active (a
 * deactivated participant's token stops working at once), and the identity goes through the same
 * authorization (role, grants, clearance) and auditing as a signed request. Failed token
 * attempts are limited per source. With auth off the declared identity is taken.
 */
@Injectable()
export class HumanResolverTokens {
  private readonly tokens: Array<{ digest: Buffer; participant: string }>;
  private readonly failures = new Map<string, number[]>();
  /** Sources refused since their last allowed attempt: only the first refusal is audited. */
  private readonly refusing = new Set<string>();

  constructor(
    @Inject(ESCALATION_SETTINGS) settings: EscalationSettings,
    private readonly context: CommandContext,
    private readonly directory: ParticipantDirectory,
  ) {
    this.tokens = [...settings.humanTokens].map(([token, participant]) => ({ digest: digest(token), participant }));
  }

  get required(): boolean {
    return this.context.authRequired;
  }

  async identify(credentials: HumanCredentials): Promise<Identity> {
    const token = bearer(credentials.authorization);
    // Only a NATS request carries a subject and headers a signature can cover.
    const request = credentials.source === 'nats' ? credentials.request : undefined;
    if (request && (request.getHeaders()?.get(AUTH_HEADERS.signature) || (token !== undefined && looksLikeJwt(token)))) {
      return this.context.authenticate(request, credentials.declared);
    }
    if (token !== undefined && (this.required || this.tokens.length > 0)) {
      // On NATS the request names whose token it is (the body's declared identity, else the
      // Conclave-Participant header) and the token is compared with that participant's tokens
      // only: failures are counted per named participant, so one caller's wrong tokens never
      // lock out another, and guessing under many names finds no one's token faster.
      const named =
        credentials.source === 'nats'
          ? (credentials.declared ?? credentials.request?.getHeaders()?.get(AUTH_HEADERS.participant))
          : undefined;
      const source = credentials.source === 'nats' ? `nats:${named || '-'}` : credentials.source;
      return this.byToken(token, source, named || undefined);
    }
    if (!this.required) return this.context.authenticate(undefined, credentials.declared);
    throw new AcpError(
      'UNAUTHENTICATED',
      'credentials required: a signed request, or Authorization: Bearer <token> of a registered participant',
    );
  }

  /**
   * The reader `who` as the registry has them now, for a stream that outlives its request (the
   * console's decisions): each item is checked against today's grants and clearance. Undefined
   * once, with authentication required, they may read nothing (deactivated, no longer registered).
   */
  async current(who: Identity): Promise<Identity | undefined> {
    if (!this.required) return who;
    const state = await this.directory.load(who.participant_id);
    return state.status === 'active' ? { ...who, state } : undefined;
  }

  private async byToken(token: string, source: string, named?: string): Promise<Identity> {
    this.checkRate(source);
    const presented = digest(token);
    // Compare with every configured token (of the named participant, when one is named), in constant time for each.
    let participant: string | undefined;
    for (const t of this.tokens)
      if (timingSafeEqual(t.digest, presented) && (named === undefined || t.participant === named)) participant = t.participant;
    if (participant === undefined) {
      this.fail(source);
      throw new AcpError('UNAUTHENTICATED', 'the token is not a token of this deployment');
    }
    const state = await this.directory.load(participant);
    if (this.required && state.status === 'unregistered')
      throw new AcpError('UNAUTHENTICATED', `the token names ${participant}, who is not a registered participant`);
    if (this.required && state.status === 'deactivated') throw new AcpError('UNAUTHENTICATED', `participant ${participant} is deactivated`);
    return { participant_id: participant, via: this.required ? 'token' : 'declared', state };
  }

  private recent(source: string): number[] {
    const since = Date.now() - TOKEN_FAILURE_WINDOW_MS;
    const list = (this.failures.get(source) ?? []).filter((t) => t > since);
    if (list.length === 0) this.failures.delete(source);
    else this.failures.set(source, list);
    return list;
  }

  private checkRate(source: string): void {
    const recent = this.recent(source);
    if (recent.length < TOKEN_FAILURES_PER_WINDOW) {
      this.refusing.delete(source);
      return;
    }
    const retryAfterMs = Math.max(1, recent[0] + TOKEN_FAILURE_WINDOW_MS - Date.now());
    const repeat = this.refusing.has(source);
    // A source refused is a source with failures: bounded with them (evict).
    this.refusing.add(source);
    throw new RateLimitedError(`too many failed token attempts from ${source}; retry after ${retryAfterMs} ms`, retryAfterMs, repeat);
  }

  private fail(source: string): void {
    this.failures.set(source, [...this.recent(source), Date.now()]);
    if (this.failures.size > TOKEN_FAILURE_SOURCES) this.evict();
  }

  /**
   * Down to nine tenths of the bound (so a flood pays for one pass per thousand new sources, not
   * one per request): expired sources, then the oldest not locked out, and locked-out ones only
   * when they alone fill the bound.
   */
  private evict(): void {
    const target = Math.floor(TOKEN_FAILURE_SOURCES * 0.9);
    const since = Date.now() - TOKEN_FAILURE_WINDOW_MS;
    const forget = (source: string) => {
      this.failures.delete(source);
      this.refusing.delete(source);
    };
    for (const [source, times] of this.failures) if (times[times.length - 1] <= since) forget(source);
    for (const [source, times] of this.failures) {
      if (this.failures.size <= target) return;
      if (times.filter((t) => t > since).length < TOKEN_FAILURES_PER_WINDOW) forget(source);
    }
    for (const source of this.failures.keys()) {
      if (this.failures.size <= target) return;
      forget(source);
    }
  }
}

function bearer(authorization: string | undefined): string | undefined {
  if (!authorization) return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  return m ? m[1] : undefined;
}

function looksLikeJwt(token: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(token);
}
