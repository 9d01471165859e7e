import { spawn } from 'node:child_process';
import { StackRecord } from '../../src/infra/stack-record.js';
import { startWatchdog } from '../../src/main/stack/watchdog.js';

/**
 * A stand-in for `npm start` in test/unit/stack-record.test.ts: `node --import tsx watchdog-owner.ts <data dir>`
 * records itself on the data directory, starts the watchdog and a child in a process group of its own (as the
 * dev server and Postgres are) that ignores nothing, records it as the dev server, prints `ready <child pid>`,
 * and waits. `stop` on its stdin: a clean stop (the child stopped, the record released, the watchdog dismissed).
 */
const dataDir = process.argv[2]!;
const record = StackRecord.claim(dataDir);
const watchdog = startWatchdog(dataDir, record.owner, (line) => console.error(line));
if (watchdog) record.add('watchdog', watchdog.pid);
const child = spawn('sleep', ['300'], { stdio: 'ignore', detached: true });
record.add('temporal', child.pid!);
console.log(`ready ${child.pid}`);
process.stdin.setEncoding('utf8');
process.stdin.on('data', (text: string) => {
  if (!text.includes('stop')) return;
  child.once('exit', () => {
    if (record.release()) watchdog?.dismiss();
    process.exit(0);
  });
  child.kill('SIGTERM');
});
