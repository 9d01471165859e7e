import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/index.js';

const problems = (env: Record<string, string>): string[] => {
  try {
    loadConfig(env);
    return [];
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
};

describe('OUTBOUND_ALLOW_HOSTS and the outbound URLs of the configuration', () => {
  it('names every bad OUTBOUND_ALLOW_HOSTS entry', () => {
    expect(problems({ OUTBOUND_ALLOW_HOSTS: 'http://x.example,127.0.0.1:99999,ok.example' })).toEqual([
      expect.stringMatching(/^OUTBOUND_ALLOW_HOSTS: entry "http:\/\/x.example" is not host\[:port\]/),
      expect.stringMatching(/^OUTBOUND_ALLOW_HOSTS: entry "127.0.0.1:99999" is not host\[:port\]/),
    ]);
    expect(loadConfig({ OUTBOUND_ALLOW_HOSTS: '127.0.0.1:9000' }).OUTBOUND_ALLOW_HOSTS).toEqual([
      { host: '127.0.0.1', port: 9000 },
    ]);
    expect(loadConfig({}).OUTBOUND_ALLOW_HOSTS).toEqual([]);
  });

  it('refuses a ROTATION_NOTIFY_URL the rule refuses, naming the variable', () => {
    for (const url of ['http://notify.example.com/x', 'https://169.254.169.254/x', 'http://127.0.0.1:7000/x'])
      expect(problems({ ROTATION_NOTIFY_URL: url }), url).toEqual([
        expect.stringMatching(/^ROTATION_NOTIFY_URL: must/),
      ]);
    expect(problems({ ROTATION_NOTIFY_URL: 'https://notify.example.com/x' })).toEqual([]);
    expect(
      problems({ ROTATION_NOTIFY_URL: 'http://127.0.0.1:7000/x', OUTBOUND_ALLOW_HOSTS: '127.0.0.1:7000' }),
    ).toEqual([]);
  });

  it('refuses PLATFORM_BASE_URL over plain http to anything but loopback (the parent key goes with it)', () => {
    for (const url of ['http://platform.example.com/api/v1', 'http://10.0.0.8/api/v1', 'http://93.184.216.34/api/v1'])
      expect(problems({ PLATFORM_BASE_URL: url }), url).toEqual([
        expect.stringMatching(/^PLATFORM_BASE_URL: must be https/),
      ]);
    for (const url of [
      'https://platform.example.com/api/v1',
      'http://127.0.0.1:4010/api/v1',
      'http://localhost:4010/api/v1',
      'http://[::1]:4010/api/v1',
    ])
      expect(problems({ PLATFORM_BASE_URL: url }), url).toEqual([]);
  });
});
