import { Inject, Injectable, Optional } from '@nestjs/common';
import { AcpError, CommandMetadata } from '@conclave/acp-protocol';
import {
  Action,
  AUTH_HEADERS,
  ClassificationLevel,
  DomainGrant,
  ParticipantKey,
  Role,
  activeKeys,
  settleRotation,
  authorize,
  checkFreshness,
  clears,
  grantFor,
  initialParticipantState,
  isNonce,
  isParticipantId,
  participantStream,
  requireRole,
  signingInput,
} from '@conclave/registry-protocol';
import type { Clock, IdGenerator } from './runtime';
import { RateLimitedError, RateLimiter } from './auth/rate-limiter';
import { ServiceConfig } from './service-config';
import { CLOCK, IDS, SERVICE_CONFIG } from './tokens';
import { AuthSettings, authSettingsOf } from './auth/auth-config';
import { decodeBase64, ed25519PublicKey, sha256Hex, verifyEd25519 } from './auth/crypto';
import type { CommandRequest, Identity } from './auth/identity';
import { NonceStore } from './auth/nonce-store';
import { decodeJwt, jwtVerify, type JWTPayload } from 'jose';
import { ParticipantDirectory } from './auth/participant-directory';

/**
 * Stamps what the edge owns on every command (a fresh command id, `now` from the clock, the
 * acting identity) and is THE authentication and authorization seam (RFC 14.1, 14.2, 14.4,
 * 14.5; docs/security.md):
 *
 *   const identity = await context.authenticate(request, declaredActor);  // UNAUTHENTICATED
 *   context.actAs(identity, body.participant_id, 'participant_id');       // FORBIDDEN
 *   const grant = context.authorize(identity, 'respond', proposal.domain); // FORBIDDEN
 *   store.execute({ ...context.metadata(identity), ... });
 *
 * With CONCLAVE_AUTH_MODE=required (the default) a command must carry an Ed25519 signature of
 * its subject, timestamp, nonce, participant and exact body bytes by an active key of a
 * registered participant; the timestamp must be within the skew window and the nonce unused.
 * With `off` (local `up` only) the identity the request declares is taken as is and nothing is
 * authorized: `authorize` returns the participant's grant when there is one and never refuses.
 */
@Injectable()
export class CommandContext {
  private readonly settings: AuthSettings;
  /** Per authenticated participant: one participant's flood never uses up another's allowance. */
  private readonly limiter: RateLimiter;

  constructor(
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(IDS) private readonly ids: IdGenerator,
    @Inject(SERVICE_CONFIG) config: ServiceConfig,
    @Optional() private readonly directory?: ParticipantDirectory,
    @Optional() private readonly nonces?: NonceStore,
  ) {
    this.settings = authSettingsOf(config);
    this.limiter = new RateLimiter(this.settings.rateLimit);
  }

  get authRequired(): boolean {
    return this.settings.authMode === 'required';
  }

  /** `registry`, or `declared` when auth is off or the open mode is configured. */
  get responseFactors(): 'registry' | 'declared' {
    return this.authRequired ? this.settings.responseFactors : 'declared';
  }

  now(): string {
    return this.clock.now().toISOString();
  }

  newId(): string {
    return this.ids.next();
  }

  /**
   * Command metadata for an identity. A plain string is the declared actor, accepted only with
   * auth off (kept for edges that have not moved to `authenticate` yet).
   */
  metadata(actor: Identity | string): CommandMetadata {
    const id = typeof actor === 'string' ? this.declaredOnly(actor) : actor.participant_id;
    return { command_id: this.ids.next(), now: this.now(), actor: id };
  }

