/** The value of the first line of a Prometheus text exposition that `line` matches; NaN when none does. */
export function sampleValue(text: string, line: RegExp): number {
  return Number(
    text
      .split('\n')
      .find((l) => line.test(l))
      ?.split(' ')
      .pop() ?? NaN,
  );
}
