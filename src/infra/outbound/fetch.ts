import { isIP } from 'node:net';
import { Agent, buildConnector, fetch as undiciFetch } from 'undici';
import { AddressClass, classifyAddress } from '../../domain/outbound-addresses.js';
import {
  ALLOW_HOSTS_VARIABLE,
  hostClassOf,
  isAllowedHost,
  outboundUrlProblem,
  type AllowHosts,
} from '../../domain/outbound-rule.js';
import { systemResolver, type Resolver } from './resolve.js';

/**
 * The one way the product POSTs to a URL someone gave it (event deliveries, rotation notices). The
 * URL rule (rule.ts) is checked first; the real check is in the connector, where the connection is
 * made: the host is resolved here, every address it resolves to is classified, and the socket is
 * opened to the address that was checked (TLS still verifies the certificate against the name). So a
 * name that resolves inward, a DNS answer that changes between the subscribe and the delivery
 * (rebinding), or a redirect cannot reach loopback, private or metadata addresses; redirects are not
 * followed anyway (a 3xx is the answer).
 */
export class OutboundRefusedError extends Error {
  override name = 'OutboundRefusedError';
  readonly code = 'OUTBOUND_REFUSED';
}

export type { Resolver };

export interface OutboundOptions {
  /** OUTBOUND_ALLOW_HOSTS: hosts that may be reached although inward. */
  allowHosts: AllowHosts;
  /** DNS (default: the system resolver, every address); tests inject one. */
  resolve?: Resolver;
  /** Connection timeout (default 10 s); the caller's signal bounds the whole request. */
  connectTimeoutMs?: number;
}

export interface OutboundRequest {
  method: 'POST';
  headers: Record<string, string>;
  body: string;
  signal?: AbortSignal;
}

/** What callers read of an answer (a fetch Response has all of it). */
export interface OutboundResponse {
  status: number;
  headers: { get(name: string): string | null };
  body: { cancel(): Promise<void> } | null;
}

export type OutboundFetch = (url: string, init: OutboundRequest) => Promise<OutboundResponse>;

/**
 * The address to connect to for this host, or an OutboundRefusedError saying why not. Every address
 * the name resolves to must pass (a mixed answer is refused), and plain http only ever reaches loopback.
 */
export async function connectAddressOf(
  target: { hostname: string; port: number; protocol: string },
  allow: AllowHosts,
  resolve: Resolver = systemResolver,
): Promise<string> {
  const host = target.hostname.replace(/^\[(.*)\]$/, '$1');
  const allowed = isAllowedHost(allow, target.hostname, target.port);
  const literal = isIP(host) !== 0;
  const hostClass = hostClassOf(target.hostname);
  if (!literal && hostClass !== 'name' && hostClass !== AddressClass.loopback)
    throw new OutboundRefusedError(`${target.hostname}: ${hostClass} host`);
  let addresses: string[];
  try {
    addresses = literal ? [host] : (await resolve(host)).map((a) => a.address);
  } catch (error) {
    throw new OutboundRefusedError(`${target.hostname}: not resolved`, { cause: error });
  }
  if (addresses.length === 0) throw new OutboundRefusedError(`${target.hostname}: no address`);
  for (const address of addresses) {
    const addressClass = classifyAddress(address);
    if (target.protocol === 'http:' && !(allowed && addressClass === AddressClass.loopback))
      throw new OutboundRefusedError(
        `${target.hostname} (${address}): plain http only to a loopback host listed in ${ALLOW_HOSTS_VARIABLE}`,
      );
    if (addressClass !== AddressClass.public && !allowed)
      throw new OutboundRefusedError(`${target.hostname} (${address}): ${addressClass} address`);
  }
  // One address is connected to (the one checked); IPv4 first, as a host without IPv6 routes cannot try the next.
  return addresses.find((address) => isIP(address) === 4) ?? addresses[0]!;
}

/** An undici Agent whose every connection goes through connectAddressOf. */
export function createOutboundAgent(options: OutboundOptions): Agent {
  const base = buildConnector({ timeout: options.connectTimeoutMs ?? 10_000 });
  const connect: buildConnector.connector = (target, callback) => {
    const port = target.port === '' ? (target.protocol === 'http:' ? 80 : 443) : Number(target.port);
    connectAddressOf(
      { hostname: target.hostname, port, protocol: target.protocol },
      options.allowHosts,
      options.resolve,
    )
      .then((address) => base({ ...target, hostname: address }, callback))
      .catch((error: unknown) => callback(error instanceof Error ? error : new Error(String(error)), null));
  };
  return new Agent({ connect });
}

/** A POST that checks the URL rule, then connects only where connectAddressOf allows, and never follows a redirect. */
export function createOutboundFetch(options: OutboundOptions): OutboundFetch {
  const dispatcher = createOutboundAgent(options);
  return async (url, init) => {
    const problem = outboundUrlProblem(url, options.allowHosts);
    if (problem) throw new OutboundRefusedError(`url ${problem}`);
    return undiciFetch(url, { ...init, redirect: 'manual', dispatcher });
  };
}

/** The detail of a failed outbound request, for a debug log line only (callers are told less: see events). */
export function outboundFailureDetail(error: unknown): { name: string; code?: string; message: string } {
  const cause = error instanceof Error && error.cause instanceof Error ? error.cause : error;
  if (!(cause instanceof Error)) return { name: 'error', message: String(cause) };
  const code = (cause as { code?: unknown }).code;
  return { name: cause.name, ...(typeof code === 'string' ? { code } : {}), message: cause.message };
}
