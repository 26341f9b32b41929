export * from './lib/subjects';
export * from './lib/reply';
export * from './lib/jetstream';
export { PlainJsonNatsServer, PlainNatsContext } from './lib/plain-json-nats.server';
export type { PlainJsonNatsServerOptions } from './lib/plain-json-nats.server';
export { PassThroughRpcExceptionFilter } from './lib/rpc-exception.filter';
