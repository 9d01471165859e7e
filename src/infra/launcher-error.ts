/**
 * Every failure of a launcher (embedded Postgres, the Temporal CLI and its dev server) is one
 * `LauncherError`: a `code` from the closed list below and a message that is ONE line saying what
 * to do. The process output that explains it is kept in `detail` (printed with TENANTCTL_DEBUG=1),
 * so `npm start` and `npm test` never answer a missing permission with a raw stack.
 */
export const LauncherErrorCode = {
  POSTGRES_USER: 'POSTGRES_USER',
  POSTGRES_UNREACHABLE: 'POSTGRES_UNREACHABLE',
  POSTGRES_INIT_FAILED: 'POSTGRES_INIT_FAILED',
  POSTGRES_START_FAILED: 'POSTGRES_START_FAILED',
  TEMPORAL_CLI: 'TEMPORAL_CLI',
  TEMPORAL_START_FAILED: 'TEMPORAL_START_FAILED',
  TEMPORAL_SERVER_BUILD: 'TEMPORAL_SERVER_BUILD',
  PROCESS_START_FAILED: 'PROCESS_START_FAILED',
  /** Another stack runs on the data directory (see stack-record.ts). */
  STACK_RUNNING: 'STACK_RUNNING',
  /** A process a killed stack left on the data directory did not stop. */
  LEFTOVER_PROCESS: 'LEFTOVER_PROCESS',
} as const;
export type LauncherErrorCode = (typeof LauncherErrorCode)[keyof typeof LauncherErrorCode];

export class LauncherError extends Error {
  override name = 'LauncherError';
  constructor(
    readonly code: LauncherErrorCode,
    message: string,
    readonly detail?: string,
    options?: ErrorOptions,
  ) {
    super(oneLine(message), options);
  }
}

/** The last line of process output that names a problem (FATAL/ERROR/error), else the last line. */
export function lastProblemLine(output: readonly string[]): string | undefined {
  const lines = output.map((line) => line.trim()).filter(Boolean);
  return [...lines].reverse().find((line) => /\b(FATAL|ERROR|PANIC|error|failed|denied)\b/.test(line)) ?? lines.at(-1);
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim();
}
