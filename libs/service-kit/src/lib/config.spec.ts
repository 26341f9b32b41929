import { Expose, Type } from 'class-transformer';
import { IsIn, IsInt, IsString, Min } from 'class-validator';
import { ConfigError, loadConfig } from './config';

class ExampleConfig {
  @Expose({ name: 'NATS_URL' })
  @IsString()
  natsUrl = 'nats://127.0.0.1:4222';

  @Expose({ name: 'MAX_PAYLOAD_BYTES' })
  @Type(() => Number)
  @IsInt()
  @Min(1)
  maxPayloadBytes = 1024;

  @Expose({ name: 'AUTH_MODE' })
  @IsIn(['required', 'off'])
  authMode = 'required';
}

describe('loadConfig (config validated once at start)', () => {
  it('given no variables, then the defaults', () => {
    expect(loadConfig(ExampleConfig, {})).toMatchObject({ natsUrl: 'nats://127.0.0.1:4222', maxPayloadBytes: 1024, authMode: 'required' });
  });

  it('given variables, then they are read and converted', () => {
    expect(loadConfig(ExampleConfig, { MAX_PAYLOAD_BYTES: '2048', AUTH_MODE: 'off', UNRELATED: 'x' })).toMatchObject({
      maxPayloadBytes: 2048,
      authMode: 'off',
    });
  });

  it('given bad variables, then one ConfigError naming every bad one', () => {
    let error: unknown;
    try {
      loadConfig(ExampleConfig, { MAX_PAYLOAD_BYTES: 'lots', AUTH_MODE: 'maybe' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems.join('\n')).toMatch(/maxPayloadBytes/);
    expect((error as ConfigError).problems.join('\n')).toMatch(/authMode/);
  });
});
