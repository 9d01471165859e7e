import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isPortFree } from '../../src/infra/ports.js';
import { runProcess, type CliResult } from '../harness/cli.js';
import { startDevStackProcess, type DevStackProcess } from '../harness/dev-stack-process.js';

/**
 * The dev stack as a new user meets it: `npm start` in one terminal (a child process, on ports other
 * than the defaults, with its own DATA_DIR), then the README's quick-start commands, copied out of
 * README.md as written, in a second terminal that has nothing exported but DATA_DIR. If the README
 * and the product drift apart, this fails. `npm run demo` is not run: it starts a second, throwaway
 * stack of its own (another dev server and Postgres), which this machine's test budget cannot carry.
 */
const root = fileURLToPath(new URL('../..', import.meta.url));

/** The quick-start commands: the ```sh block of "## Quick start" that runs tenantctl, comments dropped. */
function quickStartCommands(): string[] {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const section = readme.slice(
    readme.indexOf('## Quick start'),
    readme.indexOf('\n## ', readme.indexOf('## Quick start') + 1),
  );
  const block = [...section.matchAll(/```sh\n([\s\S]*?)```/g)]
    .map((m) => m[1]!)
    .find((text) => text.includes('npx tenantctl onboard'));
  if (!block) throw new Error('README.md: no ```sh block with `npx tenantctl onboard` under "## Quick start"');
  return block
    .split('\n')
    .map((line) => line.replace(/\s+#\s.*$/, '').trim())
    .filter(Boolean);
}

/** A command line run by a shell in the second terminal: PATH, HOME and DATA_DIR, nothing else. */
function shell(line: string, dataDir: string): Promise<CliResult> {
  return runProcess('sh', ['-c', line], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root', DATA_DIR: dataDir },
    timeoutMs: 180_000,
  });
}

/** What a user expects each quick-start command to print. A new command in the README needs a line here. */
const expectations: Array<{ command: RegExp; prints: RegExp[] }> = [
  {
    command: /^npx tenantctl onboard --external-ref acme /,
    prints: [/^tenant acme is active: sub-account sub_\w+, key key_\w+ \(sha256:[0-9a-f]+\)$/m],
  },
  {
    command: /^npx tenantctl status acme$/,
    prints: [
      /^tenant acme: active — "Acme Inc", sub-account sub_\w+$/m,
      /^onboarding onboard:acme: COMPLETED$/m,
      /^key default g1: active key_\w+ sha256:[0-9a-f]+/m,
      /^transfer initial: succeeded 5000000 micro-USD$/m,
    ],
  },
  { command: /^npx tenantctl list$/, prints: [/^acme\s+active\s+sub_\w+\s+Acme Inc$/m] },
  { command: /^npx tenantctl key reveal acme --reason /, prints: [/^svsk_\S+\n$/] },
  {
    command: /^npx tenantctl rotate-key acme --emergency .*--wait$/,
    prints: [/^rotation completed: slot default g1→g2, current key key_\w+ \(sha256:[0-9a-f]+\)$/m],
  },
];

describe('npm start and the README quick start', () => {
  let stack: DevStackProcess;
  let stackOutput = '';
  let ports: Record<string, number>;
  let dataDir = '';

  beforeAll(async () => {
    stack = await startDevStackProcess();
    ({ ports, dataDir } = stack);
    stackOutput = stack.output();
  });

  afterAll(async () => {
    await stack?.stop();
  });

  it('prints a banner with the ports it was given and the rotation deployer, without JSON log lines', () => {
    expect(stackOutput).toContain(`Temporal Web UI:  http://127.0.0.1:${ports.TEMPORAL_UI_PORT}`);
    expect(stackOutput).toContain(`Temporal:         127.0.0.1:${ports.TEMPORAL_DEV_PORT}`);
    expect(stackOutput).toContain(`Gateway:          http://127.0.0.1:${ports.GATEWAY_PORT}`);
    expect(stackOutput).toMatch(/Key rotation:\s+notify, to the dev stack's own receiver http:\/\/127\.0\.0\.1:\d+/);
    expect(stackOutput).not.toMatch(/^\{"level"/m);
    // Quiet when nothing is wrong: no warning on a normal start (the platform queue's activities-only
    // worker used to print the SDK's "No workflows registered" on every start).
    expect(stackOutput).not.toContain('No workflows registered');
    expect(stackOutput.split('\n').filter((line) => /^\[[\d:.]+\] (WARN|ERROR)\b/.test(line))).toEqual([]);
    const file = join(dataDir, 'stack.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({
      GATEWAY_URL: `http://127.0.0.1:${ports.GATEWAY_PORT}`,
      ROTATION_DEPLOYER: 'notify',
      ROTATION_NOTIFY_URL: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\//),
      PLATFORM_PERSONAL_TOKEN: expect.stringMatching(/^sv_/),
      PAYLOAD_CODEC: 'auto',
    });
  });

  it('runs every README quick-start command, as written, from a second terminal', async () => {
    const commands = quickStartCommands();
    const run = commands.filter((line) => line !== 'npm run demo');
    expect(commands).toContain('npm run demo');
    expect(run.length).toBeGreaterThanOrEqual(4);
    let token = '';
    for (const line of run) {
      const expected = expectations.find((e) => e.command.test(line));
      expect(expected, `the README runs \`${line}\`: say here what it should print`).toBeDefined();
      const result = await shell(line, dataDir);
      expect(result.code, `${line}\n${result.stdout}${result.stderr}`).toBe(0);
      for (const pattern of expected!.prints) expect(result.stdout, line).toMatch(pattern);
      if (line.includes('key reveal')) token = result.stdout.trim();
    }
    // The revealed token went to the operator's terminal only: never into the stack's console.
    expect(token).toMatch(/^svsk_/);
    expect(stack.output()).not.toContain(token);
  });

  it(
    'completes `npx tenantctl rotate-key acme --emergency --wait`, and the receiver ' + 'got the signed notice',
    async () => {
      const result = await shell('npx tenantctl rotate-key acme --emergency --wait', dataDir);
      expect(result.code, result.stdout + result.stderr).toBe(0);
      expect(result.stdout).toMatch(/^rotation completed: slot default g\d+→g\d+, current key key_\w+/m);
      const file = join(dataDir, 'notify-received.jsonl');
      expect(existsSync(file)).toBe(true);
      const notices = readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(notices.at(-1)).toMatchObject({
        event: 'keyRotated',
        externalRef: 'acme',
        slot: 'default',
        signatureValid: true,
        emergency: true,
      });
      expect(readFileSync(file, 'utf8')).not.toMatch(/svsk_/);
    },
  );

  it('prints every lifecycle event as its own receiver verified it (Standard Webhooks)', async () => {
    const deadline = Date.now() + 30_000;
    while (!/event key\.rotated acme evt_\d+ \(verified\)/.test(stack.output()) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 200));
    const output = stack.output();
    expect(output).toMatch(
      /events receiver on http:\/\/127\.0\.0\.1:\d+\/events \(subscription esub_\w+, every type\)/,
    );
    for (const type of ['tenant.onboarded', 'key.issued', 'transfer.succeeded', 'key.rotated'])
      expect(output).toMatch(new RegExp(`event ${type.replace('.', '\\.')} acme evt_\\d+ \\(verified\\)`));
    expect(output).not.toMatch(/REFUSED a delivery/);
  });

  it('stops everything, the dev server last, and frees its ports', async () => {
    await stack.stop();
    expect(stack.output()).toMatch(
      /\[stack\] stopping worker[\s\S]*\[stack\] stopping Postgres[\s\S]*\[stack\] stopping Temporal dev server/,
    );
    for (const port of Object.values(ports)) expect(await isPortFree(port), `port ${port}`).toBe(true);
    // Quiet to the end: Ctrl-C (a signal to the whole process group) reached Postgres too, which shut down under
    // the draining worker, and the console showed the failed activity and parent key refresh as warnings.
    expect(
      stack
        .output()
        .split('\n')
        .filter((line) => /^\[[\d:.]+\] (WARN|ERROR)\b/.test(line)),
    ).toEqual([]);
  });
});
