import { describe, expect, it } from 'vitest';
import { outboundUrlProblemAfterDns, type Resolver } from '../../src/infra/outbound/resolve.js';
import { parseAllowHosts } from '../../src/domain/outbound-rule.js';

/** A resolver that answers from a table and records what it was asked. */
function tableResolver(table: Record<string, string[]>): Resolver & { asked: string[] } {
  const asked: string[] = [];
  const resolve = async (hostname: string) => {
    asked.push(hostname);
    const addresses = table[hostname];
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return Object.assign(resolve, { asked });
}

describe('outboundUrlProblemAfterDns', () => {
  it('refuses a name when any address it resolves to is inward, naming the class and the setting', async () => {
    const resolve = tableResolver({ vm: ['127.0.0.1'], mixed: ['93.184.216.34', 'fd00::1'] });
    expect(await outboundUrlProblemAfterDns('https://vm:8443/', [], { resolve })).toBe(
      'must not point at an inward address (vm resolves to a loopback address): only public hosts, unless listed ' +
        'in OUTBOUND_ALLOW_HOSTS',
    );
    expect(await outboundUrlProblemAfterDns('https://mixed/', [], { resolve })).toMatch(/unique-local address/);
  });

  it('takes a public name, and asks no DNS for a literal, a loopback name or a listed name', async () => {
    const resolve = tableResolver({ 'public.example': ['93.184.216.34'] });
    expect(await outboundUrlProblemAfterDns('https://public.example/hooks', [], { resolve })).toBeUndefined();
    expect(await outboundUrlProblemAfterDns('https://93.184.216.34/', [], { resolve })).toBeUndefined();
    expect(await outboundUrlProblemAfterDns('https://localhost/', [], { resolve })).toMatch(/loopback/);
    const allow = parseAllowHosts('hooks.internal:8443').hosts;
    expect(await outboundUrlProblemAfterDns('https://hooks.internal:8443/', allow, { resolve })).toBeUndefined();
    expect(resolve.asked).toEqual(['public.example']);
  });

  it('takes a name that does not resolve now, or not in time: the connection is checked again', async () => {
    const resolve = tableResolver({});
    expect(await outboundUrlProblemAfterDns('https://not-yet.example/', [], { resolve })).toBeUndefined();
    const never: Resolver = () => new Promise(() => undefined);
    const started = Date.now();
    expect(await outboundUrlProblemAfterDns('https://slow.example/', [], { resolve: never, timeoutMs: 50 })).toBe(
      undefined,
    );
    expect(Date.now() - started).toBeLessThan(2_000);
  });
});
