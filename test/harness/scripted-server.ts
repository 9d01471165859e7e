import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A tiny HTTP server for the client's unit tests: each test scripts the platform's answers, so tolerance is proven
 * against shapes our simulator never produces. Not exported from the package index.
 */
export interface RecordedRequest {
  method: string;
  /** Path and query as received, e.g. `/api/v1/subaccounts?cursor=abc`. */
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
  json: unknown;
}

export type ScriptedHandler = (request: RecordedRequest, res: ServerResponse) => void;

export interface ScriptedServer {
  origin: string;
  apiBase: string;
  requests: RecordedRequest[];
  close(): Promise<void>;
}

export async function startScriptedServer(handler: ScriptedHandler): Promise<ScriptedServer> {
  const requests: RecordedRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let json: unknown;
      try {
        json = body ? (JSON.parse(body) as unknown) : undefined;
      } catch {
        json = undefined;
      }
      const recorded = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body, json };
      requests.push(recorded);
      handler(recorded, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const origin = `http://127.0.0.1:${port}`;
  return {
    origin,
    apiBase: `${origin}/api/v1`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

let requestCounter = 0;

/** Answers with a raw JSON body (no envelope), for shapes the tests want exactly. */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

export function nextRequestId(): string {
  requestCounter += 1;
  return `req_test${requestCounter}`;
}

/** Answers with the contract's success envelope and a fresh request id. */
export function sendData(
  res: ServerResponse,
  status: number,
  data: unknown,
  headers: Record<string, string> = {},
): void {
  sendJson(res, status, { data, meta: { requestId: nextRequestId() } }, headers);
}

/** Answers with the contract's failure envelope and a fresh request id. */
export function sendError(
  res: ServerResponse,
  status: number,
  code: string | undefined,
  message: string,
  headers: Record<string, string> = {},
): void {
  sendJson(
    res,
    status,
    { error: { ...(code === undefined ? {} : { code }), message }, meta: { requestId: nextRequestId() } },
    headers,
  );
}
