import { spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { distState } from '../../bin/dist-fresh.js';
import { TENANTCTL } from '../harness/cli.js';

/**
 * `tenantctl --help` answers like a CLI because it loads commander and the command definitions
 * only: each action imports its dependencies when it runs. Checked by the modules loaded (not by
 * a clock): a static import of pg, Temporal, Fastify or zod in a command file fails this. From the CLI
 * bundle (dist/cli/, see scripts/build-dist.js) the modules loaded are those of the chunks loaded.
 * A gateway command (`status`) loads what it uses to ask the gateway and print the answer, and none of these
 * either (issue 49), nor Node's fetch (undici, reported by the exit hook of register.mjs).
 */
const HEAVY = ['/@temporalio/', '/@grpc/', '/protobufjs/', '/pg/', '/fastify/', '/zod/', '/pino/'];
const UNDICI = 'NativeModule internal/deps/undici/undici';

const BUNDLE = fileURLToPath(new URL('../../dist/cli/', import.meta.url));

/** The modules each launch loaded: those it resolved, and for a chunk of the CLI bundle the modules in it. */
function modulesLoaded(stderr: string): string[] {
  const chunks = existsSync(`${BUNDLE}chunks.json`)
    ? (JSON.parse(readFileSync(`${BUNDLE}chunks.json`, 'utf8')) as Record<string, string[]>)
    : {};
  return stderr
    .split('\n')
    .filter((line) => line.startsWith('LOADED '))
    .flatMap((line) => {
      const url = line.slice('LOADED '.length);
      const chunk = url.startsWith('file://') ? fileURLToPath(url) : '';
      return chunk.startsWith(BUNDLE) ? [url, ...(chunks[chunk.slice(BUNDLE.length)] ?? [])] : [url];
    });
}

const dir = mkdtempSync(join(tmpdir(), 'cli-lazy-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function launch(args: string[], env: Record<string, string> = {}) {
  return spawnSync(process.execPath, ['--import', join(dir, 'register.mjs'), TENANTCTL, ...args], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root', ...env },
    encoding: 'utf8',
  });
}

describe('tenantctl --help loads no command dependencies', () => {
  writeFileSync(
    join(dir, 'hooks.mjs'),
    'export async function resolve(specifier, context, next) { const r = await ' +
      'next(specifier, context); process.stderr.write(`LOADED ${r.url}\\n`); return r; ' +
      '}\n',
  );
  writeFileSync(
    join(dir, 'register.mjs'),
    "import { register } from 'node:module'; register('./hooks.mjs', import.meta.url);\n" +
      "process.once('exit', () => { for (const m of process.moduleLoadList) process.stderr.write(`INTERNAL ${m}\\n`); });\n",
  );

  for (const [label, env] of [
    ['as launched (dist/ when fresh)', {}],
    ['from the sources (tsx)', { TENANTCTL_FROM_SOURCE: '1' }],
  ] as const) {
    it(label, () => {
      const result = launch(['--help'], env);
      expect(result.status, result.stderr).toBe(0);
      expect(result.stdout).toContain('Usage: tenantctl');
      const loaded = modulesLoaded(result.stderr);
      expect(loaded.some((line) => line.includes('/cli/main.'))).toBe(true);
      expect(loaded.filter((line) => HEAVY.some((heavy) => line.includes(`node_modules${heavy}`)))).toEqual([]);
    });
  }
});

describe('a built dist/ runs operator commands from the CLI bundle, the worker and gateway unbundled', () => {
  // CI installs (and so builds) before the tests: there the bundle must be what runs. A local checkout
  // edited since its last build runs the sources, and this has nothing to check.
  const built = distState() === 'fresh';
  it('CI tests a fresh build with its CLI bundle', () => {
    if (process.env.CI !== '1' && !built) return;
    expect(distState()).toBe('fresh');
    expect(existsSync(`${BUNDLE}main.js`)).toBe(true);
  });

  it.runIf(built)('status from the bundle (every package it uses in it), worker and gateway from dist/src', () => {
    const entries = (args: string[]) =>
      launch(args)
        .stderr.split('\n')
        .filter((line) => /LOADED file:.*\/dist\/(cli|src\/cli)\/main\.js$/.test(line))
        .map((line) => line.replace(/^.*\/dist\//, 'dist/'));
    expect(entries(['--help'])).toEqual(['dist/cli/main.js']);
    expect(entries(['status', '--help'])).toEqual(['dist/cli/main.js']);
    expect(entries(['worker', '--help'])).toEqual(['dist/src/cli/main.js']);
    expect(entries(['--operator-token', 't', 'gateway', '--help'])).toEqual(['dist/src/cli/main.js']);
    // An operator command with no gateway to talk to fails on its configuration, named, from the bundle.
    const status = launch(['status', 'acme'], { DATA_DIR: '/nonexistent-stack-dir' });
    expect(status.status).toBe(2);
    expect(status.stderr).toContain('error: TENANTCTL_GATEWAY_URL: is not set');
    // Every package it used came out of the bundle's chunks: no file read from node_modules one by one.
    expect(status.stderr.split('\n').filter((line) => /^LOADED file:.*\/node_modules\//.test(line))).toEqual([]);
  });
});

/** A stand-in for the gateway: every section of a tenant's status, so that every printer of `status` runs. */
const STATUS_VIEW = {
  externalRef: 'acme',
  record: { name: 'Acme', status: 'active', subaccountId: 'sub_1', plan: { name: 'basic', version: 2 } },
  onboarding: { workflowId: 'onboard:acme', runStatus: 'COMPLETED', progress: { stage: 'done' } },
  keys: [{ slot: 'default', generation: 1, keyId: 'k1', status: 'active', fingerprint: 'fp', verified: true }],
  transfers: [{ purpose: 'initial-funding', state: 'succeeded', amountMicroUsd: '1000000', failureCode: null }],
  recentAudit: [],
  rotation: {
    rotations: [
      {
        slot: 'default',
        fromGeneration: 1,
        toGeneration: 2,
        state: 'running',
        emergency: false,
        workflowId: 'rotate:acme:default',
        startedAt: 'then',
        finishedAt: null,
        live: { stage: 'waiting_for_quiet', notes: ['a note'], waitingFor: 'quiet' },
        waiting: {
          stage: 'waiting_for_quiet',
          waitingFor: 'quiet',
          since: 'then',
          decisions: ['skip'],
          nextCheckAt: null,
        },
      },
    ],
  },
  lastRuns: [
    {
      kind: 'onboard',
      workflowId: 'onboard:acme',
      runId: 'r',
      status: 'COMPLETED',
      startedAt: 'then',
      closedAt: 'later',
      outcome: 'active',
      failure: null,
      result: null,
      waiting: null,
      partOf: null,
    },
  ],
  close: null,
  plan: {
    on: { name: 'basic', version: 2 },
    convergence: {
      workflowId: 'plan:acme',
      status: 'COMPLETED',
      from: null,
      to: { name: 'basic', version: 2 },
      stage: null,
      outcome: 'converged',
      reason: null,
      startedAt: 'then',
      closedAt: 'later',
      partOf: null,
      failure: null,
      hold: null,
    },
  },
  fleetRuns: [
    { workflowId: 'plan-rollout:basic@2', type: 'rolloutPlan', status: 'RUNNING', via: 'its plan', waiting: null },
  ],
  attention: [{ workflowId: 'rotate:acme:default', stage: 'waiting_for_quiet', lines: ['quiet'], wayOut: ['skip'] }],
};

describe('tenantctl status (a gateway command) loads no Temporal, gRPC, protobuf, pg, zod or ipaddr module, nor fetch', () => {
  /** Each request the stand-in gateway answered: its path and the token it came with. */
  const requests: Array<{ url: string | undefined; authorization: string | undefined }> = [];
  const server = createServer((req, res) => {
    requests.push({ url: req.url, authorization: req.headers.authorization });
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ data: STATUS_VIEW }));
  });
  const listening = new Promise<string>((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)),
  );
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  /** Awaited, not spawnSync: the stand-in gateway answers from this process's event loop. */
  const launchAsync = (args: string[], env: Record<string, string>) =>
    new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve, reject) => {
      const child = spawn(process.execPath, ['--import', join(dir, 'register.mjs'), TENANTCTL, ...args], {
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root', ...env },
      });
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
      child.once('error', reject);
      child.once('close', (status) => resolve({ status, stdout, stderr }));
    });

  for (const [label, env] of [
    ['as launched (dist/ when fresh)', {}],
    ['from the sources (tsx)', { TENANTCTL_FROM_SOURCE: '1' }],
  ] as const) {
    it(label, async () => {
      const result = await launchAsync(['status', 'acme'], {
        ...env,
        DATA_DIR: '/nonexistent-stack-dir',
        TENANTCTL_GATEWAY_URL: await listening,
        TENANTCTL_OPERATOR_TOKEN: 'viewer-token',
      });
      expect(result.status, result.stderr).toBe(0);
      // Every section printed: each printer ran.
      for (const line of [
        'tenant acme: active — "Acme", sub-account sub_1, plan basic@2',
        'rotation default g1→g2: running [rotate:acme:default]',
        '  waiting (waiting_for_quiet) since then: quiet; decisions: skip',
        'plan convergence plan:acme: COMPLETED, no plan → basic@2',
        'fleet run plan-rollout:basic@2 (rolloutPlan): RUNNING; its plan',
        'last onboard: COMPLETED (active) [onboard:acme] started then, ended later',
        'attention rotate:acme:default (waiting_for_quiet): quiet',
      ])
        expect(result.stdout).toContain(line);
      const loaded = modulesLoaded(result.stderr);
      expect(loaded.some((line) => line.includes('/cli/main.'))).toBe(true);
      expect(loaded.filter((line) => HEAVY.some((heavy) => line.includes(`node_modules${heavy}`)))).toEqual([]);
      // Nor the address classifier (ipaddr.js, about 4.6 ms): a loopback gateway is told apart without it.
      expect(loaded.filter((line) => line.includes('node_modules/ipaddr.js/'))).toEqual([]);
      expect(result.stderr.split('\n')).toContain('INTERNAL NativeModule http');
      expect(result.stderr.split('\n')).not.toContain(`INTERNAL ${UNDICI}`);
    });
  }

  // The request goes out as the process starts (src/cli/early-read.ts): still one request, with the token the
  // command would send, one warning, one refusal, and every other form of the command as before.
  const env = async (more: Record<string, string> = {}) => ({
    DATA_DIR: '/nonexistent-stack-dir',
    TENANTCTL_GATEWAY_URL: await listening,
    TENANTCTL_OPERATOR_TOKEN: 'viewer-token',
    ...more,
  });
  const forms: Array<[string[], string]> = [
    [['status', 'acme'], 'Bearer viewer-token'],
    [['status', 'acme', '--json'], 'Bearer viewer-token'],
    [['--operator-token', 'flag-token', 'status', 'acme'], 'Bearer flag-token'],
    [['--operator-token=flag-token', 'status', '--json', 'acme'], 'Bearer flag-token'],
    [['status', 'a c/me'], 'Bearer viewer-token'],
    // Not read early: the program reads it as before.
    [['status', 'acme', '--operator-token', 'late-token'], 'Bearer late-token'],
  ];
  it.each(forms)('%j: one request, with the token %s', async (args, authorization) => {
    requests.length = 0;
    const result = await launchAsync(args, await env());
    expect(result.status, result.stderr).toBe(0);
    const ref = args.find(
      (a, i) => i > args.indexOf('status') && !a.startsWith('-') && args[i - 1] !== '--operator-token',
    );
    expect(requests).toEqual([{ url: `/v1/tenants/${encodeURIComponent(ref!)}`, authorization }]);
    if (args.includes('--json')) expect(JSON.parse(result.stdout)).toMatchObject({ externalRef: 'acme' });
    else expect(result.stdout).toContain('tenant acme: active');
  });

  // Whether the request left before the program (commander and the commands) was loaded: a load hook marks the
  // program's module (or the bundle's chunk holding it) as it is evaluated, and a wrapper of http.request reports
  // the mark when the request is made.
  writeFileSync(
    join(dir, 'program-hooks.mjs'),
    String.raw`import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
const bundle = process.env.PROBE_BUNDLE;
let chunks = {};
try { chunks = JSON.parse(readFileSync(bundle + 'chunks.json', 'utf8')); } catch {}
export async function load(url, context, next) {
  const r = await next(url, context);
  const path = url.startsWith('file://') ? fileURLToPath(url) : '';
  const modules = path.startsWith(bundle) ? chunks[path.slice(bundle.length)] ?? [] : [path];
  if (!modules.some((m) => /\/cli\/program\.(js|ts)$/.test(m))) return r;
  const source = typeof r.source === 'string' ? r.source : new TextDecoder().decode(r.source);
  return { ...r, source: 'globalThis.__programLoaded = true;\n' + source };
}
`,
  );
  writeFileSync(
    join(dir, 'program-probe.mjs'),
    String.raw`import { register, syncBuiltinESMExports } from 'node:module';
import http from 'node:http';
register('./program-hooks.mjs', import.meta.url);
const request = http.request;
http.request = function (...args) {
  process.stderr.write('REQUEST program-loaded=' + (globalThis.__programLoaded === true) + '\n');
  return request.apply(this, args);
};
syncBuiltinESMExports();
`,
  );
  const probed = (args: string[], env: Record<string, string>) =>
    new Promise<{ status: number | null; stderr: string }>((resolve, reject) => {
      const child = spawn(process.execPath, ['--import', join(dir, 'program-probe.mjs'), TENANTCTL, ...args], {
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root', PROBE_BUNDLE: BUNDLE, ...env },
      });
      let stderr = '';
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
      child.stdout.resume();
      child.once('error', reject);
      child.once('close', (status) => resolve({ status, stderr }));
    });
  for (const [label, launchEnv] of [
    ['as launched (dist/ when fresh)', {}],
    ['from the sources (tsx)', { TENANTCTL_FROM_SOURCE: '1' }],
  ] as const) {
    it(`${label}: the plainest form asks before the program loads, another form after`, async () => {
      const early = await probed(['status', 'acme'], await env(launchEnv));
      expect(early.status, early.stderr).toBe(0);
      expect(early.stderr.split('\n').filter((l) => l.startsWith('REQUEST'))).toEqual(['REQUEST program-loaded=false']);
      const late = await probed(['status', 'acme', '--operator-token', 'late-token'], await env(launchEnv));
      expect(late.status, late.stderr).toBe(0);
      expect(late.stderr.split('\n').filter((l) => l.startsWith('REQUEST'))).toEqual(['REQUEST program-loaded=true']);
    });
  }

  it('warns once of a misspelt variable, and refuses a gateway the token may not travel to once, sending nothing', async () => {
    requests.length = 0;
    const warned = await launchAsync(['status', 'acme'], await env({ TENANTCTL_GATEWAY_ULR: 'x' }));
    expect(warned.status, warned.stderr).toBe(0);
    expect(warned.stderr.split('\n').filter((l) => l.includes('unknown variable TENANTCTL_GATEWAY_ULR'))).toHaveLength(
      1,
    );
    requests.length = 0;
    const refused = await launchAsync(
      ['status', 'acme'],
      await env({ TENANTCTL_GATEWAY_URL: 'http://gateway.example:8080' }),
    );
    expect(refused.status).toBe(2);
    expect(refused.stderr.split('\n').filter((l) => l.includes('TENANTCTL_GATEWAY_URL: must be https'))).toHaveLength(
      1,
    );
    expect(requests).toEqual([]);
    // A ref the command refuses is refused by it, as before (nothing read early).
    const dots = await launchAsync(['status', '..'], await env());
    expect(dots.status).toBe(2);
    expect(dots.stderr).toContain('externalRef: must not be ".."');
    expect(requests).toEqual([]);
  });
});
