import { DEFAULTS } from './defaults.js';
import { area, optionalText, port, setting, text } from './helpers.js';

/** `npm start` (the dev stack) and `npm run cluster` (the production topology on one machine). */
export const devStackSettings = area('dev-stack', {
  DATA_DIR: setting(text(DEFAULTS.DATA_DIR), {
    description:
      "Where the dev stack keeps its data: embedded Postgres, the Temporal dev server's database, `stack.json`.",
  }),
  TEMPORAL_CLI_PATH: setting(optionalText(), {
    description: 'A `temporal` CLI binary for the dev server.',
    advanced: true,
    unset: '`PATH`, then the cache, then a Go build',
  }),
  TEMPORAL_DEV_PORT: setting(port(DEFAULTS.TEMPORAL_DEV_PORT), {
    description: 'Port of the dev server frontend (a free one is picked when taken).',
    advanced: true,
  }),
  TEMPORAL_UI_PORT: setting(port(DEFAULTS.TEMPORAL_UI_PORT), {
    description: 'Port of the dev server Web UI (a free one is picked when taken).',
    advanced: true,
  }),
  TEMPORAL_SERVER_PATH: setting(optionalText(), {
    description:
      '`npm run cluster`: a `temporal-server` binary (with `TEMPORAL_SQL_TOOL_PATH` and `TEMPORAL_SCHEMA_DIR`; ' +
      'see [deployment.md](deployment.md)).',
    advanced: true,
    unset: 'the cache, then a Go build',
  }),
  TEMPORAL_SQL_TOOL_PATH: setting(optionalText(), {
    description: '`npm run cluster`: the `temporal-sql-tool` binary that applies the Temporal schemas.',
    advanced: true,
    unset: 'the cache, then a Go build',
  }),
  TEMPORAL_SCHEMA_DIR: setting(optionalText(), {
    description: "`npm run cluster`: the Temporal server's `schema` directory.",
    advanced: true,
    unset: "the Go build's module",
  }),
  GATEWAY_URL: setting(optionalText(), {
    description: "Written by `npm start` to `stack.json`: its gateway's URL, for scripts (not read by the processes).",
    advanced: true,
    unset: '—',
  }),
  SIMULATOR_URL: setting(optionalText(), {
    description:
      "Written by `npm start` to `stack.json`: the platform simulator's URL, for `npm run demo` and scripts.",
    advanced: true,
    unset: '—',
  }),
});
