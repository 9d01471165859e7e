import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENCRYPTED_ENCODING } from '../../src/secrets/payload-codec.js';
import { runCli } from '../harness/cli.js';
import { startDevStackProcess, type DevStackProcess } from '../harness/dev-stack-process.js';

/**
 * The Temporal Web UI as an operator uses it, in a real browser (Debian's Chromium driven by
 * playwright-core), against `npm start` with the UI on a non-default port: a finished onboarding's
 * input and result must show decoded through the gateway's codec (CORS must follow the UI's real
 * origin), and the UI's Start Workflow form must start an onboarding that completes.
 * Selectors are those of the Temporal UI 2.42.1 embedded in Temporal CLI v1.5.1.
 */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const UNDER_CI = Boolean(process.env.CI);
const browserMissing = !existsSync(CHROMIUM);
if (browserMissing && !UNDER_CI) {
  console.warn(
    `SKIPPED test/surfaces/web-ui.test.ts: no Chromium at ${CHROMIUM} (apt-get ` +
      `install chromium, or set CHROMIUM_PATH). Under CI it fails instead.`,
  );
}

// As root, and without the background-networking switches, Chromium's own connections get refused.
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const UI_WAIT_MS = 60_000;
// An undecoded payload shows its metadata, the encoding in plain or in base64.
const STILL_ENCRYPTED = new RegExp(
  `${ENCRYPTED_ENCODING}|${Buffer.from(ENCRYPTED_ENCODING).toString('base64')}|"metadata"`,
);

describe.skipIf(browserMissing && !UNDER_CI)('the Web UI of `npm start` on a non-default port', () => {
  let stack: DevStackProcess;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    if (browserMissing)
      throw new Error(`No Chromium at ${CHROMIUM}: CI must install it (.ci/run runs apt-get install -y chromium)`);
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
    stack = await startDevStackProcess();
    page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  });

  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
  });

  it('serves the UI on the port TEMPORAL_UI_PORT asked for, not 8233', () => {
    expect(new URL(stack.uiUrl).port).toBe(String(stack.ports.TEMPORAL_UI_PORT));
    expect(stack.ports.TEMPORAL_UI_PORT).not.toBe(8233);
  });

  it("answers the codec's CORS preflight for the UI's real origin, in both loopback spellings", async () => {
    const uiPort = stack.ports.TEMPORAL_UI_PORT;
    for (const origin of [`http://127.0.0.1:${uiPort}`, `http://localhost:${uiPort}`]) {
      const response = await fetch(`${stack.stackEnv.GATEWAY_URL}/codec/decode`, {
        method: 'OPTIONS',
        // What the UI sends: JSON plus its namespace header (Authorization only with an access token).
        headers: {
          origin,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'content-type,x-namespace',
        },
      });
      expect(response.status, origin).toBe(204);
      expect(response.headers.get('access-control-allow-origin')).toBe(origin);
      expect(response.headers.get('access-control-allow-headers')).toMatch(/content-type.*x-namespace/);
    }
    const foreign = await fetch(`${stack.stackEnv.GATEWAY_URL}/codec/decode`, {
      method: 'OPTIONS',
      headers: { origin: 'http://127.0.0.1:8233', 'access-control-request-method': 'POST' },
    });
    expect(foreign.status).toBe(403);
  });

  it("shows a finished onboarding's input and result decoded", async () => {
    const ref = 'web-ui-cli';
    const onboarded = await runCli(
      ['onboard', '--external-ref', ref, '--name', 'Web UI Inc', '--funding', '5000000', '--wait', '--json'],
      stack.cliEnv,
      120_000,
    );
    expect(onboarded.code, onboarded.stderr).toBe(0);
    const { result } = JSON.parse(onboarded.stdout) as { result: { fingerprint: string; subaccountId: string } };

    await page.goto(`${stack.uiUrl}/namespaces/default/workflows/${encodeURIComponent(`onboard:${ref}`)}`);
    const shown = await decodedPanel(page, result.fingerprint);
    expect(shown).toContain(`"externalRef": "${ref}"`);
    expect(shown).toContain('"fundingMicroUsd": "5000000"');
    expect(shown).toContain(result.subaccountId);
    expect(shown).not.toMatch(STILL_ENCRYPTED);
    await page.getByTestId('data-encoder-status-success').waitFor({ timeout: UI_WAIT_MS });
  });

  it('starts onboardTenant from the Start Workflow form with plain JSON and shows it completed', async () => {
    const ref = 'web-ui-form';
    const workflowId = `onboard:${ref}`;
    await startFromForm(page, stack, workflowId, {
      externalRef: ref,
      name: 'Web Form Inc',
      fundingMicroUsd: '2000000',
    });
    await page.getByRole('link', { name: 'Workflow started successfully' }).click({ timeout: UI_WAIT_MS });
    await page.getByRole('main').getByText('Completed', { exact: true }).first().waitFor({ timeout: UI_WAIT_MS });
    const shown = await decodedPanel(page, '"status": "active"');
    expect(shown).toContain(`"externalRef": "${ref}"`);
    expect(shown).toContain('"fundingMicroUsd": "2000000"');
    expect(shown).not.toMatch(STILL_ENCRYPTED);

    // The UI sent the input through the codec: Temporal holds ciphertext only.
    expect(await storedRun(stack.stackEnv.TEMPORAL_ADDRESS!, workflowId)).toEqual({
      status: 'COMPLETED',
      inputEncoding: ENCRYPTED_ENCODING,
    });
    const status = await runCli(['status', ref], stack.cliEnv);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(/active/);
  });

  it('starts onboardTenant by plan from the Start Workflow form, and the run carries out the plan', async () => {
    const plan = {
      initialFundingMicroUsd: '1500000',
      keySlots: ['default', 'web'],
      rotation: { interval: '90d' },
      autoTopUp: { below: '500000', to: '1500000', maxPerDay: '5000000' },
    };
    const created = await runCli(['plans', 'create', 'web-starter', '--json', JSON.stringify(plan)], stack.cliEnv);
    expect(created.code, created.stderr).toBe(0);
    const ref = 'web-ui-plan';
    const workflowId = `onboard:${ref}`;
    // No version: the run's first step resolves the latest and pins it in its history.
    await startFromForm(page, stack, workflowId, { externalRef: ref, name: 'Web Plan Inc', plan: 'web-starter' });

    await page.getByRole('link', { name: 'Workflow started successfully' }).click({ timeout: UI_WAIT_MS });
    await page.getByRole('main').getByText('Completed', { exact: true }).first().waitFor({ timeout: UI_WAIT_MS });
    const shown = await decodedPanel(page, '"status": "active"');
    expect(shown).toContain('"plan": "web-starter"');
    expect(shown).toContain('"slot": "web"');
    expect(shown).toContain('"policySet": true');
    expect(shown).toContain(`"rotation:${ref}:web"`);
    expect(shown).not.toMatch(STILL_ENCRYPTED);

    const policy = await runCli(['funding', 'policy', 'show', ref, '--json'], stack.cliEnv);
    expect(policy.code, policy.stderr).toBe(0);
    expect(JSON.parse(policy.stdout)).toMatchObject({ policy: { below: '500000', to: '1500000' } });
    const keys = await runCli(['key', 'list', ref, '--json'], stack.cliEnv);
    expect(keys.code, keys.stderr).toBe(0);
    expect(keys.stdout).toContain('"web"');
  });
});

