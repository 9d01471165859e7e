import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';

/**
 * A receiver of event deliveries, as a subscriber would write one: every delivery is verified with
 * the Standard Webhooks reference library (npm `standardwebhooks`, `Webhook.verify`: the
 * signature over `${webhook-id}.${webhook-timestamp}.${body}` with any of the space-separated
 * `v1,` signatures, and a timestamp no more than five minutes off). Deliveries that do not verify
 * are answered 401. It shares no code with the sender.
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
  /** The webhook-id of every request whose headers arrived, before any answer (a sender killed after that shows). */
  received: Array<string | undefined>;
  /** Answers this status instead of 2xx while set (verification still runs first). */
  failWith: { status: number; retryAfter?: string } | null;
  delayMs: number;
  close(): Promise<void>;
}

/** Verified with the reference library, as a subscriber would: `Webhook.verify` throws on any mismatch. */
export function verifyStandardWebhook(
  secret: string,
  headers: Record<string, string | string[] | undefined>,
  body: string,
): boolean {
  const one = (name: string) => {
    const value = headers[name];
    return Array.isArray(value) ? value[0] : value;
  };
  const wanted = { 'webhook-id': one('webhook-id'), 'webhook-timestamp': one('webhook-timestamp') };
  const signature = one('webhook-signature');
  if (!wanted['webhook-id'] || !wanted['webhook-timestamp'] || !signature) return false;
  try {
    new Webhook(secret).verify(body, { ...wanted, 'webhook-signature': signature } as Record<string, string>);
    return true;
  } catch (error) {
    if (error instanceof WebhookVerificationError) return false;
    throw error;
  }
}

export async function startEventReceiver(): Promise<EventReceiver> {
  const receiver: Omit<EventReceiver, 'url' | 'close'> = {
    accepted: [],
    requests: [],
    secrets: [],
    failWith: null,
    delayMs: 0,
    received: [],
  };
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    receiver.received.push(request.headers['webhook-id'] as string | undefined);
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
