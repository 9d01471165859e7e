import { describe, expect, it } from 'vitest';
import { givenSettings } from '../../src/main/stack/start-stack.js';

/**
 * `.data/stack.json` is a second shell's whole configuration: every setting given to `npm start`
 * must be in it (a personal token for an external platform was missing, so `tenantctl webhooks`
 * failed there), and nothing that is not a setting of ours.
 */
describe('the settings npm start passes on to a second shell', () => {
  it('keeps every configuration variable that was given, and only those', () => {
    const ours = {
      PLATFORM_BASE_URL: 'https://platform.example/api/v1',
      PLATFORM_API_KEY: 'svpk_parent',
      PLATFORM_PERSONAL_TOKEN: 'sv_personal',
      GATEWAY_CODEC_TOKENS: 'codec-token-0123456789abcdef0123456789',
      ROTATION_DEPLOYER: 'project-env',
      LOG_FORMAT: 'json',
    };
    // A blank value is not a setting; PATH and another tool's secret are not ours to copy.
    const given = { ...ours, GATEWAY_API_TOKENS: '   ', PATH: '/usr/bin', AWS_SECRET_ACCESS_KEY: 'not ours' };
    expect(givenSettings(given)).toEqual(ours);
  });
});