/** Fills the UI's Start Workflow form for onboardTenant with `input` as its JSON, and submits it. */
async function startFromForm(page: Page, stack: DevStackProcess, workflowId: string, input: unknown): Promise<void> {
  await page.goto(`${stack.uiUrl}/namespaces/default/workflows`);
  await page.getByRole('button', { name: 'Start Workflow' }).click();

  const form = page.getByRole('main');
  await form.getByRole('textbox', { name: 'Workflow ID' }).fill(workflowId);
  await form
    .getByRole('textbox', { name: 'Task Queue' })
    .fill(stack.stackEnv.TEMPORAL_TASK_QUEUE ?? 'tenant-provisioning');
  await form.getByRole('textbox', { name: 'Workflow Type' }).fill('onboardTenant');
  const data = form.getByRole('textbox').last(); // the unnamed JSON editor under "Input"
  await data.fill(JSON.stringify(input, null, 2));
  // The editor reformats on blur and the page grows: blur first, or the click lands beside the button.
  await data.blur();
  await form.getByRole('button', { name: 'Start Workflow' }).click();
}

/** The Input/Result panel's text once `expected` shows in it; on a timeout, a screenshot and the text. */
async function decodedPanel(page: Page, expected: string): Promise<string> {
  const panel: Locator = page.getByTestId('input-and-result');
  try {
    await panel.filter({ hasText: expected }).waitFor({ timeout: UI_WAIT_MS });
  } catch (error) {
    const screenshot = join(tmpdir(), `web-ui-${Date.now()}.png`);
    await page.screenshot({ path: screenshot, fullPage: true });
    const text = await panel.innerText({ timeout: 1_000 }).catch(() => '(no input/result panel)');
    throw new Error(`the Web UI did not show ${expected} decoded (screenshot ${screenshot}); it shows:\n${text}`, {
      cause: error,
    });
  }
  return panel.innerText();
}

/** What Temporal itself holds for the run: its status and the encoding of its stored input. */
async function storedRun(
  address: string,
  workflowId: string,
): Promise<{ status: string | undefined; inputEncoding: string }> {
  const connection = await Connection.connect({ address });
  try {
    const handle = new Client({ connection }).workflow.getHandle(workflowId);
    const history = await handle.fetchHistory();
    const payload = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
    return {
      status: (await handle.describe()).status.name,
      inputEncoding: new TextDecoder().decode(payload?.metadata?.['encoding'] ?? new Uint8Array()),
    };
  } finally {
    await connection.close();
  }
}
