/**
 * A client of the gateway's authenticated `/v1` API: what tenantctl's operator commands use, and
 * what a TypeScript signup backend may use. It holds one bearer token and the gateway's URL, and
 * nothing else: no database, no master key, no Temporal credential. Answers come in the gateway's
 * envelope (`{ data }` or `{ error: { code, message, fields? } }`); an error is thrown as a
 * GatewayCallError carrying the code, so callers branch on codes, never on message text.
 */
export class GatewayCallError extends Error {
  override name = 'GatewayCallError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly fields: readonly string[] = [],
  ) {
    super(message);
  }
}

export interface GatewayRequest {
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  headers?: Record<string, string>;
  /** Error statuses whose answer carries data (e.g. a dry run's 422 report): returned, not thrown. */
  dataOn?: readonly number[];
}

export interface GatewayAnswer<T> {
  status: number;
  data: T;
  headers: Headers;
}

export interface GatewayClient {
  readonly url: string;
  call<T>(method: string, path: string, request?: GatewayRequest): Promise<GatewayAnswer<T>>;
  get<T>(path: string, query?: GatewayRequest['query']): Promise<T>;
  post<T>(path: string, body?: unknown, headers?: Record<string, string>): Promise<T>;
}

export function createGatewayClient(options: {
  url: string;
  token: string;
  timeoutMs?: number;
  /** A fetch to send every request with; unset: node:http or node:https (see exchange). */
  fetch?: typeof fetch;
}): GatewayClient {
  const base = options.url.replace(/\/+$/, '');
  const send = options.fetch ? fetchExchange(options.fetch) : exchange;
  const call = async <T>(method: string, path: string, request: GatewayRequest = {}): Promise<GatewayAnswer<T>> => {
    const query = new URLSearchParams();
    for (const [name, value] of Object.entries(request.query ?? {}))
      if (value !== undefined) query.set(name, String(value));
    const target = `${base}${path}${query.size > 0 ? `?${query.toString()}` : ''}`;
    let response: Exchanged;
    try {
      response = await send(target, {
        method,
        headers: {
          authorization: `Bearer ${options.token}`,
          ...(request.body !== undefined ? { 'content-type': 'application/json' } : {}),
          ...request.headers,
        },
        ...(request.body !== undefined ? { body: JSON.stringify(request.body) } : {}),
        signal: AbortSignal.timeout(options.timeoutMs ?? 60_000),
      });
    } catch (error) {
      throw new GatewayCallError(
        0,
        'GATEWAY_UNREACHABLE',
        `the gateway at ${base} did not answer (${(error as Error).message}): is it running, and is ` +
          'TENANTCTL_GATEWAY_URL right?',
      );
    }
    const { text } = response;
    let envelope: { data?: T; error?: { code?: string; message?: string; fields?: string[] } } = {};
    try {
      envelope = text ? (JSON.parse(text) as typeof envelope) : {};
    } catch {
      throw new GatewayCallError(response.status, 'BAD_ANSWER', `the gateway answered ${response.status} without JSON`);
    }
    const dataAnswer = request.dataOn?.includes(response.status) && !envelope.error && envelope.data !== undefined;
    if ((!isOk(response.status) && !dataAnswer) || envelope.error) {
      const error = envelope.error ?? {};
      if (response.status === 401)
        throw new GatewayCallError(
          401,
          'UNAUTHORIZED',
          `TENANTCTL_OPERATOR_TOKEN: the gateway at ${base} does not know this token (or none was given)`,
        );
      throw new GatewayCallError(
        response.status,
        error.code ?? `HTTP_${response.status}`,
        error.message ?? `the gateway answered ${response.status}`,
        error.fields ?? [],
      );
    }
    return {
      status: response.status,
      data: envelope.data as T,
      // Made when read: the Headers class is fetch's (it loads undici), which a command rarely needs.
      get headers() {
        return response.headers();
      },
    };
  };
  return {
    url: base,
    call,
    get: async (path, query) => (await call<never>('GET', path, query ? { query } : {})).data,
    post: async (path, body, headers) =>
      (await call<never>('POST', path, { body: body ?? {}, ...(headers ? { headers } : {}) })).data,
  };
}

/** One request and its whole answer: status, body as text, headers (made on demand). */
interface Exchanged {
  status: number;
  text: string;
  headers(): Headers;
}

interface Outgoing {
  method: string;
  headers: Record<string, string>;
  body?: string;
  signal: AbortSignal;
}

const isOk = (status: number) => status >= 200 && status <= 299;

/**
 * A request with node:http (node:https for an https URL), not fetch: Node's fetch loads undici with http2, zlib,
 * web streams and worker threads, about 25 ms of CPU at every tenantctl command that talks to the gateway, which
 * is about half of what `tenantctl --help` costs in all (issue 49). The body is sent with its length, as fetch sends
 * a string body.
 */
async function exchange(target: string, outgoing: Outgoing): Promise<Exchanged> {
  const url = new URL(target);
  const { request } = url.protocol === 'https:' ? await import('node:https') : await import('node:http');
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: outgoing.method,
        headers: {
          ...outgoing.headers,
          ...(outgoing.body !== undefined ? { 'content-length': String(Buffer.byteLength(outgoing.body)) } : {}),
        },
        signal: outgoing.signal,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.once('error', reject);
        res.once('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            text,
            headers: () =>
              new Headers(
                Object.entries(res.headers).flatMap(([name, value]) =>
                  (Array.isArray(value) ? value : value === undefined ? [] : [value]).map((v): [string, string] => [
                    name,
                    v,
                  ]),
                ),
              ),
          }),
        );
      },
    );
    req.once('error', reject);
    req.end(outgoing.body);
  });
}

/** The same exchange through a fetch the caller gave. */
function fetchExchange(doFetch: typeof fetch) {
  return async (target: string, outgoing: Outgoing): Promise<Exchanged> => {
    const response = await doFetch(target, outgoing);
    const text = await response.text();
    return { status: response.status, text, headers: () => response.headers };
  };
}
