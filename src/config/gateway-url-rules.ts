/**
 * The rules of the two settings that name the gateway, as the schema words them (tenantctl.ts, gateway.ts) and as
 * tenantctl's gateway commands check them without the schema (src/cli/gateway-access.ts): one wording for both.
 */
export const TENANTCTL_GATEWAY_URL_RULE = 'must be the http(s) URL of the gateway';
export const GATEWAY_PUBLIC_URL_RULE = 'must be the http(s) base URL the platform and clients reach the gateway at';
