/**
 * tenantctl's entry. A `tenantctl status <ref>` sends its one request first, while the rest of the CLI loads
 * (early-read.ts); then the program (program.ts: commander and the command definitions) runs as for any command.
 */
import { startEarlyRead } from './early-read.js';

await startEarlyRead(process.argv.slice(2));
await import('./program.js');
