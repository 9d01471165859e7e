/** Default rotation timings. No zod here: workflows import this. */
export const DEFAULT_TIMINGS = {
  quietPeriod: '1h',
  propagationAllowance: '15m',
  pollInterval: '1m',
  quietDeadline: '24h',
  overlapWindow: '24h',
  keyLimitRetryInterval: '10m',
} as const;
