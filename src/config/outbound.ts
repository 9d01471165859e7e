import { z } from 'zod';
import { ALLOW_HOSTS_VARIABLE, parseAllowHosts, type AllowHosts } from '../domain/outbound-rule.js';
import { area, setting } from './helpers.js';

export const outboundSettings = area('outbound', {
  [ALLOW_HOSTS_VARIABLE]: setting(
    z
      .string()
      .optional()
      .transform((value, ctx): AllowHosts => {
        const { hosts, problems } = parseAllowHosts(value);
        for (const problem of problems) ctx.addIssue({ code: 'custom', message: problem });
        return hosts;
      }),
    {
      description:
        '`host[:port]` list (comma-separated) that event deliveries and rotation notices may reach although ' +
        'inward (loopback, private, link-local, metadata, …); plain http only to a listed loopback host. Otherwise ' +
        'every such URL must be https to a public address, checked when given and again at connect, after DNS.',
      unset: 'none',
      devStack: 'its own receivers',
    },
  ),
} as const);
