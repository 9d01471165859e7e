import { lookup } from 'node:dns/promises';
import { AddressClass, classifyAddress } from '../../domain/outbound-addresses.js';
import {
  ALLOW_HOSTS_VARIABLE,
  hostClassOf,
  isAllowedHost,
  outboundUrlProblem,
  type AllowHosts,
} from '../../domain/outbound-rule.js';

/**
 * The outbound rule where a URL is given, after DNS: the rule itself (rule.ts), then a host name is resolved and
 * refused when any address it resolves to is inward and the name is not in OUTBOUND_ALLOW_HOSTS. What an answer
 * says now is no promise for later (a name can be rebound), so the connection is checked again where it is made
 * (fetch.ts); a name that does not resolve now (or not within the timeout) is taken and meets that check.
 */
export type Resolver = (hostname: string) => Promise<Array<{ address: string; family: number }>>;

/** The system resolver, every address (A and AAAA), in the order it gives them. */
export const systemResolver: Resolver = (hostname) => lookup(hostname, { all: true, verbatim: true });

export interface RegistrationCheckOptions {
  /** DNS (default: the system resolver); tests inject one. */
  resolve?: Resolver | undefined;
  /** How long to wait for DNS (default 3 s). */
  timeoutMs?: number;
}

/** Why this URL may not be registered, or undefined when it may: one sentence naming the rule. */
export async function outboundUrlProblemAfterDns(
  value: string,
  allow: AllowHosts,
  options: RegistrationCheckOptions = {},
): Promise<string | undefined> {
  const problem = outboundUrlProblem(value, allow);
  if (problem) return problem;
  const url = new URL(value);
  const port = url.port === '' ? (url.protocol === 'http:' ? 80 : 443) : Number(url.port);
  // Literals and loopback names were judged by the rule; a listed name may resolve anywhere.
  if (hostClassOf(url.hostname) !== 'name' || isAllowedHost(allow, url.hostname, port)) return undefined;
  const addresses = await resolvedWithin(options.resolve ?? systemResolver, url.hostname, options.timeoutMs ?? 3_000);
  const inward = addresses.map(classifyAddress).find((addressClass) => addressClass !== AddressClass.public);
  if (inward === undefined) return undefined;
  return (
    `must not point at an inward address (${url.hostname} resolves to a ${inward} address): only public hosts, ` +
    `unless listed in ${ALLOW_HOSTS_VARIABLE}`
  );
}

/** The addresses the name resolves to; none when it does not resolve, or not in time. */
async function resolvedWithin(resolve: Resolver, hostname: string, timeoutMs: number): Promise<string[]> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<string[]>((done) => {
    timer = setTimeout(() => done([]), timeoutMs);
    timer.unref();
  });
  const answer = resolve(hostname).then(
    (addresses) => addresses.map((a) => a.address),
    () => [],
  );
  try {
    return await Promise.race([answer, late]);
  } finally {
    clearTimeout(timer);
  }
}
