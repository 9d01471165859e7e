/**
 * The outbound rule where a URL is given (issue 45, Build 4): a subscription's host name is resolved when the
 * subscription is made, and refused when any address it resolves to is inward and the name is not in
 * OUTBOUND_ALLOW_HOSTS; one 400 naming `url` and the rule, nothing written. The connect-time check stays
 * (outbound-guard.test.ts). The resolver is injected, as the hosts file of the probe mapped `vm` to 127.0.0.1.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayApp } from '../../src/gateway/app.js';
import type { Resolver } from '../../src/infra/outbound/fetch.js';
import { parseAllowHosts } from '../../src/domain/outbound-rule.js';
import { runCli } from '../harness/cli.js';
import { listenGatewayOver, TEST_API_TOKEN } from '../harness/gateway-app.js';
import { callAs } from '../harness/operator-gateway.js';
import { createOrchestratorEnv, type OrchestratorEnv } from '../harness/onboarding-env.js';

const DNS: Record<string, string[]> = {
  vm: ['127.0.0.1'],
  'vm.example': ['127.0.0.1'],
  'v6.example': ['::1'],
  'office.example': ['10.0.0.8'],
  'metadata.example': ['169.254.169.254'],
  // One public address beside an inward one: a connection could go to either.
  'mixed.example': ['93.184.216.34', '192.168.1.20'],
  'public.example': ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946'],
  'hooks.internal': ['10.0.0.9'],
};
const resolve: Resolver = async (hostname) => {
  const addresses = DNS[hostname.toLowerCase()];
  if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
  return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
};

describe('a subscription URL is checked after DNS when it is given', () => {
  let env: OrchestratorEnv;
  let gateway: GatewayApp;
  let url: string;
  const subscriptions = async () =>
    Number((await env.pool.query(`SELECT count(*) AS n FROM event_subscriptions`)).rows[0].n);
  const subscribe = (target: string) =>
    callAs(url, 'POST', '/v1/event-subscriptions', TEST_API_TOKEN, { url: target, types: ['*'] });

  beforeAll(async () => {
    env = await createOrchestratorEnv('sec-outbound-dns');
    ({ gateway, url } = await listenGatewayOver(env, {
      outboundAllowHosts: parseAllowHosts('hooks.internal').hosts,
      outboundResolve: resolve,
    }));
  });
  afterAll(async () => {
    await gateway?.app.close();
    await env?.close();
  });

  it('refuses a name that resolves to an inward address, naming url and the rule, and writes nothing', async () => {
    const port = new URL(url).port;
    const before = await subscriptions();
    for (const [target, kind] of [
      [`https://vm:${port}/`, 'loopback'],
      [`https://VM.example:${port}/v1/tenants`, 'loopback'],
      ['https://v6.example/hooks', 'loopback'],
      ['https://office.example/hooks', 'private'],
      ['https://metadata.example/latest/meta-data/', 'metadata'],
      ['https://mixed.example/hooks', 'private'],
    ] as const) {
      const answer = await subscribe(target);
      expect(answer.status, target).toBe(400);
      expect(answer.json.error, target).toMatchObject({ code: 'INVALID_INPUT', fields: ['url'] });
      expect(answer.json.error.message, target).toMatch(new RegExp(`url: .*resolves to a ${kind} address`));
      expect(answer.json.error.message, target).toMatch(/OUTBOUND_ALLOW_HOSTS/);
    }
    expect(await subscriptions()).toBe(before);
  });

  it('refuses it through tenantctl in the same words', async () => {
    const port = new URL(url).port;
    const before = await subscriptions();
    const http = await subscribe(`https://vm:${port}/cli`);
    expect(http.status).toBe(400);
    const viaCli = await runCli(['events', 'subscribe', '--url', `https://vm:${port}/cli`, '--types', '*'], {
      TENANTCTL_GATEWAY_URL: url,
      TENANTCTL_OPERATOR_TOKEN: TEST_API_TOKEN,
    });
    expect(viaCli.code).not.toBe(0);
    expect(viaCli.stderr).toContain(String(http.json.error.message).split('url: ')[1]);
    expect(await subscriptions()).toBe(before);
  });

  it('takes a public name, a listed inward name, and a name that does not resolve now (checked again at connect)', async () => {
    for (const target of [
      'https://public.example/hooks',
      'https://hooks.internal/hooks',
      'https://not-yet.example/hooks',
    ]) {
      const answer = await subscribe(target);
      expect(answer.status, target).toBe(201);
    }
  });
});
