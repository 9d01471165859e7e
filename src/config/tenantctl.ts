import { area, httpUrl, optionalText, setting } from './helpers.js';

export const tenantctlSettings = area('tenantctl', {
  TENANTCTL_OPERATOR_TOKEN: setting(optionalText(), {
    description:
      "tenantctl: this operator's token (or `--operator-token`), the only credential its gateway commands need; " +
      'who every audited action is recorded as.',
    secret: true,
    unset: 'no token (only without `OPERATORS`)',
    devStack: "the dev admin's",
  }),
  TENANTCTL_GATEWAY_URL: setting(httpUrl('must be the http(s) URL of the gateway'), {
    description: 'tenantctl: the gateway its operator commands talk to (https, or http to loopback).',
    unset: '`GATEWAY_PUBLIC_URL`',
    devStack: 'its gateway (written to `.data/stack.json`)',
  }),
  TENANTCTL_DEBUG: setting(optionalText(), {
    description: 'tenantctl: `1` prints errors with their stack trace instead of one line per problem.',
    advanced: true,
    unset: 'one line per problem',
  }),
  TENANTCTL_FROM_SOURCE: setting(optionalText(), {
    description: 'tenantctl: `1` runs the sources (tsx) even when `dist/` is fresh ([development.md](development.md)).',
    advanced: true,
    unset: '`dist/` when fresh, else the sources',
  }),
  TENANTCTL_FROM_DIST: setting(optionalText(), {
    description: 'tenantctl: `1` trusts a built `dist/` without checking it is fresh (the container image).',
    advanced: true,
    unset: '`dist/` when fresh, else the sources',
  }),
});
