import { afterEach, describe, expect, it, vi } from 'vitest';
import { earlyGateway, earlyStatusRead, startEarlyRead, takeEarlyAnswer } from '../../src/cli/early-read.js';

/** Which forms of `tenantctl status` send their request as the process starts (src/cli/early-read.ts). */
describe('the early status read', () => {
  it.each([
    [['status', 'acme'], { path: '/v1/tenants/acme', token: undefined }],
    [['status', 'acme', '--json'], { path: '/v1/tenants/acme', token: undefined }],
    [['status', '--json', 'a c/me'], { path: '/v1/tenants/a%20c%2Fme', token: undefined }],
    [['--operator-token', 't', 'status', 'acme'], { path: '/v1/tenants/acme', token: 't' }],
    [['--operator-token=t=x', 'status', 'acme'], { path: '/v1/tenants/acme', token: 't=x' }],
  ])('%j reads early', (args, read) => {
    expect(earlyStatusRead(args)).toEqual(read);
  });

  it.each([
    [[]],
    [['--help']],
    [['status']],
    [['status', '--help']],
    [['status', 'acme', '--help']],
    [['status', 'acme', 'other']],
    [['status', 'acme', '--json', '--json']],
    [['status', 'acme', '--operator-token', 't']],
    [['status', '--', 'acme']],
    [['status', '..']],
    [['status', '.']],
    [['list']],
    [['--operator-token']],
    [['--operator-token', 'status', 'acme']],
    [['rotate-key', 'acme']],
    [['--operator-token=', 'status', 'acme', 'x']],
    [['--operator-token', 'a', '--operator-token', 'b', 'status', 'acme']],
    [['status', 'acme', '--json=1']],
    [['status', 'acme', '--']],
    [['status', '-h']],
    [['status', '-']],
    [['status', '']],
  ])('%j does not', (args) => {
    expect(earlyStatusRead(args)).toBeNull();
  });

  afterEach(() => vi.unstubAllEnvs());

  it('hands its answer only to a command that took its gateway, with the same token, for the same path', async () => {
    // No gateway to open: no URL, no dev stack's stack.json.
    vi.stubEnv('DATA_DIR', '/nonexistent-stack-dir');
    vi.stubEnv('TENANTCTL_GATEWAY_URL', '');
    vi.stubEnv('GATEWAY_PUBLIC_URL', '');
    await startEarlyRead(['--operator-token', 'early', 'status', 'acme']);
    // The early gateway is refused, for the command to report.
    expect(takeEarlyAnswer('/v1/tenants/acme')).toBeUndefined();
    expect(earlyGateway('another')).toBeUndefined();
    expect(takeEarlyAnswer('/v1/tenants/acme')).toBeUndefined();
    const gateway = earlyGateway('early');
    await expect(gateway).rejects.toThrow(/TENANTCTL_GATEWAY_URL/);
    expect(takeEarlyAnswer('/v1/tenants/other')).toBeUndefined();
    await expect(takeEarlyAnswer('/v1/tenants/acme')).rejects.toThrow();
    // Taken once.
    expect(takeEarlyAnswer('/v1/tenants/acme')).toBeUndefined();
  });
});
