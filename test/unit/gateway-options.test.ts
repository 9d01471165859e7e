import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/index.js';
import { gatewayOptionsOf } from '../../src/main/wiring/gateway-options.js';

const loadGatewayEnv = (env: Record<string, string>) => loadConfig(env);

describe('gateway configuration', () => {
  it('has safe defaults', () => {
    const env = loadGatewayEnv({});
    expect(env).toMatchObject({
      GATEWAY_PORT: 8080,
      GATEWAY_HOST: '127.0.0.1',
      GATEWAY_API_TOKENS: [],
      GATEWAY_CODEC_TOKENS: [],
      GATEWAY_WEBHOOK_BODY_LIMIT: 65536,
    });
    expect(gatewayOptionsOf(env, 'q').codecCorsOrigins).toEqual([]); // no browser origin unless configured
  });

  it('reads comma-separated token and origin lists and trims the public URL', () => {
    const env = loadGatewayEnv({
      GATEWAY_API_TOKENS: ` ${'a'.repeat(32)} , ${'b'.repeat(40)} ,`,
      GATEWAY_CODEC_CORS_ORIGINS: 'https://ui.example.com/,http://localhost:8233',
      GATEWAY_PUBLIC_URL: 'https://gw.example.com/',
    });
    const options = gatewayOptionsOf(env, 'q');
    expect(options.apiTokens).toEqual(['a'.repeat(32), 'b'.repeat(40)]);
    expect(options.codecCorsOrigins).toEqual(['https://ui.example.com', 'http://localhost:8233']);
    expect(options.publicUrl).toBe('https://gw.example.com');
  });

  it('reports every problem at once without echoing values', () => {
    let error: unknown;
    try {
      loadGatewayEnv({
        GATEWAY_PORT: 'eighty',
        GATEWAY_API_TOKENS: 'short-secret-value',
        PLATFORM_PERSONAL_TOKEN: 'svpk_notpersonal',
        GATEWAY_PUBLIC_URL: 'ftp://x',
      });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems;
    expect(problems.map((p) => p.split(':')[0]).sort()).toEqual([
      'GATEWAY_API_TOKENS.0',
      'GATEWAY_PORT',
      'GATEWAY_PUBLIC_URL',
      'PLATFORM_PERSONAL_TOKEN',
    ]);
    expect(problems.join('\n')).not.toMatch(/short-secret-value|svpk_notpersonal/);
  });
});
