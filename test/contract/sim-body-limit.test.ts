import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_PLATFORM_KEY, startSimulator, type RunningSimulator } from '../../src/sim/index.js';

/** A client that streams a body far over the limit must still read the 413 in the envelope, not a reset. */
describe('simulator body limit', () => {
  let sim: RunningSimulator;
  beforeAll(async () => {
    sim = await startSimulator();
  });
  afterAll(async () => sim?.close());

  const fiveMegabytes = () => {
    const chunk = Buffer.alloc(64 * 1024, 'x');
    let sent = 0;
    return new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent === 0) controller.enqueue(Buffer.from('{"name":"'));
        if (sent >= 5 * 1024 * 1024) {
          controller.enqueue(Buffer.from('"}'));
          controller.close();
          return;
        }
        sent += chunk.length;
        controller.enqueue(chunk);
      },
    });
  };

  /** Like curl: sends the whole chunked body, then reads the answer; a reset while sending is a dropped connection. */
  const sendWholeThenRead = (path: string) =>
    new Promise<{ error: string | null; response: string }>((resolve) => {
      const { hostname, port } = new URL(sim.apiBase);
      const socket = connect(Number(port), hostname);
      let response = '';
      let error: string | null = null;
      socket.on('data', (chunk: Buffer) => (response += chunk.toString('utf8')));
      socket.on('error', (e: NodeJS.ErrnoException) => (error = e.code ?? e.message));
      socket.on('close', () => resolve({ error, response }));
      const send = async () => {
        socket.write(
          `POST ${new URL(sim.apiBase).pathname}${path} HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: ` +
            `Bearer ${DEFAULT_PLATFORM_KEY}\r\nContent-Type: ` +
            `application/json\r\nIdempotency-Key: big-body-2\r\nTransfer-Encoding: ` +
            `chunked\r\nConnection: close\r\n\r\n`,
        );
        const chunk = Buffer.alloc(64 * 1024, 'x');
        for (let sent = 0; sent < 5 * 1024 * 1024 && !socket.destroyed; sent += chunk.length) {
          if (!socket.write(`${chunk.length.toString(16)}\r\n${chunk.toString()}\r\n`))
            await new Promise((r) => socket.once('drain', r));
        }
        if (!socket.destroyed) socket.end('0\r\n\r\n');
      };
      socket.on('connect', () => void send());
    });

  it('answers a client that sends all 5 MB before reading with 413 in the envelope, without a reset', async () => {
    const { error, response } = await sendWholeThenRead('/subaccounts/create');
    expect(error).toBeNull();
    expect(response).toMatch(/^HTTP\/1\.1 413 /);
    expect(response).toContain('"code":"PAYLOAD_TOO_LARGE"');
  });

  it.each([
    ['streamed (chunked, no length)', () => ({ body: fiveMegabytes(), duplex: 'half' as const })],
    ['with a Content-Length', () => ({ body: `{"name":"${'x'.repeat(5 * 1024 * 1024)}"}` })],
  ])('answers a 5 MB body %s with 413 PAYLOAD_TOO_LARGE in the envelope', async (_label, body) => {
    const response = await fetch(`${sim.apiBase}/subaccounts/create`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${DEFAULT_PLATFORM_KEY}`,
        'content-type': 'application/json',
        'idempotency-key': 'big-body-1',
      },
      ...body(),
    } as RequestInit);
    expect(response.status).toBe(413);
    expect(await response.json()).toMatchObject({
      error: { code: 'PAYLOAD_TOO_LARGE', message: expect.any(String) },
      meta: { requestId: expect.stringMatching(/^req_/) },
    });
    expect(sim.state().subaccounts).toHaveLength(0);
  });
});
