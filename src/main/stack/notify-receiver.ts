import { randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { signNotice } from '../../../activities/keys/deployers/notify.js';

/**
 * A parent's endpoint for the `notify` deployer, as small as one can be: it verifies
 * `X-Tpo-Signature` (HMAC-SHA256 over the exact body, compared in constant time), answers 204 to a
 * valid notice and 401 to any other, and keeps what it got. The dev stack runs one so rotation works
 * out of the box; tests and the chaos run use it to check every notice. A notice carries ids and a
 * fingerprint, never a token, and `onNotice` is handed only those fields.
 */
export interface ReceivedNotice {
  event: string;
  deliveryId: string;
  body: string;
  signatureValid: boolean;
  status: number;
}

/** The fields of a notice worth recording (never the body as a whole: it is not ours to log). */
export interface NoticeSummary {
  receivedAt: string;
  event: string;
  deliveryId: string;
  signatureValid: boolean;
  externalRef?: unknown;
  slot?: unknown;
  generation?: unknown;
  keyId?: unknown;
  fingerprint?: unknown;
  emergency?: unknown;
}

export interface NotifyReceiver {
  url: string;
  secret: string;
  received: ReceivedNotice[];
  /** Answer 503 to the next `count` deliveries (a parent that is down for a while). */
  failNext(count: number): void;
  close(): Promise<void>;
}

export interface NotifyReceiverOptions {
  port?: number;
  secret?: string;
  /** Keep at most this many notices in `received` (a long-running dev stack). */
  keep?: number;
  onNotice?: (summary: NoticeSummary) => void;
}

const MAX_BODY_BYTES = 64 * 1024;

function signatureMatches(header: string | string[] | undefined, body: string, secret: string): boolean {
  if (typeof header !== 'string') return false;
  const expected = Buffer.from(signNotice(body, secret));
  const given = Buffer.from(header);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

function summarise(event: string, deliveryId: string, body: string, signatureValid: boolean): NoticeSummary {
  let notice: Record<string, unknown> = {};
  try {
    const parsed: unknown = JSON.parse(body);
    if (parsed && typeof parsed === 'object') notice = parsed as Record<string, unknown>;
  } catch {
    // An unparseable body is recorded by its delivery id and signature verdict only.
  }
  const { externalRef, slot, generation, keyId, fingerprint, emergency } = notice;
  return {
    receivedAt: new Date().toISOString(),
    event,
    deliveryId,
    signatureValid,
    externalRef,
    slot,
    generation,
    keyId,
    fingerprint,
    emergency,
  };
}

export async function startNotifyReceiver(options: NotifyReceiverOptions = {}): Promise<NotifyReceiver> {
  const secret = options.secret ?? randomBytes(24).toString('hex');
  const received: ReceivedNotice[] = [];
  let failures = 0;
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) chunks.push(chunk);
    });
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const signatureValid =
        size <= MAX_BODY_BYTES && signatureMatches(request.headers['x-tpo-signature'], body, secret);
      const status = failures > 0 ? 503 : signatureValid ? 204 : 401;
      if (failures > 0) failures -= 1;
      const event = String(request.headers['x-tpo-event']);
      const deliveryId = String(request.headers['x-tpo-delivery']);
      received.push({ event, deliveryId, body, signatureValid, status });
      if (options.keep !== undefined && received.length > options.keep) received.shift();
      options.onNotice?.(summarise(event, deliveryId, body, signatureValid));
      response.writeHead(status).end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/hooks/key-rotated`,
    secret,
    received,
    failNext: (count) => void (failures = count),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
