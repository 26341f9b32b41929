import type { ParticipantState } from '@conclave/registry-protocol';
import type { MsgHdrs } from 'nats';

/** Who is acting, as the edge established it. */
export interface Identity {
  participant_id: string;
  /**
   * `signature`: verified Ed25519 signature of the request (auth required); `jwt`: a verified
   * EdDSA JWT bound to the subject and body; `token`: a human resolver token of the escalation
   * service that maps to a registered participant; `declared`: taken from the request (auth off).
   */
  via: 'signature' | 'jwt' | 'token' | 'declared';
  /** The key that signed, when via is `signature` or `jwt`. */
  key_id?: string;
  /** The registry's view of the participant (`unregistered` when unknown, possible with auth off). */
  state: ParticipantState;
}

/** What authentication needs of a request: PlainNatsContext has exactly this. */
export interface CommandRequest {
  getSubject(): string;
  getRawBody(): Uint8Array;
  getHeaders(): MsgHdrs | undefined;
}
