import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openGateway, TENANTCTL_VARIABLES } from '../../src/cli/gateway-access.js';
import { ConfigError, configSchema, loadConfig, stackSchema } from '../../src/config/index.js';

/**
 * A gateway command reads its three settings without the configuration schema (issue 49): each must be read as the
 * schema reads it, and refused in the schema's words. Checked against loadConfig value by value.
 */
const NO_STACK = { DATA_DIR: '/nonexistent-stack-dir' };

async function problemsOf(run: () => unknown): Promise<string[] | 'accepted'> {
  try {
    await run();
    return 'accepted';
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
}

describe('openGateway reads the gateway settings as the schema does', () => {
  const urls = [
    'https://gw.example.com',
    'https://gw.example.com/',
    '  https://gw.example.com/base  ',
    'http://127.0.0.1:8080',
    'HTTPS://GW.EXAMPLE.COM',
    'ftp://gw.example.com',
    'gw.example.com',
    'https://',
    'not a url',
    'javascript:alert(1)',
    '',
    '   ',
  ];
  for (const name of ['TENANTCTL_GATEWAY_URL', 'GATEWAY_PUBLIC_URL'] as const)
    for (const value of urls)
      it(`${name}=${JSON.stringify(value)}`, async () => {
        const env = { ...NO_STACK, [name]: value, TENANTCTL_OPERATOR_TOKEN: 'token' };
        const schema = await problemsOf(() => loadConfig(env));
        const ours = await problemsOf(() => openGateway(undefined, env, () => undefined));
        if (schema !== 'accepted') {
          // Refused by the schema: refused here, in the same words.
          expect(ours).toEqual(schema);
          return;
        }
        const config = loadConfig(env);
        const url = config.TENANTCTL_GATEWAY_URL ?? config.GATEWAY_PUBLIC_URL;
        if (url === undefined) expect(ours).toEqual([expect.stringMatching(/^TENANTCTL_GATEWAY_URL: is not set/)]);
        else expect((await openGateway(undefined, env)).url).toBe(url.replace(/\/+$/, ''));
      });

  it('prefers TENANTCTL_GATEWAY_URL, and refuses plain http beyond loopback', async () => {
    const env = { ...NO_STACK, TENANTCTL_OPERATOR_TOKEN: 't' };
    expect(
      (
        await openGateway(undefined, {
          ...env,
          TENANTCTL_GATEWAY_URL: 'https://a.example',
          GATEWAY_PUBLIC_URL: 'https://b.example',
        })
      ).url,
    ).toBe('https://a.example');
    expect(
      await problemsOf(() => openGateway(undefined, { ...env, GATEWAY_PUBLIC_URL: 'http://gw.example.com' })),
    ).toEqual([expect.stringMatching(/^TENANTCTL_GATEWAY_URL: must be https/)]);
  });

  it('needs a token: the flag, else TENANTCTL_OPERATOR_TOKEN (blank is none)', async () => {
    const env = { ...NO_STACK, TENANTCTL_GATEWAY_URL: 'https://gw.example.com' };
    expect(await problemsOf(() => openGateway(undefined, { ...env, TENANTCTL_OPERATOR_TOKEN: '  ' }))).toEqual([
      expect.stringMatching(/^TENANTCTL_OPERATOR_TOKEN: is required/),
    ]);
    expect(await problemsOf(() => openGateway('from-flag', env))).toBe('accepted');
  });

  describe("under the dev stack's stack.json", () => {
    const dir = mkdtempSync(join(tmpdir(), 'gateway-access-'));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it('takes its values, the environment winning', async () => {
      writeFileSync(
        join(dir, 'stack.json'),
        JSON.stringify({ TENANTCTL_GATEWAY_URL: 'http://127.0.0.1:1', TENANTCTL_OPERATOR_TOKEN: 'dev' }),
      );
      expect((await openGateway(undefined, { DATA_DIR: dir })).url).toBe('http://127.0.0.1:1');
      expect(
        (await openGateway(undefined, { DATA_DIR: dir, TENANTCTL_GATEWAY_URL: 'https://gw.example.com' })).url,
      ).toBe('https://gw.example.com');
    });

    it('refuses a stack.json that is not JSON, as loadConfig does', async () => {
      writeFileSync(join(dir, 'stack.json'), '{');
      expect(await problemsOf(() => openGateway(undefined, { DATA_DIR: dir }))).toEqual([
        `${join(dir, 'stack.json')}: not valid JSON (delete it; \`npm start\` writes it again)`,
      ]);
    });
  });
});

describe("a misspelt TENANTCTL_ variable, reported as the schema's check reports it", () => {
  it("knows every TENANTCTL_ variable of the schema's", async () => {
    const schema = [...Object.keys(configSchema.shape), ...Object.keys(stackSchema.shape)];
    expect([...TENANTCTL_VARIABLES].sort()).toEqual(schema.filter((name) => name.startsWith('TENANTCTL_')).sort());
  });

  it('warns in the same words, and only of TENANTCTL_ names', async () => {
    const env = {
      ...NO_STACK,
      TENANTCTL_GATEWAY_URL: 'https://gw.example.com',
      TENANTCTL_OPERATOR_TOKEN: 't',
      TENANTCTL_GATEWAY_ULR: 'https://elsewhere.example.com',
      TENANTCTL_OPERATOR_TOKN: 'x',
      TENANTCTL_DEBUGG: '1',
      TENANTCTL_FROM_SOURCE: '1',
    };
    const warnings: string[] = [];
    await openGateway(undefined, { ...env, GATEWAY_PROT: '1' }, (message) => warnings.push(message));
    expect(warnings).toEqual(loadConfig(env).warnings);
    expect(warnings).toHaveLength(3);
  });
});
