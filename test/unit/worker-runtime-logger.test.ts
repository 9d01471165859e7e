import { Writable } from 'node:stream';
import { describe, expect, it, vi } from 'vitest';
import { platformTaskQueue } from '../../src/domain/ids.js';
import { createLogger } from '../../src/infra/log.js';
import { workerRuntimeLogger } from '../../src/main/wiring/telemetry.js';

/**
 * The worker Runtime's logger as the SDK drives it: the platform queue's worker has activities only, so the
 * SDK's "No workflows registered" warning about it is dropped (the dev console showed it on every start);
 * the same warning from another worker, and every other warning of the platform worker, still shows.
 */
function capture() {
  const chunks: string[] = [];
  const destination = new Writable({ write: (chunk, _encoding, done) => void (chunks.push(String(chunk)), done()) });
  const logger = workerRuntimeLogger(createLogger({ level: 'info', format: 'json', destination }), 'info');
  return { logger, lines: () => chunks.join('').split('\n').filter(Boolean) };
}

const NO_WORKFLOWS = 'No workflows registered, not polling for workflow tasks';

describe('worker runtime logger', () => {
  it("drops the platform worker's no-workflows warning and nothing else", () => {
    const { logger, lines } = capture();
    const platform = { sdkComponent: 'worker', taskQueue: platformTaskQueue('tenant-orchestrator') };
    logger.warn(NO_WORKFLOWS, platform);
    expect(lines()).toEqual([]);

    logger.warn(NO_WORKFLOWS, { sdkComponent: 'worker', taskQueue: 'tenant-orchestrator' });
    logger.warn('Worker state changed to FAILED', platform);
    logger.warn(`${NO_WORKFLOWS}!`, platform);
    const written = lines().map((line) => JSON.parse(line) as { msg: string; taskQueue: string });
    expect(written.map((line) => [line.msg, line.taskQueue])).toEqual([
      [NO_WORKFLOWS, 'tenant-orchestrator'],
      ['Worker state changed to FAILED', platform.taskQueue],
      [`${NO_WORKFLOWS}!`, platform.taskQueue],
    ]);
  });

  it('drops what is below LOG_LEVEL before it reaches pino: the SDK logs every activity at DEBUG', () => {
    const quiet = createLogger({
      level: 'info',
      format: 'json',
      destination: new Writable({ write: (_c, _e, done) => done() }),
    });
    const debug = vi.spyOn(quiet, 'debug');
    const info = vi.spyOn(quiet, 'info');
    const runtime = workerRuntimeLogger(quiet, 'info');
    runtime.debug('Activity started', { sdkComponent: 'activity', activityType: 'fundWallet' });
    runtime.trace('Activity completed', { sdkComponent: 'activity' });
    expect(debug).not.toHaveBeenCalled();
    runtime.info('onboarding active', { sdkComponent: 'workflow' });
    expect(info).toHaveBeenCalledTimes(1);

    const verbose = createLogger({
      level: 'debug',
      format: 'json',
      destination: new Writable({ write: (_c, _e, done) => done() }),
    });
    const verboseDebug = vi.spyOn(verbose, 'debug');
    workerRuntimeLogger(verbose, 'debug').debug('Activity started', { sdkComponent: 'activity' });
    expect(verboseDebug).toHaveBeenCalledTimes(1);
  });
});
