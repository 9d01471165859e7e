import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { deleteEventSubscription, listEventSubscriptions, subscribeToEvents } from '../../client/events/events.js';
import { createPool } from '../../db/pool.js';
import { parseMasterKeys } from '../../secrets/master-keys.js';
import { verifyWebhook } from '../../secrets/standard-webhooks.js';
import { createVault } from '../../secrets/vault.js';

/**
 * `npm start` shows events as they happen: a small receiver on loopback, subscribed to every type,
 * that verifies each delivery the Standard Webhooks way and prints one line (type, tenant, event id).
 * Its subscription (label `dev-stack`) is replaced on every start, since the port changes.
 */
export const DEV_SUBSCRIPTION_LABEL = 'dev-stack';

export interface DevEventsReceiver {
  url: string;
  subscriptionId: string;
  close(): Promise<void>;
}

export async function startDevEventsReceiver(input: {
  databaseUrl: string;
  secretsKeys: string;
  say: (line: string) => void;
}): Promise<DevEventsReceiver> {
  let secret = '';
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      try {
        verifyWebhook(secret, request.headers, body);
      } catch (error) {
        input.say(`events receiver: REFUSED a delivery (${(error as Error).message})`);
        response.writeHead(401).end();
        return;
      }
      const event = JSON.parse(body) as { id: string; type: string; tenant: string | null };
      input.say(`event ${event.type} ${event.tenant ?? '(parent)'} ${event.id} (verified)`);
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const url = `http://127.0.0.1:${port}/events`;
  const pool = createPool(input.databaseUrl, { max: 1, applicationName: 'dev-stack-events' });
  try {
    for (const old of await listEventSubscriptions(pool))
      if (old.label === DEV_SUBSCRIPTION_LABEL) await deleteEventSubscription(pool, old.id);
    const created = await subscribeToEvents(
      // Its own loopback receiver: allowed here, as start-stack.ts allows it to the worker (OUTBOUND_ALLOW_HOSTS).
      { pool, vault: createVault(parseMasterKeys(input.secretsKeys)), allowHosts: [{ host: '127.0.0.1', port }] },
      { url, types: ['*'], label: DEV_SUBSCRIPTION_LABEL },
      'dev-stack',
    );
    secret = created.secret;
    return {
      url,
      subscriptionId: created.subscription.id,
      close: () =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    };
  } catch (error) {
    server.close();
    throw error;
  } finally {
    await pool.end();
  }
}
