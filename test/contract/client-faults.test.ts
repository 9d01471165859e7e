import { afterEach, describe, expect, it } from 'vitest';
import {
  classifyError,
  createPlatformClient,
  PlatformAmbiguousError,
  type PlatformError,
  PlatformTransientError,
  type PlatformClient,
} from '../../src/platform/index.js';
import {
  DEFAULT_PLATFORM_KEY,
  startSimulator,
  type FaultRuleInput,
  type RunningSimulator,
} from '../../src/sim/index.js';
import { failure } from '../harness/failures.js';

let sim: RunningSimulator | undefined;
afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

async function setup(options: { timeoutMs?: number; rateLimitPerSecond?: number } = {}) {
  const running = await startSimulator(
    options.rateLimitPerSecond ? { rateLimitPerSecond: options.rateLimitPerSecond } : {},
  );
  sim = running;
  const client: PlatformClient = createPlatformClient({
    baseUrl: running.apiBase,
    platformKey: DEFAULT_PLATFORM_KEY,
    timeoutMs: options.timeoutMs ?? 5_000,
  });
  const { subaccount } = await client.createSubaccount({
    name: 'Acme',
    externalRef: 'acme',
    idempotencyKey: 'onboard:acme',
  });
  return { client, running, subaccountId: subaccount.id };
}

async function injectFaults(running: RunningSimulator, rules: FaultRuleInput[]): Promise<void> {
  const res = await fetch(`${running.url}/__sim/faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ rules }),
  });
  expect(res.status).toBe(200);
}

describe('client against the simulator: fault modes', () => {
  it('drop-after-commit on a transfer is ambiguous; a retry with the same key settles it with one debit', async () => {
    const { client, running, subaccountId } = await setup();
    await injectFaults(running, [
      { method: 'POST', path: '/subaccounts/*/wallet/transfers', mode: 'drop-after-commit', count: 1 },
    ]);
    const input = { subaccountId, amountMicroUsd: '5000', idempotencyKey: 'fund:acme:1' };
    const err = await failure(client.transfer(input));
    expect(err).toBeInstanceOf(PlatformAmbiguousError);
    expect(classifyError(err)).toMatchObject({
      type: 'CONNECTION_LOST',
      classification: 'ambiguous',
      nonRetryable: false,
    });
    expect(running.state().transfers).toHaveLength(1);
    const retried = await client.transfer(input);
    expect(retried.transfer.idempotencyKey).toBe('fund:acme:1');
    expect(running.state().transfers).toHaveLength(1);
  });

  it('drop-after-commit on a key create is ambiguous and not blindly retryable', async () => {
    const { client, running, subaccountId } = await setup();
    await injectFaults(running, [
      { method: 'POST', path: '/subaccounts/*/api-keys/create', mode: 'drop-after-commit', count: 1 },
    ]);
    const err = await failure(client.createTenantKey({ subaccountId, name: 'ci' }));
    expect(err).toBeInstanceOf(PlatformAmbiguousError);
    expect(err.retryable).toBe(false);
    expect((await client.listTenantKeys({ subaccountId })).keys).toHaveLength(1);
  });

  it('error-before-commit 503 on a GET is transient; on a POST it is ambiguous though nothing changed', async () => {
    const { client, running, subaccountId } = await setup();
    await injectFaults(running, [
      { method: 'GET', path: '/subaccounts/*/wallet', mode: 'error-before-commit', status: 503, count: 1 },
      { method: 'POST', path: '/subaccounts/*/wallet/transfers', mode: 'error-before-commit', status: 503, count: 1 },
    ]);
    const read = await failure(client.getWallet({ subaccountId }));
    expect(read).toBeInstanceOf(PlatformTransientError);
    expect(read).toMatchObject({ code: 'SERVER_ERROR', status: 503, retryAfterMs: 1000 });
    expect(read.requestId).toMatch(/^req_/);
    const write = await failure(client.transfer({ subaccountId, amountMicroUsd: '1', idempotencyKey: 'fund:x' }));
    expect(write).toBeInstanceOf(PlatformAmbiguousError);
    expect(write.retryable).toBe(true);
    expect(running.state().transfers).toHaveLength(0);
    await client.getWallet({ subaccountId });
  });

  it('error-before-commit with a contract code reaches the right class', async () => {
    const { client, running, subaccountId } = await setup();
    await injectFaults(running, [
      {
        method: 'GET',
        path: '/projects',
        mode: 'error-before-commit',
        status: 403,
        code: 'SUBACCOUNT_SUSPENDED',
        count: 1,
      },
    ]);
    const err = await failure(client.listProjects({ auth: { kind: 'platform', subaccountId } }));
    expect(err).toMatchObject({ code: 'SUBACCOUNT_SUSPENDED', classification: 'tenant-state' });
  });

  it('rate-limit is transient with retryAfterMs from Retry-After', async () => {
    const { client, running } = await setup();
    await injectFaults(running, [
      { method: 'GET', path: '/subaccounts', mode: 'rate-limit', retryAfterSeconds: 3, count: 1 },
    ]);
    const err = await failure(client.listSubaccounts());
    expect(err).toBeInstanceOf(PlatformTransientError);
    expect(err).toMatchObject({ code: 'RATE_LIMITED', status: 429, retryAfterMs: 3000 });
    await client.listSubaccounts();
  });

  it('the global rate limit answers 429 with Retry-After', async () => {
    const { client } = await setup({ rateLimitPerSecond: 3 });
    const settled = await Promise.allSettled(Array.from({ length: 10 }, () => client.listSubaccounts()));
    const limited = settled
      .filter((s): s is PromiseRejectedResult => s.status === 'rejected')
      .map((s) => s.reason as PlatformError);
    expect(limited.length).toBeGreaterThan(0);
    for (const err of limited) {
      expect(err).toMatchObject({ code: 'RATE_LIMITED', classification: 'transient' });
      expect(err.retryAfterMs).toBeGreaterThan(0);
    }
  });

  // One timed-out request per simulator: two aborted delayed requests in a row make the simulator's close() hang
  // (reported to the simulator's author), which is not what these tests are about.
  it('a delay beyond the deadline times out a GET as transient', async () => {
    const { client, running, subaccountId } = await setup({ timeoutMs: 300 });
    await injectFaults(running, [{ method: 'GET', path: '/subaccounts/*', mode: 'delay', delayMs: 1_000 }]);
    const read = await failure(client.getSubaccount({ subaccountId }));
    expect(read).toMatchObject({ code: 'TIMEOUT', classification: 'transient', retryable: true });
  });

  it('a delay beyond the deadline times out a POST as ambiguous, retryable with its idempotency key', async () => {
    const { client, running, subaccountId } = await setup({ timeoutMs: 300 });
    await injectFaults(running, [{ method: 'POST', path: '/subaccounts/*/suspend', mode: 'delay', delayMs: 1_000 }]);
    const write = await failure(client.suspendSubaccount({ subaccountId, idempotencyKey: 'suspend:1' }));
    expect(write).toMatchObject({ code: 'TIMEOUT', classification: 'ambiguous', retryable: true });
  });
});
