import type { CallOptions } from './core.js';

/** Only the per-call knobs, so nothing else from an input (ids, secrets) is carried into the transport by accident. */
export function callOf(input: CallOptions | undefined): CallOptions {
  const call: CallOptions = {};
  if (input?.signal !== undefined) call.signal = input.signal;
  if (input?.timeoutMs !== undefined) call.timeoutMs = input.timeoutMs;
  return call;
}
