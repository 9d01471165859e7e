import { describe, expect, it } from 'vitest';
import { configSchema, loadConfig, reportConfigWarnings } from '../../src/config/index.js';
import { unknownVariables } from '../../src/config/unknown.js';
import { editDistance, prefixesOf } from '../../src/config/variable-names.js';
import { runCli } from '../harness/cli.js';

const known = Object.keys(configSchema.shape);
const SECRET = 'svpk_value_that_must_never_be_printed';

describe('a variable that looks like ours but is not', () => {
  it('is a warning naming the nearest known variable, not a refusal', () => {
    const config = loadConfig({ GATEWAY_PROT: '8081' });
    expect(config.warnings).toEqual(['unknown variable GATEWAY_PROT — did you mean GATEWAY_PORT?']);
    expect(config.GATEWAY_PORT).toBe(8080);
  });

  it('suggests the nearest name for misspellings, missing letters and removed variables', () => {
    const suggestions = unknownVariables(
      {
        ROTATION_NOTIFY_ULR: 'x',
        EVENTS_RETRY: 'x',
        WORKER_MAX_CACHED_WORKFLOW: 'x',
        DRIFT_POLICIES: 'x',
        DATABASE_URI: 'x',
        PLATFORM_BASE: 'x',
        TEMPORAL_NAMESPCE: 'x',
      },
      known,
    );
    expect(Object.fromEntries(suggestions.map((s) => [s.name, s.suggestion]))).toEqual({
      ROTATION_NOTIFY_ULR: 'ROTATION_NOTIFY_URL',
      EVENTS_RETRY: 'EVENTS_RETRY_FOR',
      WORKER_MAX_CACHED_WORKFLOW: 'WORKER_MAX_CACHED_WORKFLOWS',
      DRIFT_POLICIES: 'DRIFT_POLICY',
      DATABASE_URI: 'DATABASE_URL',
      PLATFORM_BASE: 'PLATFORM_BASE_URL',
      TEMPORAL_NAMESPCE: 'TEMPORAL_NAMESPACE',
    });
  });

  it('never shows the value', () => {
    const warnings = loadConfig({ PLATFORM_API_KYE: SECRET }).warnings;
    expect(warnings).toEqual(['unknown variable PLATFORM_API_KYE — did you mean PLATFORM_API_KEY?']);
    expect(warnings.join('\n')).not.toContain(SECRET);
  });

  it('takes its prefixes from the known variables', () => {
    expect(prefixesOf(known)).toEqual(
      expect.arrayContaining([
        'GATEWAY_',
        'ROTATION_',
        'EVENTS_',
        'DRIFT_',
        'WORKER_',
        'TEMPORAL_',
        'PLATFORM_',
        'DATABASE_',
        'TENANTCTL_',
        'APPROVAL_',
        'OUTBOUND_',
        'TRANSFER_',
      ]),
    );
    for (const prefix of prefixesOf(known)) expect(known.some((name) => name.startsWith(prefix))).toBe(true);
  });

  it('leaves alone known variables, other tools’ variables and what envconfig reads under TEMPORAL_', () => {
    const env = {
      GATEWAY_PORT: '8081',
      PATH: '/usr/bin',
      HOME: '/root',
      AWS_SECRET_ACCESS_KEY: 'not ours',
      NODE_OPTIONS: '--max-old-space-size=512',
      TEMPORAL_TLS_CLIENT_CERT_PATH: '/certs/client.pem',
      TEMPORAL_TLS: 'true',
      TEMPORAL_PROFILE: 'prod',
      TEMPORAL_CONFIG_FILE: '/etc/temporal.toml',
      TEMPORAL_GRPC_META_X_TENANT: 'a',
      TEMPORAL_CODEC_ENDPOINT: 'https://codec',
      GATEWAY_URL: 'http://127.0.0.1:8080',
      SIMULATOR_URL: 'http://127.0.0.1:4010',
      TENANTCTL_DEBUG: '1',
    };
    expect(loadConfig(env).warnings).toEqual([]);
  });

  it('is reported once per process, whoever reports it first', () => {
    const config = loadConfig({ EVENTS_RETENTION_DAY: '3' });
    const first: string[] = [];
    const second: string[] = [];
    reportConfigWarnings(config, (message) => first.push(message));
    reportConfigWarnings(config, (message) => second.push(message));
    expect(first).toEqual(['unknown variable EVENTS_RETENTION_DAY — did you mean EVENTS_RETENTION_DAYS?']);
    expect(second).toEqual([]);
  });

  it('counts a transposition as one edit', () => {
    expect(editDistance('GATEWAY_PROT', 'GATEWAY_PORT')).toBe(1);
    expect(editDistance('GATEWAY_PROT', 'GATEWAY_HOST')).toBe(3);
  });
});

describe('worker, gateway and tenantctl report it at start', () => {
  // Each refuses for want of DATABASE_URL, after the warning: a misspelt variable may be why.
  const env = { GATEWAY_PROT: SECRET, LOG_FORMAT: 'json' };
  for (const [label, args] of [
    ['tenantctl worker', ['worker']],
    ['tenantctl gateway', ['gateway']],
    ['tenantctl migrate', ['migrate']],
  ] as const) {
    it(
      label,
      async () => {
        const result = await runCli([...args], env);
        const output = `${result.stdout}\n${result.stderr}`;
        expect(output).toContain('unknown variable GATEWAY_PROT — did you mean GATEWAY_PORT?');
        expect(output.match(/unknown variable GATEWAY_PROT/g)).toHaveLength(1);
        expect(output).toContain('DATABASE_URL');
        expect(output).not.toContain(SECRET);
        expect(result.code).not.toBe(0);
      },
      60_000,
    );
  }
});
