import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { TEMPORAL_SERVER_VERSION } from '../../src/infra/temporal-server.js';

/**
 * docker-compose.yml runs the Temporal server `npm run cluster` builds and tests here: the same
 * release (server image, admin-tools with its SQL tool and schemas), the same config file
 * (deploy/temporal/cluster.yaml, mounted) and the same schema script, and not the development-only
 * auto-setup image. A version bump in one place and not the other fails here.
 */
const compose = readFileSync(new URL('../../docker-compose.yml', import.meta.url), 'utf8');
const template = readFileSync(new URL('../../deploy/temporal/cluster.yaml', import.meta.url), 'utf8');

describe('the Temporal server of docker-compose.yml', () => {
  it('is the release npm run cluster builds, with the schema tool of that release and no auto-setup', () => {
    const images = [...compose.matchAll(/image:\s*temporalio\/([a-z-]+):(\S+)/g)].map(([, name, tag]) => ({
      name,
      tag,
    }));
    expect(images.find((i) => i.name === 'server')?.tag).toBe(TEMPORAL_SERVER_VERSION);
    expect(images.find((i) => i.name === 'admin-tools')?.tag).toMatch(
      new RegExp(`^${TEMPORAL_SERVER_VERSION.replace(/\./g, '\\.')}(-|$)`),
    );
    expect(images.map((i) => i.name)).not.toContain('auto-setup');
  });

  it('starts the server with the committed config and sets up schemas with the committed script', () => {
    expect(compose).toContain('./deploy/temporal:/etc/temporal/config:ro');
    expect(compose).toMatch(/temporal-server --root \/etc\/temporal --config config --env cluster/);
    expect(compose).toContain('entrypoint: ["sh", "/deploy/temporal/setup-schema.sh"]');
  });

  it('keeps more than one history shard and Postgres for persistence and visibility', () => {
    expect(template.split('\n').slice(0, 3).join('\n')).toContain('enable-template');
    const shards = /numHistoryShards: \{\{ env "TEMPORAL_NUM_HISTORY_SHARDS" \| default "(\d+)" \}\}/.exec(template);
    expect(Number(shards?.[1])).toBeGreaterThan(1);
    expect(template.match(/pluginName: postgres12/g)).toHaveLength(2);
  });
});
