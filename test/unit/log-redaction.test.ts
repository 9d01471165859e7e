import { describe, expect, it } from 'vitest';
import { createLogger, maskTokens, REDACTED, toTemporalLogger } from '../../src/infra/log.js';

const tenantToken = 'svsk_live_4f9c2a7e1b3d5f6a8c0e2b4d6f8a1c3e';
const platformKey = 'svpk_9a8b7c6d5e4f3a2b1c0d';
const personalToken = 'sv_Zx81-kq.Pw~t+/==';

function capture(): {
  logger: ReturnType<typeof createLogger>;
  output: () => string;
  lines: () => Record<string, unknown>[];
} {
  const chunks: string[] = [];
  const logger = createLogger({ level: 'trace', destination: { write: (chunk: string) => void chunks.push(chunk) } });
  const output = (): string => chunks.join('');
  return {
    logger,
    output,
    lines: () =>
      output()
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as Record<string, unknown>),
  };
}

function expectNoSecrets(output: string): void {
  for (const secret of [tenantToken, platformKey, personalToken, '4f9c2a7e1b3d', '9a8b7c6d5e4f', 'Zx81-kq']) {
    expect(output).not.toContain(secret);
  }
}

describe('maskTokens', () => {
  it('masks all three token kinds and keeps the kind visible', () => {
    expect(maskTokens(`a ${tenantToken} b ${platformKey}, c=${personalToken}.`)).toBe(
      `a svsk_${REDACTED} b svpk_${REDACTED}, c=sv_${REDACTED}.`,
    );
    expect(maskTokens(`Bearer ${tenantToken}`)).toBe(`Bearer svsk_${REDACTED}`);
  });

  it('masks a token that follows a JSON escape', () => {
    expect(maskTokens(String.raw`line\n${tenantToken} and \u00a0${personalToken}`)).toBe(
      String.raw`line\nsvsk_${REDACTED} and \u00a0sv_${REDACTED}`,
    );
  });

  it('leaves words that merely contain sv_ alone', () => {
    expect(maskTokens('export csv_file and msv_x')).toBe('export csv_file and msv_x');
  });
});

describe('createLogger', () => {
  it('masks a token in the message', () => {
    const { logger, output, lines } = capture();
    logger.info(`created key, token=${tenantToken}`);
    logger.info('deploying %s with %s', tenantToken, platformKey);
    expectNoSecrets(output());
    expect(lines()[0]?.['msg']).toBe(`created key, token=svsk_${REDACTED}`);
  });

  it('masks a token in a nested field at any depth', () => {
    const { logger, output, lines } = capture();
    logger.info(
      { step: 'issue', result: { body: { data: { note: `value ${tenantToken}` } } }, list: [personalToken] },
      'done',
    );
    expectNoSecrets(output());
    expect(lines()[0]).toMatchObject({ step: 'issue', result: { body: { data: { note: `value svsk_${REDACTED}` } } } });
  });

  it('censors secret fields by path, whatever their value looks like', () => {
    const { logger, output, lines } = capture();
    logger.info(
      {
        headers: { authorization: `Bearer ${tenantToken}`, 'x-api-key': 'opaque-key-1' },
        req: { headers: { authorization: 'Basic b3BlcmF0b3I6aHVudGVyMg==' } },
        tenant: { token: 'opaque-token-2', password: 'hunter2', apiKey: 'k', sealed: 'v1.k1.a.b.c' },
        token: 'opaque-token-3',
      },
      'request',
    );
    const text = output();
    expectNoSecrets(text);
    for (const value of [
      'opaque-key-1',
      'b3BlcmF0b3I6aHVudGVyMg',
      'opaque-token-2',
      'hunter2',
      'v1.k1',
      'opaque-token-3',
    ]) {
      expect(text).not.toContain(value);
    }
    expect(lines()[0]).toMatchObject({
      headers: { authorization: REDACTED, 'x-api-key': REDACTED },
      req: { headers: { authorization: REDACTED } },
      tenant: { token: REDACTED, password: REDACTED, apiKey: REDACTED, sealed: REDACTED },
      token: REDACTED,
    });
  });

  it('masks a token in an Error message and stack', () => {
    const { logger, output, lines } = capture();
    logger.error(new Error(`platform rejected ${tenantToken}`));
    logger.error({ err: new Error(`retry with ${platformKey}`) }, 'failed');
    expectNoSecrets(output());
    const [first, second] = lines();
    expect(first?.['err']).toMatchObject({ type: 'Error', message: `platform rejected svsk_${REDACTED}` });
    expect(String((first?.['err'] as { stack?: unknown }).stack)).toContain(`svsk_${REDACTED}`);
    expect(second?.['err']).toMatchObject({ message: `retry with svpk_${REDACTED}` });
  });
});

describe('toTemporalLogger', () => {
  it('logs at the mapped level with meta as fields, masked like the rest', () => {
    const { logger, output, lines } = capture();
    const temporal = toTemporalLogger(logger);
    temporal.warn(`activity failed for ${tenantToken}`, {
      sdkComponent: 'activity',
      error: new Error(`boom ${platformKey}`),
    });
    temporal.log('DEBUG', 'polling', { taskQueue: 'tenants' });
    temporal.trace('t');
    temporal.error('e', { headers: { authorization: 'Bearer opaque' } });
    expectNoSecrets(output());
    expect(output()).not.toContain('opaque');
    const [warn, debug, trace, error] = lines();
    expect(warn).toMatchObject({ level: 40, msg: `activity failed for svsk_${REDACTED}`, sdkComponent: 'activity' });
    expect(warn?.['error']).toMatchObject({ message: `boom svpk_${REDACTED}` });
    expect(debug).toMatchObject({ level: 20, msg: 'polling', taskQueue: 'tenants' });
    expect(trace).toMatchObject({ level: 10, msg: 't' });
    expect(error).toMatchObject({ level: 50, headers: { authorization: REDACTED } });
  });
});
