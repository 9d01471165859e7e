import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, isPortFree } from '../../src/infra/ports.js';
import { runProcess, type CliResult } from '../harness/cli.js';

/**
 * `npm run cluster` as a user runs it: a child process in its own process group with its own
 * DATA_DIR and non-default ports, then `tenantctl` from a second terminal (only DATA_DIR set),
 * the trigger API on the SECOND gateway, and Ctrl-C. The server comes from the cache (CI builds it
 * first with `npm run cluster -- --build-only`; a cold machine builds it here).
 */
const REPO = fileURLToPath(new URL('../..', import.meta.url));
const PASSED_THROUGH = [
  'PATH',
  'HOME',
  'TMPDIR',
  'XDG_CACHE_HOME',
  'GOPATH',
  'GOPROXY',
  'GOFLAGS',
  'GOTOOLCHAIN',
  'GOMODCACHE',
];
const UP_LINE = 'Ctrl-C stops everything.';

function shell(line: string, dataDir: string): Promise<CliResult> {
  return runProcess('sh', ['-c', line], {
    cwd: REPO,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root', DATA_DIR: dataDir },
    timeoutMs: 180_000,
  });
}

describe('npm run cluster', () => {
  let dir = '';
  let dataDir = '';
  let output = '';
  let pgid = 0;
  let ports: { TEMPORAL_DEV_PORT: number; GATEWAY_PORT: number };

  beforeAll(async () => {
    // Postgres runs as the postgres user when we are root: the parent must be traversable.
    dir = mkdtempSync(join(tmpdir(), 'tenant-orch-cluster-surface-'));
    chmodSync(dir, 0o755);
    dataDir = join(dir, 'data');
    ports = { TEMPORAL_DEV_PORT: 20_000 + Math.floor(Math.random() * 10_000), GATEWAY_PORT: await freePort() };
    const env: Record<string, string> = {
      DATA_DIR: dataDir,
      TEMPORAL_DEV_PORT: String(ports.TEMPORAL_DEV_PORT),
      GATEWAY_PORT: String(ports.GATEWAY_PORT),
    };
    for (const name of PASSED_THROUGH) if (process.env[name]) env[name] = process.env[name];
    const child = spawn('npm', ['run', 'cluster', '--silent'], {
      cwd: REPO,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    pgid = child.pid!;
    await new Promise<void>((resolve, reject) => {
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes(UP_LINE)) resolve();
      };
      child.stdout.on('data', onData);
      child.stderr.on('data', onData);
      child.once('exit', (code) => reject(new Error(`npm run cluster exited (${code}) before it was up:\n${output}`)));
    });
  });

  afterAll(async () => {
    await stopGroup(pgid);
    rmSync(dir, { recursive: true, force: true, maxRetries: 5 });
  });

  it('prints the topology: the server on the given port, two workers, two gateways', () => {
    expect(output).toContain(`Temporal:   127.0.0.1:${ports.TEMPORAL_DEV_PORT} (server 4 history shards on Postgres`);
    expect(output).toMatch(/Workers:\s+worker-1 pid \d+, worker-2 pid \d+/);
    // Each worker is launched with the worker's Node flags (src/infra/worker-node-flags.ts), as the image is.
    for (const [, pid] of output.matchAll(/worker-\d pid (\d+)/g))
      expect(readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')).toContain('--max-semi-space-size=4');
    expect(output).toMatch(/Gateways:\s+http:\/\/127\.0\.0\.1:\d+, http:\/\/127\.0\.0\.1:\d+/);
  });

  it('answers tenantctl from a second terminal and the trigger API on the second gateway', async () => {
    const setup = await shell('npx tenantctl setup', dataDir);
    expect(setup.code, setup.stdout + setup.stderr).toBe(0);
    expect(setup.stdout).toContain('search attributes already registered');

    const gateway2 = /Gateways:\s+\S+, (\S+)/.exec(output)![1]!;
    const stack = JSON.parse(readFileSync(join(dataDir, 'stack.json'), 'utf8')) as Record<string, string>;
    const auth = {
      authorization: `Bearer ${stack.GATEWAY_API_TOKENS!.split(',')[0]}`,
      'content-type': 'application/json',
    };
    const started = await fetch(`${gateway2}/v1/tenants`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ externalRef: 'acme', name: 'Acme Inc', fundingMicroUsd: '5000000' }),
    });
    expect(started.status).toBe(202);
    let status: { data?: { record?: { status?: string } } } = {};
    for (let tries = 0; tries < 120 && status.data?.record?.status !== 'active'; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      status = (await (await fetch(`${gateway2}/v1/tenants/acme`, { headers: auth })).json()) as typeof status;
    }
    expect(status.data?.record?.status).toBe('active');

    const rotated = await shell('npx tenantctl rotate-key acme --emergency --wait', dataDir);
    expect(rotated.code, rotated.stdout + rotated.stderr).toBe(0);
    expect(rotated.stdout).toMatch(/^rotation completed: slot default g1→g2/m);
  });

  it('stops on Ctrl-C in reverse order: gateways, workers, then the Temporal server and its Postgres', async () => {
    await stopGroup(pgid, 'SIGINT');
    const at = (text: string) => output.indexOf(`[cluster] stopping ${text}`);
    const order = [
      Math.max(at('gateway-1'), at('gateway-2')),
      Math.min(at('worker-1'), at('worker-2')),
      Math.max(at('worker-1'), at('worker-2')),
      at('Postgres'),
      at('Temporal cluster'),
    ];
    expect(
      order.every((position) => position > 0),
      output.slice(-2000),
    ).toBe(true);
    expect(order, 'gateways (in either order), then workers, then Postgres, then the Temporal cluster').toEqual(
      [...order].sort((a, b) => a - b),
    );
    expect(await isPortFree(ports.TEMPORAL_DEV_PORT)).toBe(true);
  });
});

/** Ctrl-C to the whole group, then wait (bounded) for every process of it to end. */
async function stopGroup(pgid: number, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  const alive = () => {
    try {
      process.kill(-pgid, 0);
      return true;
    } catch {
      return false;
    }
  };
  if (!pgid || !alive()) return;
  process.kill(-pgid, signal);
  for (let waited = 0; alive() && waited < 70_000; waited += 100) {
    if (waited === 60_000) process.kill(-pgid, 'SIGKILL');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
