import { Command, InvalidArgumentError } from 'commander';
import { SHAPE_NAMES, SIM_SHAPES, startSimulator, type ShapeName } from '../sim/index.js';
import { loadSeedFile, SimSeedError } from '../sim/seed.js';

function nonNegativeInt(name: string) {
  return (value: string): number => {
    if (!/^[0-9]+$/.test(value)) throw new InvalidArgumentError(`${name} must be a non-negative integer.`);
    return Number(value);
  };
}

const program = new Command()
  .name('sim')
  .description('Platform simulator: a strict stand-in for the platform API, with fault injection.')
  .option('--port <n>', 'port to listen on (0 = any free port)', nonNegativeInt('--port'), 0)
  .option('--host <host>', 'address to bind', '127.0.0.1')
  .option('--seed <file>', 'seed JSON file (default: one parent with fake fixture tokens)')
  .option('--latency-ms <n>', 'fixed delay added to every API call', nonNegativeInt('--latency-ms'), 0)
  .option('--rate-limit <n>', 'global API requests per second (429 beyond)', nonNegativeInt('--rate-limit'))
  .option('--allow-http-webhooks', 'allow plain http:// webhook urls for non-loopback hosts', false)
  .option(
    '--shape <name>',
    `answers to what the contract leaves "not shown": ${SHAPE_NAMES.join(', ')} (src/sim/CONTRACT-CHOICES.md)`,
    (value: string) => {
      if (!(SHAPE_NAMES as string[]).includes(value))
        throw new InvalidArgumentError(`--shape must be one of ${SHAPE_NAMES.join(', ')}.`);
      return value as ShapeName;
    },
    'default',
  )
  .parse();

const opts = program.opts<{
  port: number;
  host: string;
  seed?: string;
  latencyMs: number;
  rateLimit?: number;
  allowHttpWebhooks: boolean;
  shape: ShapeName;
}>();

try {
  const seed = opts.seed ? await loadSeedFile(opts.seed) : undefined;
  const sim = await startSimulator({
    port: opts.port,
    host: opts.host,
    seed,
    latencyMs: opts.latencyMs,
    rateLimitPerSecond: opts.rateLimit || undefined,
    choices: { ...SIM_SHAPES[opts.shape], allowInsecureWebhookUrls: opts.allowHttpWebhooks },
  });
  console.log(`platform simulator (${opts.shape} shape) listening on ${sim.url} (API base ${sim.apiBase})`);
  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) return;
    closing = true;
    console.log(`${signal}: closing simulator`);
    sim.close().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error(error);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
} catch (error) {
  console.error(error instanceof SimSeedError ? error.message : error);
  process.exit(1);
}
