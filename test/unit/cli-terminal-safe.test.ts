import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../harness/cli.js';
import { startScriptedServer, type RecordedRequest, type ScriptedServer } from '../harness/scripted-server.js';

/**
 * Issue 45, terminal escapes echoed raw: a value tenantctl prints that it did not write itself (from a
 * file, the platform, the gateway, another operator) may carry terminal controls. `import plan --map`
 * with a sub-account id holding `ESC]0;pwned BEL ESC[2J` set the operator's terminal title and cleared
 * the screen. Every such value is shown with its control and format characters escaped; JSON stays JSON.
 * tenantctl runs as a child process against a scripted gateway (the gateway's envelope, its answers
 * carrying the hostile text).
 */
const ATTACK = '\u001b]0;pwned\u0007\u001b[2J';
const ATTACK_SHOWN = '\\x1b]0;pwned\\x07\\x1b[2J';
/** A name with a bidi override, a zero-width space, a C1 CSI, DEL and an isolate, as the platform may hold. */
const NAME = 'Acme\u202Eevil\u200B\u009B31m\u007F\u2066x\u2069';
const NAME_SHOWN = 'Acme\\u202eevil\\u200b\\x9b31m\\x7f\\u2066x\\u2069';

/** Characters a terminal may act on or that change how text reads: controls (C0, DEL, C1) and format characters. */
function unsafeIn(text: string): string[] {
  return [...text]
    .filter((c) => c !== '\n' && /[\p{Cc}\p{Cf}\u2028\u2029]/u.test(c))
    .map((c) => `U+${c.codePointAt(0)!.toString(16).padStart(4, '0')}`);
}

const tenants = [
  {
    externalRef: 'acme',
    name: NAME,
    status: 'active',
    subaccountId: `sub_${ATTACK}`,
    createdAt: '2026-01-01T00:00:00.000Z',
  },
  // A newline in a value cannot forge a row of the table.
  { externalRef: 'beta', name: 'Beta\nzzz active sub_forged', status: 'active', subaccountId: null, createdAt: '' },
];

const statusView = {
  externalRef: 'acme',
  record: { name: NAME, status: 'active', subaccountId: 'sub_1', plan: null, createdAt: '', updatedAt: '' },
  keys: [],
  transfers: [],
  onboarding: {
    workflowId: 'onboard:acme',
    runStatus: 'RUNNING',
    progress: { stage: 'funding', waitingFor: `the platform said ${ATTACK}` },
  },
  recentAudit: [],
  rotation: { rotations: [] },
  lastRuns: [],
};

function answer(request: RecordedRequest): { status: number; body: unknown } {
  if (request.url.startsWith('/v1/imports/plan')) {
    // The gateway quotes the map's sub-account id in its refusal, as it reads it.
    const text = (request.json as { map: { text: string } }).map.text;
    const id = text.split('\n')[0]!.split(',')[0]!;
    return {
      status: 400,
      body: {
        error: {
          code: 'INVALID_INPUT',
          message: `invalid input: --map refs.csv line 1: subaccountId ${id} is not a live sub-account of this parent`,
          fields: ['map'],
        },
      },
    };
  }
  if (request.url.startsWith('/v1/tenants?')) return { status: 200, body: { data: tenants } };
  if (request.url === '/v1/tenants/acme') return { status: 200, body: { data: statusView } };
  return { status: 500, body: { error: { code: 'INTERNAL', message: `the platform answered ${ATTACK}` } } };
}

describe('tenantctl shows what it did not write itself with controls escaped', () => {
  let gateway: ScriptedServer;
  let dir: string;
  const cli = (args: string[], env: Record<string, string> = {}) =>
    runCli(args, {
      TENANTCTL_GATEWAY_URL: gateway.origin,
      TENANTCTL_OPERATOR_TOKEN: 'tpo_op_scripted-gateway-test',
      ...env,
    });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'cli-terminal-safe-'));
    gateway = await startScriptedServer((request, res) => {
      const { status, body } = answer(request);
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    });
  });
  afterAll(async () => {
    await gateway?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('an import plan refusal quoting a --map sub-account id escapes it (exit 2, one line)', async () => {
    const map = join(dir, 'refs.csv');
    writeFileSync(map, `sub${ATTACK},acme\n`);
    const run = await cli(['import', 'plan', '--map', map]);
    expect(run.code, run.stderr).toBe(2);
    expect(unsafeIn(run.stderr)).toEqual([]);
    expect(run.stderr).toContain(`subaccountId sub${ATTACK_SHOWN} is not a live sub-account`);
    expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
  });

  it('a table row escapes a name, an id and a newline the platform holds', async () => {
    const run = await cli(['list']);
    expect(run.code, run.stderr).toBe(0);
    expect(unsafeIn(run.stdout)).toEqual([]);
    const rows = run.stdout.trimEnd().split('\n');
    expect(rows).toHaveLength(2);
    expect(rows[0]).toContain(`sub_${ATTACK_SHOWN}  ${NAME_SHOWN}`);
    expect(rows[1]).toContain('Beta\\nzzz active sub_forged');
  });

  it('--json stays JSON holding the same values, with format characters escaped as \\u', async () => {
    const run = await cli(['list', '--json']);
    expect(run.code, run.stderr).toBe(0);
    expect(unsafeIn(run.stdout)).toEqual([]);
    expect(JSON.parse(run.stdout)).toEqual(tenants);
    expect(run.stdout).toContain('Acme\\u202eevil\\u200b\\u009b31m\\u007f\\u2066x\\u2069');
  });

  it("a status's wait text from the run is escaped", async () => {
    const run = await cli(['status', 'acme']);
    expect(run.code, run.stderr).toBe(0);
    expect(unsafeIn(run.stdout)).toEqual([]);
    expect(run.stdout).toContain(`"${NAME_SHOWN}"`);
    expect(run.stdout).toContain(`  waiting: the platform said ${ATTACK_SHOWN}`);
  });

  it('an error, with or without TENANTCTL_DEBUG, and a misspelt flag are escaped', async () => {
    for (const env of [{}, { TENANTCTL_DEBUG: '1' }] as Array<Record<string, string>>) {
      const run = await cli(['status', 'other'], env);
      expect(run.code, run.stderr).toBe(1);
      expect(unsafeIn(run.stderr)).toEqual([]);
      expect(run.stderr).toContain(`the platform answered ${ATTACK_SHOWN}`);
    }
    const misspelt = await cli(['list', `--limit${ATTACK}`]);
    expect(misspelt.code).toBe(1);
    expect(unsafeIn(misspelt.stderr)).toEqual([]);
    expect(misspelt.stderr).toContain(ATTACK_SHOWN);
  });
});
