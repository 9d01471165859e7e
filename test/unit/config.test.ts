import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/index.js';

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
}

describe('loadConfig', () => {
  it('gives working defaults for an empty environment', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      TEMPORAL_NAMESPACE: 'default',
      TEMPORAL_TASK_QUEUE: 'tenant-provisioning',
      LOG_LEVEL: 'info',
      DATA_DIR: '.data',
    });
    expect(config.DATABASE_URL).toBeUndefined();
  });

  it('reports every problem at once, one line each, naming the variable', () => {
    const problems = problemsOf({
      DATABASE_URL: 'mysql://nope',
      TEMPORAL_ADDRESS: 'no port here',
      LOG_LEVEL: 'verbose',
      TEMPORAL_UI_PORT: '99999',
      PLATFORM_API_KEY: 'svsk_tenant_key_is_wrong_here',
    });
    expect(problems).toHaveLength(5);
    expect(problems.map((p) => p.split(':')[0]).sort()).toEqual(
      ['DATABASE_URL', 'LOG_LEVEL', 'PLATFORM_API_KEY', 'TEMPORAL_ADDRESS', 'TEMPORAL_UI_PORT'].sort(),
    );
  });

  it('never echoes a rejected value (it may be a secret)', () => {
    const secret = 'svsk_this_should_never_be_printed';
    const problems = problemsOf({ PLATFORM_API_KEY: secret, DATABASE_URL: `postgres://u:${secret}@` });
    expect(problems.join('\n')).not.toContain(secret);
    expect(problems).toHaveLength(2);
  });

  it("takes the worker's sticky cache size as a whole number from 2, naming the variable otherwise", () => {
    expect(loadConfig({ WORKER_MAX_CACHED_WORKFLOWS: '800' }).WORKER_MAX_CACHED_WORKFLOWS).toBe(800);
    expect(loadConfig({}).WORKER_MAX_CACHED_WORKFLOWS).toBeUndefined();
    for (const bad of ['1', '2.5', 'lots'])
      expect(problemsOf({ WORKER_MAX_CACHED_WORKFLOWS: bad })).toEqual([
        expect.stringMatching(/^WORKER_MAX_CACHED_WORKFLOWS: /),
      ]);
  });

  it("takes the worker's heap growth as a whole percent from 0 to 400, 20 by default, naming the variable otherwise", () => {
    expect(loadConfig({}).WORKER_HEAP_GROWING_PERCENT).toBe(20);
    expect(loadConfig({ WORKER_HEAP_GROWING_PERCENT: '0' }).WORKER_HEAP_GROWING_PERCENT).toBe(0);
    expect(loadConfig({ WORKER_HEAP_GROWING_PERCENT: '50' }).WORKER_HEAP_GROWING_PERCENT).toBe(50);
    for (const bad of ['-1', '401', '12.5', 'low'])
      expect(problemsOf({ WORKER_HEAP_GROWING_PERCENT: bad })).toEqual([
        expect.stringMatching(/^WORKER_HEAP_GROWING_PERCENT: /),
      ]);
  });

  it('treats empty strings as unset', () => {
    expect(loadConfig({ DATABASE_URL: '', TEMPORAL_ADDRESS: ' ' }).DATABASE_URL).toBeUndefined();
  });

  it('hands TEMPORAL_* variables to envconfig and nothing else', () => {
    const config = loadConfig({
      TEMPORAL_API_KEY: 'k',
      TEMPORAL_TLS_CLIENT_CERT_PATH: '/x',
      DATABASE_URL: 'postgres://a@b/c',
      HOME: '/root',
    });
    expect(Object.keys(config.temporalEnv).sort()).toEqual([
      'HOME',
      'TEMPORAL_API_KEY',
      'TEMPORAL_TLS_CLIENT_CERT_PATH',
    ]);
  });
});
