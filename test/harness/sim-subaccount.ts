import { afterEach } from 'vitest';
import { createPlatformClient, type PlatformClient } from '../../src/platform/index.js';
import { DEFAULT_PLATFORM_KEY, startSimulator, type RunningSimulator, type SimChoices } from '../../src/sim/index.js';

export interface SimSubaccount {
  client: PlatformClient;
  subaccountId: string;
  running: RunningSimulator;
}

/**
 * For contract tests: returns a `setup(choices)` that starts a simulator with those choices and
 * creates one sub-account (`acme`) through the client; every simulator started is closed after
 * each test.
 */
export function simulatorWithSubaccount(): (choices?: Partial<SimChoices>) => Promise<SimSubaccount> {
  let sim: RunningSimulator | undefined;
  afterEach(async () => {
    await sim?.close();
    sim = undefined;
  });
  return async (choices = {}) => {
    const running = await startSimulator({ choices });
    sim = running;
    const client = createPlatformClient({ baseUrl: running.apiBase, platformKey: DEFAULT_PLATFORM_KEY });
    const { subaccount } = await client.createSubaccount({
      name: 'Acme',
      externalRef: 'acme',
      idempotencyKey: 'onboard:acme',
    });
    return { client, subaccountId: subaccount.id, running };
  };
}
