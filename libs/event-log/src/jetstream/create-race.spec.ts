import { openRacingCreate } from './create-race';

const refused = (err_code: number, description: string) =>
  Object.assign(new Error(description), { api_error: { code: 400, err_code, description } });

describe('openRacingCreate: an open-or-create that lost a race to another creator', () => {
  it.each([
    [10065, 'subjects overlap with an existing stream'],
    [10058, 'stream name already in use'],
  ])(
    'given the create refused with %i (%s), when opened, then it opens again and returns what the second open found',
    async (code, description) => {
      const open = jest.fn().mockRejectedValueOnce(refused(code, description)).mockResolvedValueOnce('the stream');
      await expect(openRacingCreate(open)).resolves.toBe('the stream');
      expect(open).toHaveBeenCalledTimes(2);
    },
  );

  it('given any other failure (a timeout, a refusal of another kind), then it is not retried', async () => {
    for (const err of [new Error('TIMEOUT'), refused(10039, 'jetstream not enabled')]) {
      const open = jest.fn().mockRejectedValue(err);
      await expect(openRacingCreate(open)).rejects.toBe(err);
      expect(open).toHaveBeenCalledTimes(1);
    }
  });

  it('given the second open fails too, then that failure is the answer', async () => {
    const second = new Error('TIMEOUT');
    const open = jest.fn().mockRejectedValueOnce(refused(10065, 'subjects overlap with an existing stream')).mockRejectedValueOnce(second);
    await expect(openRacingCreate(open)).rejects.toBe(second);
  });
});
