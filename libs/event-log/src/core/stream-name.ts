import { InvalidStreamNameError } from './errors';

export interface StreamName {
  readonly stream: string;
  /** Everything before the last '-': `council-run-01J...` is in category `council-run`. */
  readonly category: string;
  readonly id: string;
}

// Letters, digits and '_' in ids; categories may also use '-'. No '.', '*', '>' or spaces: both
// parts become NATS subject tokens, and a uniform rule keeps streams portable between adapters.
const CATEGORY = /^[A-Za-z0-9_]+(?:-[A-Za-z0-9_]+)*$/;
const ID = /^[A-Za-z0-9_]+$/;

export function parseStreamName(stream: string): StreamName {
  if (typeof stream !== 'string' || stream.length === 0) {
    throw new InvalidStreamNameError(String(stream), 'empty');
  }
  if (stream.length > 200) throw new InvalidStreamNameError(stream, 'longer than 200 characters');
  const dash = stream.lastIndexOf('-');
  if (dash <= 0 || dash === stream.length - 1) {
    throw new InvalidStreamNameError(stream, 'expected <category>-<id>');
  }
  const category = stream.slice(0, dash);
  const id = stream.slice(dash + 1);
  if (!CATEGORY.test(category)) {
    throw new InvalidStreamNameError(stream, 'category may only hold letters, digits, _ and inner -');
  }
  if (!ID.test(id)) throw new InvalidStreamNameError(stream, 'id may only hold letters, digits and _');
  return { stream, category, id };
}

export function categoryOf(stream: string): string {
  return parseStreamName(stream).category;
}

export function streamName(category: string, id: string): string {
  return parseStreamName(`${category}-${id}`).stream;
}

export function validateCategory(category: string): string {
  if (!CATEGORY.test(category)) {
    throw new InvalidStreamNameError(`${category}-`, 'category may only hold letters, digits, _ and inner -');
  }
  return category;
}

/** Compiles a category filter into a predicate on the exact category. */
export function categoryMatcher(categories: '*' | readonly string[]): (category: string) => boolean {
  if (categories === '*') return () => true;
  const wanted = new Set(categories.map(validateCategory));
  return (category) => wanted.has(category);
}
