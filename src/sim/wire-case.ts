import type { FastifyInstance } from 'fastify';

/**
 * The `snake` field case: every key of a success payload (`data`) becomes snake_case on its way out, the way a
 * platform written in another language would answer. `meta` and error bodies keep the names the contract gives them.
 */
export function snakeCase(name: string): string {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/([A-Z])([A-Z][a-z])/g, '$1_$2')
    .toLowerCase();
}

export function snakeKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(snakeKeys);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>).map(([key, inner]) => [snakeCase(key), snakeKeys(inner)]),
    );
  }
  return value;
}

/** Rewrites `data` of JSON answers under `prefix` (admin routes are not the platform and stay as they are). */
export function installSnakeCase(app: FastifyInstance, prefix: string): void {
  app.addHook('onSend', (request, _reply, payload, done) => {
    if (typeof payload !== 'string' || !request.url.startsWith(prefix)) {
      done(null, payload);
      return;
    }
    try {
      const body = JSON.parse(payload) as Record<string, unknown>;
      if (!('data' in body)) {
        done(null, payload);
        return;
      }
      done(null, JSON.stringify({ ...body, data: snakeKeys(body.data) }));
    } catch {
      done(null, payload);
    }
  });
}
