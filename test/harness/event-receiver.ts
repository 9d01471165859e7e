import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A receiver of event deliveries, as a subscriber would write one. Its verification follows the
 * Standard Webhooks specification step by step and shares no code with the sender (the npm
 * `standardwebhooks` package is not installed here; this is what its `Webhook.verify` does): strip
 * `whsec_`, base64-decode the key, HMAC-SHA256 over `${webhook-id}.${webhook-timestamp}.${body}`,
 * base64, compare in constant time with each space-separated `v1,<sig>` of `webhook-signature`,
 * refuse a timestamp more than five minutes off. Deliveries that do not verify are answered 401.
 */
export interface ReceivedEvent {
  webhookId: string;
  timestamp: number;
  body: {
    id: string;
    type: string;
    timestamp: string;
    tenant: string | null;
    sequence: string;
    data: Record<string, unknown>;
  };
  raw: string;
  signatures: number;
  /** Which of the receiver's secrets verified it (index into secrets). */
  verifiedWith: number;
  at: number;
}

export interface EventReceiver {
  url: string;
  /** Verified deliveries answered 2xx, in arrival order (duplicates included). */
  accepted: ReceivedEvent[];
  /** Every request, with the status it got. */
  requests: Array<{ webhookId: string | undefined; status: number; at: number }>;
  /** Secrets the receiver accepts (set after subscribing; several during a rotation). */
  secrets: string[];
  /** Requests seen but not answered yet. */
  inFlight: number;
  /** Answers this status instead of 2xx while set (verification still runs first). */
  failWith: { status: number; retryAfter?: string } | null;
  delayMs: number;
  close(): Promise<void>;
}

export function verifyStandardWebhook(
  secret: string,
  headers: Record<string, string | string[] | undefined>,
  body: string,
): boolean {
  const one = (name: string) => {
    const value = headers[name];
    return Array.isArray(value) ? value[0] : value;
  };
  const id = one('webhook-id');
  const timestamp = one('webhook-timestamp');
  const signature = one('webhook-signature');
  if (!id || !timestamp || !signature) return false;
  const ts = Number.parseInt(timestamp, 10);
  if (!Number.isFinite(ts) || Math.abs(Math.floor(Date.now() / 1000) - ts) > 5 * 60) return false;
  const key = Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest();
  return signature.split(' ').some((versioned) => {
    const [version, value] = versioned.split(',');
    if (version !== 'v1' || !value) return false;
    const given = Buffer.from(value, 'base64');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}

export async function startEventReceiver(): Promise<EventReceiver> {
  const receiver: Omit<EventReceiver, 'url' | 'close'> = {
    accepted: [],
    requests: [],
    secrets: [],
    failWith: null,
    delayMs: 0,
    inFlight: 0,
  };
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    receiver.inFlight += 1;
    response.on('close', () => (receiver.inFlight -= 1));
    request.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const answer = (status: number, headers: Record<string, string> = {}) => {
        receiver.requests.push({
          webhookId: request.headers['webhook-id'] as string | undefined,
          status,
          at: Date.now(),
        });
        response.writeHead(status, headers).end();
      };
      setTimeout(() => {
        const verifiedWith = receiver.secrets.findIndex((s) => verifyStandardWebhook(s, request.headers, raw));
        if (verifiedWith < 0) return answer(401);
        if (receiver.failWith)
          return answer(
            receiver.failWith.status,
            receiver.failWith.retryAfter ? { 'retry-after': receiver.failWith.retryAfter } : {},
          );
        receiver.accepted.push({
          webhookId: request.headers['webhook-id'] as string,
          timestamp: Number(request.headers['webhook-timestamp']),
          body: JSON.parse(raw) as ReceivedEvent['body'],
          raw,
          signatures: String(request.headers['webhook-signature']).split(' ').length,
          verifiedWith,
          at: Date.now(),
        });
        answer(204);
      }, receiver.delayMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(receiver, {
    url: `http://127.0.0.1:${port}/hooks`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}

/** Waits until `check` passes (polling), or fails with what it last saw. */
export async function eventually<T>(check: () => Promise<T> | T, timeoutMs = 30_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`${what} not met in ${timeoutMs} ms: ${String(last)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
