import { w3cSpanContext, w3cTraceparent } from './trace-context';

const ids = { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7' };

describe('W3C trace context', () => {
  it('given a sampled span context, when written, then it is a version-00 traceparent that reads back the same', () => {
    const traceparent = w3cTraceparent({ ...ids, traceFlags: 1 });
    expect(traceparent).toBe('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01');
    expect(w3cSpanContext(traceparent)).toMatchObject({ ...ids, traceFlags: 1, isRemote: true });
  });

  it('given flags of two hex digits, when written, then the flags field keeps two digits', () => {
    // A copy that wrote "0" + the hex digits made a three-digit field here, which no reader accepts.
    const traceparent = w3cTraceparent({ ...ids, traceFlags: 0x13 });
    expect(traceparent.endsWith('-13')).toBe(true);
    expect(w3cSpanContext(traceparent)?.traceFlags).toBe(0x13);
  });
});