  /**
   * Who sent `request`. Auth required: the verified signer (else UNAUTHENTICATED). Auth off:
   * `declaredActor`, else the Conclave-Participant header, else `anonymous`.
   */
  async authenticate(request: CommandRequest | undefined, declaredActor?: string): Promise<Identity> {
    if (!this.authRequired) {
      const claimed = declaredActor ?? request?.getHeaders()?.get(AUTH_HEADERS.participant) ?? 'anonymous';
      return { participant_id: claimed || 'anonymous', via: 'declared', state: await this.loadState(claimed) };
    }
    if (!request) throw unauthenticated('this command carries no credentials');
    if (!this.directory || !this.nonces) throw unauthenticated('this service has no participant registry to authenticate against');
    const h = request.getHeaders();
    const get = (name: string) => h?.get(name) || undefined;
    const bearer = get('Authorization');
    if (bearer?.startsWith('Bearer ')) return this.authenticateJwt(request, bearer.slice('Bearer '.length));
    const participant = get(AUTH_HEADERS.participant);
    const timestamp = get(AUTH_HEADERS.timestamp);
    const nonce = get(AUTH_HEADERS.nonce);
    const signatureText = get(AUTH_HEADERS.signature);
    const missing = [
      [AUTH_HEADERS.participant, participant],
      [AUTH_HEADERS.timestamp, timestamp],
      [AUTH_HEADERS.nonce, nonce],
      [AUTH_HEADERS.signature, signatureText],
    ].filter(([, v]) => v === undefined);
    if (missing.length > 0 || !participant || !timestamp || !nonce || !signatureText) {
      throw unauthenticated(`missing authentication header(s): ${missing.map(([n]) => n).join(', ')}`);
    }
    if (!isParticipantId(participant)) throw unauthenticated(`${AUTH_HEADERS.participant} is not a participant id`);
    if (!isNonce(nonce)) throw unauthenticated(`${AUTH_HEADERS.nonce} must be 16 to 128 characters of [A-Za-z0-9_-]`);
    const signature = decodeBase64(signatureText);
    if (!signature) throw unauthenticated(`${AUTH_HEADERS.signature} is not base64`);
    const fresh = checkFreshness(timestamp, this.clock.now().getTime(), this.settings.authSkewMs);
    if (!fresh.fresh) throw unauthenticated(`stale or invalid ${AUTH_HEADERS.timestamp}: ${fresh.reason}`);

    const state = await this.directory.load(participant);
    if (state.status === 'unregistered') throw unauthenticated(`unknown participant ${participant}`);
    if (state.status === 'deactivated') throw unauthenticated(`participant ${participant} is deactivated`);
    const message = signingInput({ subject: request.getSubject(), timestamp, nonce, participant_id: participant }, request.getRawBody());
    const keyId = get(AUTH_HEADERS.keyId);
    // Keys as they stand now: a pending rotation whose cool-down has passed has taken effect.
    const keys = settleRotation(state.participant, this.now()).keys;
    const candidates = keyId ? keys.filter((k) => k.key_id === keyId) : keys;
    if (keyId && candidates.length === 0) throw unauthenticated(`participant ${participant} has no key ${keyId}`);
    const signer = candidates.find((k) => verifyEd25519(k.public_key, message, signature));
    if (!signer) throw unauthenticated(`signature does not verify with ${keyId ? `key ${keyId}` : 'any key'} of ${participant}`);
    if (signer.status !== 'active') throw unauthenticated(endedKey(participant, signer, state.participant.pending_rotation?.effective_at));
    if (!activeKeys(state.participant, this.now()).some((k) => k.key_id === signer.key_id))
      throw unauthenticated(endedKey(participant, signer));
    // Counted only once the signature verified, so nobody spends another participant's allowance;
    // before the nonce, so a refused request can be sent again as it is.
    this.throttle(participant);
    // Last, so that only a valid signature can spend a nonce.
    const nonceKey = `${participantStream(participant).slice('participant-'.length)}.${nonce}`;
    if (!(await this.nonces.claim(nonceKey))) throw unauthenticated(`replayed request: nonce ${nonce} was already used by ${participant}`);
    return { participant_id: participant, via: 'signature', key_id: signer.key_id, state };
  }

  /** RATE_LIMITED (with the wait in retry_after_ms) once the participant's allowance is spent. */
  private throttle(participant: string): void {
    const decision = this.limiter.take(participant, this.clock.now().getTime());
    if (decision.allowed) return;
    throw new RateLimitedError(
      `too many commands from ${participant}: at most ${this.settings.rateLimit.perSecond} per second (bursts of ${this.settings.rateLimit.burst}); retry after ${decision.retryAfterMs} ms`,
      decision.retryAfterMs,
      !decision.firstRefusal,
      participant,
    );
  }

