import { LOG_FORMATS } from '../domain/log-formats.js';
import { DEFAULTS } from './defaults.js';
import { area, choice, setting } from './helpers.js';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

export const loggingSettings = area('logging', {
  LOG_LEVEL: setting(choice(LOG_LEVELS, DEFAULTS.LOG_LEVEL), {
    description:
      `One of ${LOG_LEVELS.map((l) => `\`${l}\``).join(', ')}; error stacks are logged only at ` +
      '`debug`/`trace` (a warning is one line).',
  }),
  LOG_FORMAT: setting(choice(LOG_FORMATS), {
    description: '`json` (one JSON object a line) or `pretty` (human-readable lines).',
    unset: '`json`',
    devStack: '`pretty`',
  }),
});
