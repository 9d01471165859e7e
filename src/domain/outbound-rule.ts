import { isIP } from 'node:net';
import { bareHost, isLoopbackName } from './loopback-host.js';
import { AddressClass, classifyAddress } from './outbound-addresses.js';

/**
 * The rule for every URL the product calls on a caller's or an operator's say (event subscriptions,
 * ROTATION_NOTIFY_URL), checked where the URL is given (a subscription's host name resolved too: resolve.ts)
 * and again where the connection is made (fetch.ts, after DNS): https only; an inward host (loopback,
 * private, link-local, metadata, ...) only when OUTBOUND_ALLOW_HOSTS lists it; plain http only to a
 * listed loopback host (a receiver on the same machine, as the dev stack and the tests run). The URL is read by the
 * WHATWG parser, which
 * is also what fetch uses: 2130706433, 0x7f.1, 0177.0.0.1 and 127.1 all reach this check as 127.0.0.1.
 */
export const ALLOW_HOSTS_VARIABLE = 'OUTBOUND_ALLOW_HOSTS';

/**
 * One allow-list entry: a host as the WHATWG parser writes it (`127.0.0.1`, `[::1]`, `hooks.internal`), any port or
 * one.
 */
export interface AllowedHost {
  host: string;
  port?: number;
}
export type AllowHosts = readonly AllowedHost[];

/**
 * What a URL's host is before any DNS: an inward class, `public` for a public literal, `name` for a name to resolve.
 */
export function hostClassOf(hostname: string): AddressClass | 'name' {
  const host = bareHost(hostname);
  if (isIP(host) || host.includes('%')) return classifyAddress(host);
  if (isLoopbackName(host)) return AddressClass.loopback;
  return 'name';
}

const ENTRY = /^(\[[^\]/]+\]|[^:/[\]@?#\s]+)(?::([0-9]{1,5}))?$/;

/** Parses OUTBOUND_ALLOW_HOSTS (comma-separated host[:port]); every bad entry is one problem. */
export function parseAllowHosts(value: string | undefined): { hosts: AllowedHost[]; problems: string[] } {
  const hosts: AllowedHost[] = [];
  const problems: string[] = [];
  for (const entry of (value ?? '').split(',').map((e) => e.trim())) {
    if (entry === '') continue;
    const match = ENTRY.exec(entry);
    let host: string | undefined;
    try {
      host = match ? new URL(`http://${match[1]}`).hostname : undefined;
    } catch {
      host = undefined;
    }
    const port = match?.[2] === undefined ? undefined : Number(match[2]);
    if (!host || (port !== undefined && (port < 1 || port > 65535))) {
      problems.push(
        `entry ${JSON.stringify(entry.slice(0, 80))} is not host[:port] (e.g. 127.0.0.1:9000, [::1], hooks.internal)`,
      );
      continue;
    }
    hosts.push({ host: bareHost(host), ...(port === undefined ? {} : { port }) });
  }
  return { hosts, problems };
}

function defaultPort(protocol: string): number {
  return protocol === 'http:' ? 80 : 443;
}

/** True when the allow-list names this host (and this port, when the entry has one). */
export function isAllowedHost(allow: AllowHosts, hostname: string, port: number): boolean {
  const host = bareHost(hostname);
  return allow.some((entry) => entry.host === host && (entry.port === undefined || entry.port === port));
}

/**
 * Why this URL may not be called, or undefined when it may (as far as can be told before DNS: a name
 * that resolves inward is refused by outboundUrlProblemAfterDns where it is registered, and when the
 * connection is made). One sentence naming the rule.
 */
export function outboundUrlProblem(value: string, allow: AllowHosts): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be an absolute https URL';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'must be an absolute https URL';
  if (url.username || url.password) return 'must not carry credentials';
  const port = url.port === '' ? defaultPort(url.protocol) : Number(url.port);
  const allowed = isAllowedHost(allow, url.hostname, port);
  const hostClass = hostClassOf(url.hostname);
  if (url.protocol === 'http:') {
    if (hostClass === AddressClass.loopback && allowed) return undefined;
    return `must be https (plain http only to a loopback host listed in ${ALLOW_HOSTS_VARIABLE})`;
  }
  if (hostClass === 'name' || hostClass === AddressClass.public || allowed) return undefined;
  return (
    `must not point at an inward address (${hostClass}): only public hosts, unless listed in ` +
    `${ALLOW_HOSTS_VARIABLE}`
  );
}

/** The outbound URLs of the configuration, checked against the rule when the configuration is loaded. */
export function outboundConfigProblems(config: {
  [ALLOW_HOSTS_VARIABLE]: AllowHosts;
  ROTATION_NOTIFY_URL?: string | undefined;
}): string[] {
  const problem = config.ROTATION_NOTIFY_URL
    ? outboundUrlProblem(config.ROTATION_NOTIFY_URL, config[ALLOW_HOSTS_VARIABLE])
    : undefined;
  return problem ? [`ROTATION_NOTIFY_URL: ${problem}`] : [];
}

/** https, or plain http to a loopback host only (the platform key travels with every request). */
export function isHttpsOrLoopback(value: string): boolean {
  try {
    const url = new URL(value);
    return (
      url.protocol === 'https:' || (url.protocol === 'http:' && hostClassOf(url.hostname) === AddressClass.loopback)
    );
  } catch {
    return false;
  }
}
