import type { FastifyReply, FastifyRequest } from 'fastify';

/**
 * Requests picked by a `drop-after-commit` fault: their handler runs and commits, then the connection is destroyed
 * instead of answering. A WeakSet keeps this off Fastify's global request type.
 */
const droppedRequests = new WeakSet<FastifyRequest>();

export function markDropAfterCommit(request: FastifyRequest): void {
  droppedRequests.add(request);
}

export interface Meta {
  requestId: string;
  [extra: string]: unknown;
}

/** Sends a success envelope `{ data, meta: { requestId } }` (the request id comes from Fastify's genReqId). */
export function sendData(
  reply: FastifyReply,
  status: number,
  data: unknown,
  extra: { headers?: Record<string, string>; meta?: Record<string, unknown> } = {},
): void {
  send(reply, status, { data, meta: { ...extra.meta, requestId: reply.request.id } }, extra.headers);
}

export function sendError(
  reply: FastifyReply,
  status: number,
  code: string,
  message: string,
  headers: Record<string, string> = {},
): void {
  send(reply, status, { error: { code, message }, meta: { requestId: reply.request.id } }, headers);
}

function send(reply: FastifyReply, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (droppedRequests.has(reply.request)) {
    // The ambiguous failure: the change is committed, the client never hears about it.
    reply.hijack();
    reply.raw.destroy();
    return;
  }
  void reply.code(status).headers(headers).type('application/json; charset=utf-8').send(JSON.stringify(body));
}
