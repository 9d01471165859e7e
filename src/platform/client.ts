import { credentialFromOption, isPlatformKeyProvider, type PlatformKeyProvider } from './auth.js';
import type { ClientContext } from './core.js';
import { PlatformDefiniteError, PlatformErrorCode, PlatformInputError } from './errors.js';
import { keyMethods } from './keys.js';
import { DEFAULT_PATHS, type PathOverrides } from './paths.js';
import { defaultEnvVarsBody, projectMethods, type DeleteMethod } from './projects.js';
import type { EnvVars } from './records.js';
import { SecretToken } from './secret-token.js';
import { subaccountMethods } from './subaccounts.js';
import { createTransport, type Transport } from './transport.js';
import type { PlatformClient } from './types.js';
import { walletMethods } from './wallet.js';
import { webhookMethods } from './webhooks.js';
import { DEFAULTS } from '../config/defaults.js';

export interface PlatformClientOptions {
  /** The platform's base address including the version prefix, e.g. `https://platform.example/api/v1`. */
  baseUrl: string;
  /**
   * Parent platform key (`svpk_`): control-plane calls and `{ kind: 'platform' }` resource calls. A provider (our
   * sealed records) is read on every call, and asked once for a fresh credential when the platform answers 401.
   */
  platformKey?: SecretToken | string | PlatformKeyProvider;
  /**
   * Personal access token (`sv_`): registry webhooks, `{ kind: 'personal' }`, and control plane without a platform key.
   */
  personalToken?: SecretToken | string;
  /** Per-request deadline, covering the response body too. Default 10 s. */
  timeoutMs?: number;
  /**
   * Upper bound on pages fetched by one list call, a guard against a platform inventing cursors forever (a repeated
   * cursor is caught anyway). Default 100,000: a platform that pages two at a time and ignores `limit` (issue 15)
   * needs 5,000 pages for 10,000 tenants, so a small cap would fail a large fleet's lists.
   */
  maxPages?: number;
  /** Sent as `limit=` on list calls when given. */
  pageSize?: number;
  /**
   * Awaited before every request is sent (retries included): the process's share of the platform's rate
   * limit (src/db/request-pacer.ts). Absent: requests go at once.
   */
  pace?: () => Promise<void>;
  fetch?: typeof fetch;
  userAgent?: string;
  /** Overrides for paths the contract does not show (see paths.ts). */
  paths?: PathOverrides;
  projectDeleteMethod?: DeleteMethod;
  envVarsBody?: (vars: EnvVars) => unknown;
}

export const DEFAULT_TIMEOUT_MS = DEFAULTS.PLATFORM_TIMEOUT_MS;
export const DEFAULT_MAX_PAGES = 100_000;
const DEFAULT_USER_AGENT = 'tenant-orchestrator-platform-client/0.1';

function positiveInteger(value: number | undefined, fallback: number, option: string): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value <= 0) {
    throw new PlatformInputError({
      code: PlatformErrorCode.INVALID_INPUT,
      message: `createPlatformClient: ${option} must be a positive integer`,
    });
  }
  return value;
}

function baseUrlOf(value: string): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch (cause) {
    throw new PlatformInputError({
      code: PlatformErrorCode.INVALID_INPUT,
      message: 'createPlatformClient: baseUrl is not a URL',
      cause,
    });
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new PlatformInputError({
      code: PlatformErrorCode.INVALID_INPUT,
      message: 'createPlatformClient: baseUrl must be http(s)',
    });
  }
  if (url.search || url.hash || url.username || url.password) {
    throw new PlatformInputError({
      code: PlatformErrorCode.INVALID_INPUT,
      message: 'createPlatformClient: baseUrl must not carry a query, fragment or credentials',
    });
  }
  return url;
}

/**
 * A 401 to a call made with the provider's platform key: the key may have been rotated under us (a process that
 * missed the switch). Ask the records once and repeat the call with the fresh key. Safe for mutations too: a 401
 * is refused before anything happens, and the repeat carries the same idempotency key.
 */
function retryOnceAfterUnauthorized(send: Transport, provider: PlatformKeyProvider): Transport {
  return async (request) => {
    try {
      return await send(request);
    } catch (error) {
      if (!(error instanceof PlatformDefiniteError) || error.code !== PlatformErrorCode.UNAUTHENTICATED) throw error;
      const used = /^Bearer (svpk_\S+)$/.exec(request.headers.Authorization ?? '')?.[1];
      if (used === undefined) throw error;
      const fresh = await provider.refreshAfterUnauthorized(SecretToken.from(used));
      if (fresh === undefined || fresh.reveal() === used) throw error;
      return send({ ...request, headers: { ...request.headers, Authorization: `Bearer ${fresh.reveal()}` } });
    }
  };
}

export function createPlatformClient(options: PlatformClientOptions): PlatformClient {
  const provider = isPlatformKeyProvider(options.platformKey) ? options.platformKey : undefined;
  const fixedKey = provider
    ? undefined
    : credentialFromOption(options.platformKey as SecretToken | string | undefined, 'svpk_', 'platformKey');
  const send = createTransport({
    baseUrl: baseUrlOf(options.baseUrl),
    fetch: options.fetch ?? globalThis.fetch,
    timeoutMs: positiveInteger(options.timeoutMs, DEFAULT_TIMEOUT_MS, 'timeoutMs'),
    userAgent: options.userAgent ?? DEFAULT_USER_AGENT,
  });
  const pace = options.pace;
  const pacedSend: typeof send = pace ? async (request) => (await pace(), send(request)) : send;
  const ctx: ClientContext = {
    send: provider ? retryOnceAfterUnauthorized(pacedSend, provider) : pacedSend,
    credentials: {
      get platformKey() {
        return provider ? provider.current() : fixedKey;
      },
      personalToken: credentialFromOption(options.personalToken, 'sv_', 'personalToken'),
    },
    paths: { ...DEFAULT_PATHS, ...options.paths },
    maxPages: positiveInteger(options.maxPages, DEFAULT_MAX_PAGES, 'maxPages'),
    pageSize: options.pageSize === undefined ? undefined : positiveInteger(options.pageSize, 0, 'pageSize'),
  };
  return {
    ...subaccountMethods(ctx),
    ...walletMethods(ctx),
    ...keyMethods(ctx),
    ...projectMethods(ctx, {
      projectDeleteMethod: options.projectDeleteMethod ?? 'DELETE',
      envVarsBody: options.envVarsBody ?? defaultEnvVarsBody,
    }),
    ...webhookMethods(ctx),
  };
}
