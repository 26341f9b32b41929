import type { CalibrationScope } from './calibration';
import type { ScopedCapabilityEstimate } from './capability';
import type { ConcentrationAudit } from './concentration';

/*
 * What the Council API's evaluation commands answer, besides `ok: true`: one shape for the
 * service that answers and the SDK that reads it.
 */

/** `outcome`: the outcome recorded against an ended run. */
export interface OutcomeRecordedReply {
  run_id: string;
  outcome_id: string;
}

/** `estimates` (council:L4): the capability estimates of the domains the caller may read. */
export interface CapabilityEstimatesReply {
  estimates: ScopedCapabilityEstimate[];
  /** Ended runs, in the domains the caller may read, the estimates were folded from. */
  ended_runs: number;
  /** True when the whole log was folded again for this answer. */
  rebuilt: boolean;
}

/** `calibration` (council:L5): scores per member, role and domain. */
export interface CalibrationReply {
  calibration: CalibrationScope[];
  /** Forecasts scored, in the domains the caller may read. */
  forecasts: number;
}

/** `concentration` (spec 16.7): the audit per domain and period, of the domains the caller may read. */
export interface ConcentrationReply {
  audit: ConcentrationAudit;
}
