export * from './lib/subjects';
export * from './lib/reply';
export * from './lib/jetstream';
export { DEFAULT_MAX_REPLY_BYTES, PlainJsonNatsServer, PlainNatsContext } from './lib/plain-json-nats.server';
export type { PlainJsonNatsServerOptions } from './lib/plain-json-nats.server';
export { PassThroughRpcExceptionFilter } from './lib/rpc-exception.filter';
export { checkTextLengths, jsonBytes, REPLY_ENVELOPE_BYTES, takeWithinBytes, TEXT_LIMITS } from './lib/reply-budget';
export { inboxOf, isReplyInbox } from './lib/inbox';
export { readRequestBody } from './lib/request-body';
export { w3cSpanContext, w3cTraceparent } from './lib/trace-context';
export { newUlid } from './lib/ulid-source';
export {
  councilTaskStreamConfig,
  ensureCouncilTaskStream,
  ensureMemberTaskConsumer,
  memberTaskConsumerConfig,
  memberTaskConsumerName,
  MEMBER_TASK_ACK_WAIT_MS,
} from './lib/council-tasks';
