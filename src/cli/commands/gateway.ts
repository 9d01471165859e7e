import type { Command } from 'commander';
import { printLine } from '../output.js';

export function registerGatewayCommands(program: Command): void {
  program
    .command('gateway')
    .description(
      'run the HTTP gateway (trigger/status API, registry webhook receiver, payload ' +
        'codec, health, metrics) until SIGINT/SIGTERM',
    )
    .action(async () => {
      const [{ loadCliConfig }, { startGateway }] = await Promise.all([
        import('../context.js'),
        import('../../main/gateway.js'),
      ]);
      const config = loadCliConfig();
      const running = await startGateway(config);
      printLine(`gateway listening on ${running.url} (OpenAPI at ${running.url}/openapi.json)`);
      await new Promise<void>((resolve) => {
        const stop = () => resolve();
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
      });
      await running.close();
    });
}
