import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { configMarkdown, STACK_TABLE_END, STACK_TABLE_START } from '../../src/config/docs.js';
import { configSchema, loadConfig, stackSchema } from '../../src/config/index.js';
import { gatewayOptionsOf } from '../../src/main/wiring/gateway-options.js';

const development = readFileSync(join(import.meta.dirname, '../../docs/development.md'), 'utf8');

describe('the settings, audited (issue 46)', () => {
  it('documents at most 50 settings of the product, none of the stack or development among them', () => {
    const product = Object.keys(configSchema.shape);
    expect(product.length).toBeLessThanOrEqual(50);
    for (const name of Object.keys(stackSchema.shape)) expect(product).not.toContain(name);
    expect(product).not.toContain('DATA_DIR');
    expect(product).not.toContain('TENANTCTL_DEBUG');
  });

  it("lists the stack's and development's settings in docs/development.md, generated from their schema", () => {
    const table = new RegExp(`${STACK_TABLE_START}\\n([\\s\\S]*?)\\n${STACK_TABLE_END}`).exec(development)?.[1];
    expect(table).toBe(configMarkdown('stack'));
    const rows = configMarkdown('stack').split('\n').slice(2);
    expect(rows.map((row) => /^\| `([A-Z0-9_]+)` \|/.exec(row)?.[1])).toEqual(Object.keys(stackSchema.shape));
  });

  it('still reads the stack settings, as before', () => {
    const config = loadConfig({ DATA_DIR: '/tmp/x', TEMPORAL_DEV_PORT: '17233', PARENT_KEY_REFRESH_MS: '200' });
    expect(config).toMatchObject({ DATA_DIR: '/tmp/x', TEMPORAL_DEV_PORT: 17233, PARENT_KEY_REFRESH_MS: 200 });
    expect(config.warnings).toEqual([]);
  });

  it('applies a deprecated setting that is set, and names it in a warning (never its value)', () => {
    const config = loadConfig({ GATEWAY_WEBHOOK_TOLERANCE_SECONDS: '600', EVENTS_SECRET_OVERLAP_SECONDS: '7200' });
    expect(gatewayOptionsOf(config, 'q').webhookToleranceSeconds).toBe(600);
    expect(config.EVENTS_SECRET_OVERLAP_SECONDS).toBe(7200);
    expect(config.warnings).toEqual([
      expect.stringMatching(/^GATEWAY_WEBHOOK_TOLERANCE_SECONDS is deprecated \(1\.1\)/),
      expect.stringMatching(/^EVENTS_SECRET_OVERLAP_SECONDS is deprecated \(1\.1\)/),
    ]);
    expect(config.warnings.join('\n')).not.toMatch(/600|7200/);
  });

  it('keeps the defaults of the deprecated settings when they are unset, without a warning', () => {
    const config = loadConfig({});
    expect(gatewayOptionsOf(config, 'q')).toMatchObject({
      webhookToleranceSeconds: 300,
      webhookSecretGraceSeconds: 3_600,
      webhookInboxRetentionSeconds: 30 * 86_400,
    });
    expect(config.warnings).toEqual([]);
  });
});
