/** Injection tokens of the service kit, apart so that providers never import each other in a cycle. */
export const NATS_CONNECTION = Symbol('NATS_CONNECTION');
export const SERVICE_CONFIG = Symbol('SERVICE_CONFIG');
export const SERVICE_NAME = Symbol('SERVICE_NAME');
export const EVENT_LOG = Symbol('EVENT_LOG');
export const CHECKPOINTS = Symbol('CHECKPOINTS');
export const CLOCK = Symbol('CLOCK');
export const IDS = Symbol('IDS');
export const DECIDER_CONFIG = Symbol('DECIDER_CONFIG');
export const FATAL = Symbol('FATAL');
export const SNAPSHOTS = Symbol('SNAPSHOTS');
/** The observers around every NATS API request (metrics, tracing, log context): one chain for every edge that takes requests. */
export const REQUEST_OBSERVER = Symbol('REQUEST_OBSERVER');
