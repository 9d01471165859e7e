import { makeTelemetryFilterString, Runtime } from '@temporalio/worker';

/**
 * The SDK's warnings and errors (Core's included, forwarded), counted by kind: under load Core
 * repeats the same warning per workflow (e.g. TMPRL1104 "Workflow task duration exceeded 5
 * seconds"), which would bury the table. The first few of each kind are printed; all are counted.
 */
const PRINTED_PER_KIND = 3;
const counts = new Map<string, number>();

function kindOf(message: string): string {
  return /\[TMPRL\d+\]/.exec(message)?.[0] ?? message.slice(0, 60);
}

export function installQuietSdkLogging(log: (line: string) => void): void {
  const record = (level: string) => (message: string) => {
    const kind = `${level} ${kindOf(message)}`;
    const seen = (counts.get(kind) ?? 0) + 1;
    counts.set(kind, seen);
    if (seen <= PRINTED_PER_KIND)
      log(`temporal ${level}: ${message}${seen === PRINTED_PER_KIND ? ' (further ones counted, not printed)' : ''}`);
  };
  const ignore = () => undefined;
  Runtime.install({
    logger: { log: ignore, trace: ignore, debug: ignore, info: ignore, warn: record('warn'), error: record('error') },
    telemetryOptions: { logging: { filter: makeTelemetryFilterString({ core: 'WARN', other: 'ERROR' }), forward: {} } },
  });
}

/** Warnings and errors seen so far, by kind: part of the JSON results. */
export function sdkLogCounts(): Record<string, number> {
  return Object.fromEntries(counts);
}
