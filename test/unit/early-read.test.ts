import { describe, expect, it } from 'vitest';
import { earlyStatusRead } from '../../src/cli/early-read.js';

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
  ])('%j does not', (args) => {
    expect(earlyStatusRead(args)).toBeNull();
  });
});
