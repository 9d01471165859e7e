import { expect } from 'vitest';
import { PlatformError } from '../../src/platform/index.js';

/** What the promise rejected with, asserted to be an instance of `type` (a resolve fails the test). */
export async function rejectionOf<T>(
  promise: Promise<unknown>,
  type: abstract new (...args: never[]) => T,
): Promise<T> {
  const error: unknown = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(type);
  return error as T;
}

/** The platform client's error of a call that must fail. */
export function failure(promise: Promise<unknown>): Promise<PlatformError> {
  return rejectionOf(promise, PlatformError);
}
