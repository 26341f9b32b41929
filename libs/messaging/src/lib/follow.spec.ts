import type { Consumer, ConsumerMessages } from 'nats';
import { follow } from './jetstream';

/** A consumer whose `consume()` answers when the test says, as nats.js does while it retries a create. */
function slowConsumer(): { consumer: Consumer; made: (m: ConsumerMessages) => void; options: unknown[] } {
  let made: (m: ConsumerMessages) => void = () => undefined;
  const options: unknown[] = [];
  const consumer = {
    consume: (o: unknown) => {
      options.push(o);
      return new Promise<ConsumerMessages>((resolve) => (made = resolve));
    },
  } as unknown as Consumer;
  return { consumer, made: (m) => made(m), options };
}

describe('follow: an ordered consumer a service follows', () => {
  it('given a consumer made at once, then it is consumed with 5 s pulls and the caller options', async () => {
    const { consumer, made, options } = slowConsumer();
    const messages = { stop: jest.fn() } as unknown as ConsumerMessages;
    const following = follow(consumer, { abort_on_missing_resource: true }, 1_000);
    made(messages);
    await expect(following).resolves.toBe(messages);
    expect(options).toEqual([{ expires: 5_000, abort_on_missing_resource: true }]);
  });

  it('given a consumer not made in time, then follow fails, and the messages made later are stopped', async () => {
    const { consumer, made } = slowConsumer();
    await expect(follow(consumer, {}, 20)).rejects.toThrow('the consumer was not made within 20 ms');
    const stop = jest.fn();
    made({ stop } as unknown as ConsumerMessages);
    await new Promise((r) => setTimeout(r, 0));
    expect(stop).toHaveBeenCalledTimes(1);
  });
});
