/**
 * A Temporal SDK logger (Runtime, bundler) that keeps test output readable: errors always, warnings
 * only when labelled (the bundler's are worth seeing), nothing below.
 */
export function quietLogger(warnLabel?: string) {
  return {
    log: () => undefined,
    trace: () => undefined,
    debug: () => undefined,
    info: () => undefined,
    warn: (message: string) => (warnLabel ? console.error(`[${warnLabel}] ${message}`) : undefined),
    error: (message: string) => console.error(warnLabel ? `[${warnLabel}] ${message}` : message),
  };
}