  /**
   * The JWT alternative (RFC 14.1): `Authorization: Bearer <jwt>`, EdDSA-signed by an active key of
   * the participant named in `sub`, `aud` = the subject, bound to the exact body by `body_sha256`,
   * fresh (`iat` within the skew window) and used once (`jti` in the nonce store).
   */
  private async authenticateJwt(request: CommandRequest, token: string): Promise<Identity> {
    let claims: JWTPayload;
    try {
      claims = decodeJwt(token);
    } catch {
      throw unauthenticated('the bearer token is not a JWT');
    }
    const participant = claims.sub;
    if (!participant || !isParticipantId(participant)) throw unauthenticated('the JWT names no participant in sub');
    const state = await this.directory!.load(participant);
    if (state.status === 'unregistered') throw unauthenticated(`unknown participant ${participant}`);
    if (state.status === 'deactivated') throw unauthenticated(`participant ${participant} is deactivated`);
    const skewSeconds = Math.ceil(this.settings.authSkewMs / 1000);
    let verified: { payload: JWTPayload; keyId: string } | undefined;
    let why = 'no active key';
    for (const key of activeKeys(state.participant, this.now())) {
      try {
        const { payload } = await jwtVerify(token, ed25519PublicKey(key.public_key), {
          algorithms: ['EdDSA'],
          audience: request.getSubject(),
          subject: participant,
          maxTokenAge: skewSeconds,
          clockTolerance: skewSeconds,
          currentDate: this.clock.now(),
          requiredClaims: ['iat', 'jti', 'body_sha256'],
        });
        verified = { payload, keyId: key.key_id };
        break;
      } catch (err) {
        why = (err as Error).message;
      }
    }
    if (!verified) throw unauthenticated(`the JWT does not verify with an active key of ${participant}: ${why}`);
    if (verified.payload['body_sha256'] !== sha256Hex(request.getRawBody()))
      throw unauthenticated('the JWT is bound to another body (body_sha256)');
    const jti = String(verified.payload.jti);
    if (!isNonce(jti)) throw unauthenticated('jti must be 16 to 128 characters of [A-Za-z0-9_-]');
    this.throttle(participant);
    const nonceKey = `${participantStream(participant).slice('participant-'.length)}.${jti}`;
    if (!(await this.nonces!.claim(nonceKey))) throw unauthenticated(`replayed request: jti ${jti} was already used by ${participant}`);
    return { participant_id: participant, via: 'jwt', key_id: verified.keyId, state };
  }

  /**
   * The identity a body declares (author, participant_id, requested_by, resolved_by) must be the
   * authenticated one (else FORBIDDEN naming the field). With auth off the declared one is taken.
   */
  async actAs(identity: Identity, declared: string, field: string): Promise<Identity> {
    if (identity.via === 'declared') {
      return declared === identity.participant_id
        ? identity
        : { participant_id: declared, via: 'declared', state: await this.loadState(declared) };
    }
    if (declared !== identity.participant_id) {
      throw new AcpError('FORBIDDEN', `${field} is ${declared} but the request is signed by ${identity.participant_id}`, field);
    }
    return identity;
  }

  /**
   * RFC 14.2: may `identity` perform `action` in `domain`? Returns the deciding grant (for the
   * registry's factors), else FORBIDDEN. `resolve` also needs the human-resolver role. With auth
   * off it never refuses and returns the grant when the participant happens to have one.
   */
  authorize(identity: Identity, action: Action, domain: string): DomainGrant | undefined {
    if (!this.authRequired) return identity.state.status === 'active' ? grantFor(identity.state.participant, domain) : undefined;
    return authorize(identity.state, action, domain);
  }

  /** A role (administrator for the registry, human-resolver...); FORBIDDEN without it. No-op with auth off. */
  requireRole(identity: Identity, role: Role): void {
    if (this.authRequired) requireRole(identity.state, role);
  }

  /** RFC 14.5: may `identity` read a payload of this classification? Always true with auth off. */
  canRead(identity: Identity, classification: ClassificationLevel | null | undefined): boolean {
    if (!classification || !this.authRequired) return true;
    return identity.state.status === 'active' && clears(identity.state.participant.clearance, classification);
  }

  private async loadState(participantId: string) {
    if (!this.directory || !isParticipantId(participantId)) return initialParticipantState;
    // Declared identities (auth off) are not a security decision: no request per command.
    return this.directory.load(participantId, this.authRequired ? 'log' : 'followed');
  }

  private declaredOnly(declaredActor: string): string {
    if (!this.authRequired) return declaredActor;
    throw unauthenticated('this command was not authenticated (the edge must call CommandContext.authenticate)');
  }
}

function unauthenticated(message: string): AcpError {
  return new AcpError('UNAUTHENTICATED', message);
}

function endedKey(participant: string, key: ParticipantKey, effectiveAt?: string): string {
  if (key.status === 'pending') return `key ${key.key_id} of ${participant} is pending a rotation that takes effect at ${effectiveAt}`;
  return `key ${key.key_id} of ${participant} was ${key.status === 'revoked' ? 'revoked' : 'rotated out'} at ${key.ended_at}`;
}
