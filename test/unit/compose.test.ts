import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

/**
 * docker-compose.yml publishes only the gateway's public port on every interface: the Temporal
 * frontend (signal, terminate), its Web UI (no authentication) and the gateway's /readyz and /metrics
 * stay on the compose network or the host's loopback. No YAML parser is installed, so the file is
 * read by indentation (services at 2 spaces, their keys at 4), flow and block lists both handled.
 */
interface Service {
  ports: string[];
  environment: Record<string, string>;
}

function readCompose(text: string): Record<string, Service> {
  const services: Record<string, Service> = {};
  let section = '';
  let current: Service | undefined;
  let key = '';
  for (const raw of text.split('\n')) {
    const line = raw.replace(/\s+#.*$/, '');
    if (/^\S/.test(line)) section = line.replace(/:.*$/, '');
    else if (section === 'services' && /^ {2}[A-Za-z0-9_-]+:\s*$/.test(line)) {
      current = { ports: [], environment: {} };
      services[line.trim().slice(0, -1)] = current;
    } else if (current && /^ {4}[A-Za-z_]+:/.test(line)) {
      key = line.trim().replace(/:.*$/, '');
      const flow = /^ {4}ports:\s*\[(.*)\]\s*$/.exec(line);
      if (flow) current.ports.push(...flow[1]!.split(',').map(unquote).filter(Boolean));
    } else if (current && key === 'ports' && /^ {6}- /.test(line)) current.ports.push(unquote(line.trim().slice(2)));
    else if (current && key === 'environment' && /^ {6}[A-Z_]+:/.test(line)) {
      const [name, ...value] = line.trim().split(':');
      current.environment[name!] = unquote(value.join(':'));
    }
  }
  return services;
}

const unquote = (value: string) => value.trim().replace(/^["']|["']$/g, '');

/** "127.0.0.1:9090:9090" → loopback; "8081:8080" or "0.0.0.0:80:80" → every interface. */
function publishing(spec: string): { loopback: boolean; containerPort: string } {
  const parts = spec.replace(/\/(tcp|udp)$/, '').split(':');
  return {
    loopback: parts.length === 3 && (parts[0] === '127.0.0.1' || parts[0] === '[::1]'),
    containerPort: parts.at(-1)!,
  };
}

describe('docker-compose.yml', () => {
  const services = readCompose(readFileSync(new URL('../../docker-compose.yml', import.meta.url), 'utf8'));

  it('is read as the services it declares', () => {
    expect(Object.keys(services)).toEqual(expect.arrayContaining(['temporal', 'temporal-ui', 'gateway', 'worker']));
  });

  it('publishes no Temporal, Web UI or database port on all interfaces', () => {
    for (const [name, service] of Object.entries(services)) {
      if (name === 'gateway') continue;
      for (const spec of service.ports) expect(publishing(spec).loopback, `${name} publishes ${spec}`).toBe(true);
    }
  });

  it(
    "publishes on all interfaces only the gateway's public port, with /readyz and " + '/metrics on a separate ops port',
    () => {
      const gateway = services.gateway!;
      const publicPort = gateway.environment.GATEWAY_PORT;
      const opsPort = gateway.environment.GATEWAY_OPS_PORT;
      expect(publicPort).toBeTruthy();
      expect(opsPort).toBeTruthy();
      expect(opsPort).not.toBe(publicPort);
      const everywhere = gateway.ports.map(publishing).filter((p) => !p.loopback);
      expect(everywhere.map((p) => p.containerPort)).toEqual([publicPort]);
      expect(
        gateway.ports
          .map(publishing)
          .filter((p) => p.containerPort === opsPort)
          .every((p) => p.loopback),
      ).toBe(true);
    },
  );
});
