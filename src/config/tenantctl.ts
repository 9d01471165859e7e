import { TENANTCTL_GATEWAY_URL_RULE } from './gateway-url-rules.js';
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
  TENANTCTL_GATEWAY_URL: setting(httpUrl(TENANTCTL_GATEWAY_URL_RULE), {
    description: 'tenantctl: the gateway its operator commands talk to (https, or http to loopback).',
    unset: '`GATEWAY_PUBLIC_URL`',
    devStack: 'its gateway (written to `.data/stack.json`)',
  }),
});
