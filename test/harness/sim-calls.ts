/**
 * Small plain-fetch helpers for tests that drive the simulator over real HTTP. They deliberately know nothing of
 * the typed platform client: simulator tests check the wire behaviour directly.
 */
import type { RunningSimulator } from '../../src/sim/index.js';
import { DEFAULT_PERSONAL_TOKEN, DEFAULT_PLATFORM_KEY } from '../../src/sim/seed.js';

// Tests inspect arbitrary JSON shapes; a loose type keeps the assertions readable.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type LooseJson = any;

export interface CallOptions {
  token?: string | null;
  body?: unknown;
  /** Sent verbatim instead of `body`. */
  rawBody?: string;
  idempotencyKey?: string;
  subaccount?: string;
  headers?: Record<string, string>;
}

export interface CallResult {
  status: number;
  headers: Headers;
  text: string;
  body: LooseJson;
}

export async function apiCall(
  sim: Pick<RunningSimulator, 'apiBase'>,
  method: string,
  path: string,
  options: CallOptions = {},
): Promise<CallResult> {
  const headers: Record<string, string> = { ...options.headers };
  const token = options.token === undefined ? DEFAULT_PLATFORM_KEY : options.token;
  if (token !== null) headers.Authorization = `Bearer ${token}`;
  if (options.idempotencyKey !== undefined) headers['Idempotency-Key'] = options.idempotencyKey;
  if (options.subaccount !== undefined) headers['X-Service-Subaccount'] = options.subaccount;
  let body: string | undefined = options.rawBody;
  if (body === undefined && options.body !== undefined) body = JSON.stringify(options.body);
  if (body !== undefined && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) {
    headers['Content-Type'] = 'application/json';
  }
  const response = await fetch(`${sim.apiBase}${path}`, { method, headers, body });
  return toResult(response);
}

export async function adminCall(
  sim: Pick<RunningSimulator, 'url'>,
  method: string,
  path: string,
  body?: unknown,
): Promise<CallResult> {
  const init: RequestInit = { method };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers = { 'Content-Type': 'application/json' };
  }
  return toResult(await fetch(`${sim.url}${path}`, init));
}

async function toResult(response: Response): Promise<CallResult> {
  const text = await response.text();
  return { status: response.status, headers: response.headers, text, body: parseOrNull(text) };
}

function parseOrNull(text: string): LooseJson {
  try {
    return text === '' ? null : JSON.parse(text);
  } catch {
    return null;
  }
}

let counter = 0;
/** A key unique within the test process, readable in failure output. */
export function uniqueKey(label: string): string {
  counter += 1;
  return `${label}-${process.pid}-${counter}-${Date.now()}`;
}

export async function createTenant(
  sim: RunningSimulator,
  options: { token?: string; name?: string; externalRef?: string } = {},
): Promise<string> {
  const res = await apiCall(sim, 'POST', '/subaccounts/create', {
    token: options.token ?? DEFAULT_PLATFORM_KEY,
    idempotencyKey: uniqueKey('create'),
    body: { name: options.name ?? 'Tenant', externalRef: options.externalRef ?? uniqueKey('ref') },
  });
  if (res.status !== 201) throw new Error(`createTenant failed: ${res.status} ${res.text}`);
  return res.body.data.id as string;
}

export async function createTenantKey(
  sim: RunningSimulator,
  subaccountId: string,
  name = 'k',
): Promise<{ id: string; token: string }> {
  const res = await apiCall(sim, 'POST', `/subaccounts/${subaccountId}/api-keys/create`, { body: { name } });
  if (res.status !== 201) throw new Error(`createTenantKey failed: ${res.status} ${res.text}`);
  return { id: res.body.data.id as string, token: res.body.data.token as string };
}

export async function createProject(
  sim: RunningSimulator,
  auth: { token: string; subaccount?: string },
  name = 'web',
): Promise<string> {
  const res = await apiCall(sim, 'POST', '/projects/create', { ...auth, body: { name, region: 'eu-central' } });
  if (res.status !== 201) throw new Error(`createProject failed: ${res.status} ${res.text}`);
  return res.body.data.id as string;
}

export { DEFAULT_PERSONAL_TOKEN, DEFAULT_PLATFORM_KEY };
