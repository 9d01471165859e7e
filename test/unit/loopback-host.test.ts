import { describe, expect, it } from 'vitest';
import { openGateway } from '../../src/cli/gateway-access.js';
import { isPlainLoopbackHost } from '../../src/domain/loopback-host.js';
import { AddressClass } from '../../src/domain/outbound-addresses.js';
import { hostClassOf } from '../../src/domain/outbound-rule.js';

/**
 * tenantctl tells the usual loopback hosts apart without the address classifier (ipaddr.js, about 4.6 ms of every
 * gateway command's start): what it takes as loopback must be loopback to hostClassOf, the one rule, and every
 * other plain-http host goes to that rule.
 */
const HOSTS = [
  'http://127.0.0.1:8080',
  'http://127.0.0.1.',
  'http://x.127.0.0.1.localhost',
  'http://127.255.255.254',
  'http://127.1',
  'http://2130706433',
  'http://0x7f.0.0.1',
  'http://0177.0.0.1',
  'http://localhost:8080',
  'http://LOCALHOST.',
  'http://gw.localhost',
  'http://[::1]:8080',
  'http://[0:0:0:0:0:0:0:1]',
  'http://[::ffff:127.0.0.1]',
  'http://[::127.0.0.1]',
  'http://128.0.0.1',
  'http://126.255.255.255',
  'http://10.0.0.1',
  'http://0.0.0.0',
  'http://[::]',
  'http://[::ffff:10.0.0.1]',
  'http://169.254.169.254',
  'http://127.0.0.1.nip.io',
  'http://localhost.example.com',
  'http://gw.example.com',
];

describe('the quick loopback check agrees with hostClassOf', () => {
  for (const value of HOSTS)
    it(value, async () => {
      const { hostname } = new URL(value);
      const loopback = hostClassOf(hostname) === AddressClass.loopback;
      // Never loopback where the rule says otherwise; the forms the URL parser writes are all known.
      if (isPlainLoopbackHost(hostname)) expect(loopback).toBe(true);
      if (loopback && !/^\[(?!::1\])/.test(hostname)) expect(isPlainLoopbackHost(hostname)).toBe(true);
      // And openGateway decides as the rule does, whichever way it got there.
      const opened = await openGateway('t', { DATA_DIR: '/nonexistent-stack-dir', TENANTCTL_GATEWAY_URL: value }).then(
        () => 'accepted',
        (error: Error) => error.message,
      );
      if (loopback) expect(opened).toBe('accepted');
      else expect(opened).toMatch(/TENANTCTL_GATEWAY_URL: must be https/);
    });

  it('takes the dev stack`s hosts without the classifier, and leaves the embedded forms to it', () => {
    expect(['127.0.0.1', 'localhost', '[::1]', 'a.localhost'].map(isPlainLoopbackHost)).toEqual([
      true,
      true,
      true,
      true,
    ]);
    // Forms the URL parser never writes (leading zeros) are not taken either: hostClassOf calls them names.
    expect(
      ['[::ffff:7f00:1]', '[::7f00:1]', '127.0.0.1.nip.io', '128.0.0.1', '127.0.0.01', '127.00.0.1'].map(
        isPlainLoopbackHost,
      ),
    ).toEqual([false, false, false, false, false, false]);
  });
});
