import { createGatewayClient, type GatewayClient } from '../api-client/gateway-client.js';
import { ConfigError } from '../config/config-error.js';
import { GATEWAY_PUBLIC_URL_RULE, TENANTCTL_GATEWAY_URL_RULE } from '../config/gateway-url-rules.js';
import { nearestKnown } from '../config/variable-names.js';
import { isPlainLoopbackHost } from '../domain/loopback-host.js';
import { printErrorLine } from './output.js';
import { withStackDefaults } from './stack-env.js';

/**
 * The gateway's /v1 API as this operator (TENANTCTL_GATEWAY_URL, else GATEWAY_PUBLIC_URL; the token of
 * --operator-token or TENANTCTL_OPERATOR_TOKEN): the one way operator commands reach the system. The server decides
 * who may do what. A gateway command is a client: it reads these three settings (from the environment, over the dev
 * stack's stack.json) and no other, so it loads neither the configuration schema (zod) nor pg nor Temporal (issue
 * 49: `tenantctl status` started in 4–5 times the time of `tenantctl --help`). Each is checked by the schema's own
 * rule, in its words (test/unit/cli-gateway-settings.test.ts holds the two to the same answers), and a set
 * TENANTCTL_ variable that is none of tenantctl's is reported as the schema's check reports it (a misspelt
 * TENANTCTL_GATEWAY_URL would otherwise send the command to GATEWAY_PUBLIC_URL's gateway).
 */
export async function openGateway(
  tokenFlag: string | undefined,
  environment: Record<string, string | undefined> = process.env,
  warn: (message: string) => void = (message) => printErrorLine(`warning: ${message}`),
): Promise<GatewayClient> {
  const env = withStackDefaults(environment);
  for (const name of Object.keys(env).sort())
    if (name.startsWith('TENANTCTL_') && env[name] !== undefined && !TENANTCTL_VARIABLES.includes(name))
      warn(`unknown variable ${name} — did you mean ${nearestKnown(name, TENANTCTL_VARIABLES)}?`);
  const invalid: string[] = [];
  const gatewayUrl = httpUrlSetting(env, 'TENANTCTL_GATEWAY_URL', TENANTCTL_GATEWAY_URL_RULE, invalid);
  const publicUrl = httpUrlSetting(env, 'GATEWAY_PUBLIC_URL', GATEWAY_PUBLIC_URL_RULE, invalid);
  if (invalid.length > 0) throw new ConfigError(invalid);
  const url = gatewayUrl ?? publicUrl;
  const token = tokenFlag ?? textSetting(env.TENANTCTL_OPERATOR_TOKEN);
  const problems: string[] = [];
  if (!url)
    problems.push('TENANTCTL_GATEWAY_URL: is not set (and no dev stack is running: start one with `npm start`)');
  else if (!(await tokenMayTravel(url)))
    problems.push(
      'TENANTCTL_GATEWAY_URL: must be https (plain http only to a loopback gateway): the token would travel in ' +
        'clear',
    );
  if (!token)
    problems.push('TENANTCTL_OPERATOR_TOKEN: is required (or --operator-token): the gateway decides who you are');
  if (problems.length > 0) throw new ConfigError(problems);
  return createGatewayClient({ url: url!, token: token! });
}

/**
 * Whether the token may go to this URL: https, or plain http to a loopback host. The usual loopback hosts (the dev
 * stack's 127.0.0.1, localhost, [::1]) are told apart without loading the address classifier; any other plain-http
 * host is judged by it (outbound-rule.ts), as the configuration's own rule judges it.
 */
async function tokenMayTravel(value: string): Promise<boolean> {
  const url = new URL(value);
  if (url.protocol === 'https:' || (url.protocol === 'http:' && isPlainLoopbackHost(url.hostname))) return true;
  const { isHttpsOrLoopback } = await import('../domain/outbound-rule.js');
  return isHttpsOrLoopback(value);
}

/**
 * Every TENANTCTL_ variable of the schema: the tenantctl area's and the launcher's (development.ts). Held to the
 * schema by test/unit/cli-gateway-settings.test.ts.
 */
export const TENANTCTL_VARIABLES: readonly string[] = [
  'TENANTCTL_DEBUG',
  'TENANTCTL_FROM_DIST',
  'TENANTCTL_FROM_SOURCE',
  'TENANTCTL_GATEWAY_URL',
  'TENANTCTL_OPERATOR_TOKEN',
];

/** As the schema reads optional text (helpers.ts optionalText): blank is unset. */
function textSetting(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}

/** As the schema reads an http(s) URL (helpers.ts httpUrl: blank is unset; trimmed; the protocol http or https). */
function httpUrlSetting(
  env: Record<string, string | undefined>,
  name: string,
  rule: string,
  problems: string[],
): string | undefined {
  const value = textSetting(env[name])?.trim();
  if (value === undefined) return undefined;
  if (URL.canParse(value) && /^https?:$/.test(new URL(value).protocol)) return value;
  problems.push(`${name}: ${rule}`);
  return undefined;
}
