import { z } from 'zod';
import { DEFAULTS } from './defaults.js';
import { GATEWAY_PUBLIC_URL_RULE } from './gateway-url-rules.js';
import { area, httpUrl, list, port, setting, text, wholeNumber } from './helpers.js';

export const MIN_TOKEN_LENGTH = 32;
const token = z.string().min(MIN_TOKEN_LENGTH, `each token must be at least ${MIN_TOKEN_LENGTH} characters`);

export const gatewaySettings = area('gateway', {
  GATEWAY_PORT: setting(port(DEFAULTS.GATEWAY_PORT), {
    description: 'Port the gateway listens on (`0` picks a free one).',
  }),
  GATEWAY_HOST: setting(text(DEFAULTS.GATEWAY_HOST), {
    description: 'Interface the gateway binds (`0.0.0.0` in a container).',
  }),
  GATEWAY_OPS_PORT: setting(wholeNumber(0, 65535), {
    description:
      'A second listener for `/readyz` and `/metrics`, which the public port then no longer serves (`/healthz` ' +
      'stays on both); `0` picks a free port.',
    unset: 'all on `GATEWAY_PORT`',
  }),
  GATEWAY_OPS_HOST: setting(text(DEFAULTS.GATEWAY_OPS_HOST), {
    description: 'Interface of the ops listener (keep it off the public network).',
  }),
  GATEWAY_API_TOKENS: setting(list(token), {
    description:
      `Bearer tokens of signup backends for \`/v1\`, comma-separated, at least ${MIN_TOKEN_LENGTH} characters ` +
      'each (several, so one can be rotated at a time).',
    secret: true,
    unset: 'no signup-backend token: `/v1` answers only callers listed in `OPERATORS`',
    devStack: 'a dev token in `.data/dev-gateway-token`',
  }),
  GATEWAY_CODEC_TOKENS: setting(list(token), {
    description: 'Operator bearer tokens for `/codec/*`, comma-separated.',
    secret: true,
    unset: 'loopback clients only (the local Web UI)',
  }),
  GATEWAY_CODEC_CORS_ORIGINS: setting(
    list(z.url({ protocol: /^https?$/, error: 'each origin must be an http(s) URL' })),
    {
      description:
        'Web UI origins (`scheme://host:port`, as the browser shows them) allowed to call the codec endpoint from ' +
        'a browser, comma-separated (the CLI needs no CORS).',
      unset: 'none',
      devStack: "its Web UI's real origin is added",
    },
  ),
  GATEWAY_CODEC_HOSTS: setting(
    list(
      z.string().regex(/^[A-Za-z0-9.-]+$|^\[[0-9A-Fa-f:.]+\]$/, 'each must be a host name or address, without port'),
    ),
    {
      description:
        'Extra host names (the `Host` header) the codec endpoint answers to, comma-separated; loopback names, ' +
        "`GATEWAY_HOST` and `GATEWAY_PUBLIC_URL`'s host always pass (a DNS-rebinding defence).",
      advanced: true,
      unset: 'none',
    },
  ),
  GATEWAY_PUBLIC_URL: setting(httpUrl(GATEWAY_PUBLIC_URL_RULE), {
    description:
      'Base URL the platform and clients reach the gateway at: webhook receiver URLs and status URLs are built ' +
      'from it.',
    unset: 'no public URL',
    devStack: 'the local gateway',
  }),
  GATEWAY_WEBHOOK_BODY_LIMIT: setting(wholeNumber(1024, 10 * 1024 * 1024, DEFAULTS.GATEWAY_WEBHOOK_BODY_LIMIT), {
    description: 'Largest registry delivery body accepted, in bytes.',
    advanced: true,
  }),
});

/** The gateway's variables as the schema gives them. */
export interface GatewayEnv {
  GATEWAY_API_TOKENS: string[];
  GATEWAY_CODEC_TOKENS: string[];
  GATEWAY_CODEC_CORS_ORIGINS: string[];
  GATEWAY_CODEC_HOSTS: string[];
  GATEWAY_HOST: string;
  GATEWAY_PUBLIC_URL?: string | undefined;
  GATEWAY_WEBHOOK_BODY_LIMIT: number;
  GATEWAY_WEBHOOK_SECRET_GRACE_SECONDS: number;
  GATEWAY_WEBHOOK_TOLERANCE_SECONDS: number;
  GATEWAY_WEBHOOK_INBOX_RETENTION_DAYS: number;
}
