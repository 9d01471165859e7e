import { Writable } from 'node:stream';
import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { createLogger, temporalSdkLogger, type LogFormat } from '../../src/infra/log.js';

/**
 * The worker's log path as the Temporal SDK drives it (`Runtime.install({ logger })`): a failed
 * activity attempt is a warning carrying an error with causes. It must be ONE line in both formats
 * unless debug is on; the dev console used to fill with stack traces at warn level.
 */
function capture(format: LogFormat, level: 'info' | 'debug') {
  const chunks: string[] = [];
  const destination = new Writable({ write: (chunk, _encoding, done) => void (chunks.push(String(chunk)), done()) });
  const logger = createLogger({ level, format, destination });
  return {
    sdk: temporalSdkLogger(logger, level),
    lines: () =>
      chunks
        .join('')
        .split('\n')
        .filter((line) => line.trim() !== ''),
  };
}

function failedAttempt() {
  const cause = new Error('connect ECONNREFUSED 127.0.0.1:4010');
  return ApplicationFailure.create({ type: 'PLATFORM_UNAVAILABLE', message: 'the platform did not answer', cause });
}

describe('worker logs', () => {
  for (const format of ['json', 'pretty'] as const) {
    it(`writes a warning with an error as one line without a stack (${format})`, () => {
      const { sdk, lines } = capture(format, 'info');
      sdk.warn('Activity failed', { activityType: 'createSubaccount', attempt: 2, error: failedAttempt() });
      const written = lines();
      expect(written).toHaveLength(1);
      expect(written[0]).toContain('Activity failed');
      expect(written[0]).toContain('the platform did not answer');
      expect(written[0]).toContain('ECONNREFUSED');
      expect(written[0]).toContain('PLATFORM_UNAVAILABLE');
      expect(written[0]).not.toMatch(/\bat .*\(|"stack"/);
    });
  }

  it('keeps the stack when LOG_LEVEL=debug', () => {
    const { sdk, lines } = capture('pretty', 'debug');
    sdk.warn('Activity failed', { error: failedAttempt() });
    expect(lines().length).toBeGreaterThan(1);
    expect(lines().join('\n')).toMatch(/\n\s+at /);
  });

  it('writes pretty lines, not JSON objects, for the dev console', () => {
    const { sdk, lines } = capture('pretty', 'info');
    sdk.warn('Worker state changed', { state: 'DRAINING' });
    expect(lines()[0]).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] WARN: Worker state changed/);
  });
});
