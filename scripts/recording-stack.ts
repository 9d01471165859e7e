/**
 * The stack the history recorders run against (scripts/record-histories.ts, record-branch-histories.ts): an
 * ephemeral dev stack (Temporal dev server, Postgres, simulator, worker), a loopback receiver for the rotation
 * notices, unencrypted payloads (a recorded history holds no secret) and a client of it.
 */
import { createServer } from 'node:http';
import { Client, Connection } from '@temporalio/client';
import { loadConfig } from '../src/config/index.js';
import { startStack } from '../src/main/stack/start-stack.js';

export async function startRecordingStack() {
  const notify = createServer((_req, res) => res.writeHead(200).end('ok')).listen(0, '127.0.0.1');
  await new Promise((r) => notify.once('listening', r));
  const notifyPort = (notify.address() as { port: number }).port;
  const config = loadConfig({
    ...process.env,
    PAYLOAD_CODEC: 'off',
    LOG_LEVEL: 'error',
    ROTATION_NOTIFY_URL: `http://127.0.0.1:${notifyPort}/key-rotated`,
    ROTATION_NOTIFY_SECRET: 'histories-notify-secret-0001',
    // The notice and event receivers here are on loopback: the outbound guard lets that host through.
    OUTBOUND_ALLOW_HOSTS: '127.0.0.1',
  });
  process.env.OUTBOUND_ALLOW_HOSTS = '127.0.0.1';
  process.env.ROTATION_NOTIFY_URL = config.ROTATION_NOTIFY_URL;
  process.env.ROTATION_NOTIFY_SECRET = config.ROTATION_NOTIFY_SECRET;
  const stack = await startStack({ config, ephemeral: true, say: (line) => console.error(`[record] ${line}`) });
  const connection = await Connection.connect({ address: stack.env.TEMPORAL_ADDRESS! });
  const client = new Client({ connection });
  return {
    config,
    stack,
    client,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    async close(): Promise<void> {
      await connection.close();
      await stack.stop();
      notify.close();
    },
  };
}
