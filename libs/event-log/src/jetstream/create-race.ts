/**
 * JetStream's answers to the second of two creates of the same stream at once: "subjects overlap
 * with an existing stream" (10065) when both passed the name check before either was stored, and
 * "stream name already in use" (10058).
 */
const CREATE_RACE_CODES = new Set([10058, 10065]);

/** Whether `err` is JetStream refusing a create because the same stream was being made at once. */
export function isCreateRace(err: unknown): boolean {
  return CREATE_RACE_CODES.has((err as { api_error?: { err_code?: number } })?.api_error?.err_code ?? 0);
}

/**
 * Runs an open-or-create of a stream, KV bucket or object store, and once more when the server
 * refused the create because another process was creating the same one (replicas starting
 * together; the first commands of a fresh deployment reaching two replicas): by then it exists,
 * and the second run opens it. Any other failure is the caller's.
 */
export async function openRacingCreate<T>(open: () => Promise<T>): Promise<T> {
  try {
    return await open();
  } catch (err) {
    if (!isCreateRace(err)) throw err;
    return open();
  }
}
