import { Command } from 'commander';
import { addNatsLoginOptions, natsJsApiPrefix, NatsLoginError, NatsLoginOptions } from './nats-connection';

/** The global options as `conclave` parses them from `argv` and `env`. */
function parse(argv: string[], env: NodeJS.ProcessEnv): NatsLoginOptions {
  const program = addNatsLoginOptions(new Command().option('--nats <url>', 'NATS server URL', 'nats://127.0.0.1:4222'), env);
  return program.parse(argv, { from: 'user' }).opts<NatsLoginOptions>();
}

describe('the JetStream API prefix of the CLI (--js-api-prefix, NATS_JS_API_PREFIX)', () => {
  it('given neither, then the CLI uses the server API itself (no prefix)', () => {
    expect(natsJsApiPrefix(parse([], {}))).toBeUndefined();
  });

  it('given NATS_JS_API_PREFIX, then that prefix; given both, then the flag wins', () => {
    expect(natsJsApiPrefix(parse([], { NATS_JS_API_PREFIX: '$JS.conclave.API' }))).toBe('$JS.conclave.API');
    expect(natsJsApiPrefix(parse(['--js-api-prefix', '$JS.other.API'], { NATS_JS_API_PREFIX: '$JS.conclave.API' }))).toBe('$JS.other.API');
  });

  it('given an empty NATS_JS_API_PREFIX, then no prefix (an unset variable in a compose file is empty)', () => {
    expect(natsJsApiPrefix(parse([], { NATS_JS_API_PREFIX: '' }))).toBeUndefined();
  });

  it.each(['$JS.>', '$JS.*.API', '$JS..API', '$JS.conclave.API.', '$JS conclave'])(
    'given the prefix %p (a wildcard, an empty token or a space), then a usage error (exit 64) before connecting',
    (prefix) => {
      const attempt = () => natsJsApiPrefix(parse(['--js-api-prefix', prefix], {}));
      expect(attempt).toThrow(NatsLoginError);
      expect(attempt).toThrow(/--js-api-prefix/);
      expect(new NatsLoginError('x').exitCode).toBe(64);
    },
  );
});
