import { z } from 'zod';
import { ConfigError } from './config-error.js';
import { outboundConfigProblems } from '../domain/outbound-rule.js';
import { databaseSettings } from './database.js';
import { deprecatedSettingWarnings, deprecatedSettings } from './deprecated.js';
import { devStackSettings } from './dev-stack.js';
import { developmentSettings } from './development.js';
import { driftSettings } from './drift.js';
import { eventsSettings } from './events.js';
import { fundingSettings } from './funding.js';
import { gatewaySettings } from './gateway.js';
import { shapeOf, type AreaName, type Setting } from './helpers.js';
import { loggingSettings } from './logging.js';
import { outboundSettings } from './outbound.js';
import { platformSettings } from './platform.js';
import { rotationSettings } from './rotation.js';
import { safeOpsProblems, safeOpsSettings } from './safe-ops.js';
import { secretsSettings } from './secrets.js';
import { temporalEnvOf, temporalSettings } from './temporal.js';
import { tenantctlSettings } from './tenantctl.js';
import { unknownVariables } from './unknown.js';
import { workerSettings } from './worker.js';

/**
 * The only reader of process.env: every entry point calls loadConfig(process.env) once and passes
 * the result down. Each area's settings (src/config/<area>.ts) are built from the shared helpers
 * (helpers.ts) with their defaults (defaults.ts) and documentation; every problem is reported at
 * once, one line each, values never echoed. The config object holds secrets (platform key, master
 * keys): never log it.
 */
export const AREA_SETTINGS = [
  databaseSettings,
  temporalSettings,
  loggingSettings,
  platformSettings,
  secretsSettings,
  workerSettings,
  gatewaySettings,
  rotationSettings,
  outboundSettings,
  eventsSettings,
  driftSettings,
  fundingSettings,
  safeOpsSettings,
  tenantctlSettings,
] as const;

/**
 * Settings of `npm start` / `npm run cluster` and knobs for developing and testing the project: read by the same
 * loadConfig, documented apart (docs/development.md), never needed to run the product.
 */
export const STACK_AREA_SETTINGS = [devStackSettings, developmentSettings] as const;

export const configSchema = z.object({
  ...shapeOf(databaseSettings),
  ...shapeOf(temporalSettings),
  ...shapeOf(loggingSettings),
  ...shapeOf(platformSettings),
  ...shapeOf(secretsSettings),
  ...shapeOf(workerSettings),
  ...shapeOf(gatewaySettings),
  ...shapeOf(rotationSettings),
  ...shapeOf(outboundSettings),
  ...shapeOf(eventsSettings),
  ...shapeOf(driftSettings),
  ...shapeOf(fundingSettings),
  ...shapeOf(safeOpsSettings),
  ...shapeOf(tenantctlSettings),
});

export const stackSchema = z.object({ ...shapeOf(devStackSettings), ...shapeOf(developmentSettings) });

const fullSchema = z.object({ ...configSchema.shape, ...stackSchema.shape, ...shapeOf(deprecatedSettings) });

export type Config = z.infer<typeof fullSchema> & {
  /** TEMPORAL_* variables (and HOME for the config file), handed to @temporalio/envconfig. */
  temporalEnv: Record<string, string>;
  /**
   * Set variables that look like ours but are not ("unknown variable GATEWAY_PROT — did you mean
   * GATEWAY_PORT?"): reported at start by reportConfigWarnings, never refused, values never shown.
   */
  warnings: readonly string[];
};

/** Every setting (default: the product's; or the stack's) with its name and area, in the order of the documentation. */
export function allSettings(
  areas: ReadonlyArray<(typeof AREA_SETTINGS)[number] | (typeof STACK_AREA_SETTINGS)[number]> = AREA_SETTINGS,
): Array<{ name: string; area: AreaName; setting: Setting }> {
  return areas.flatMap((of) =>
    Object.entries(of.settings as Record<string, Setting>).map(([name, setting]) => ({ name, area: of.name, setting })),
  );
}

export { ConfigError };

/** Validates the environment; throws ConfigError listing every problem (values are never echoed). */
export function loadConfig(env: Record<string, string | undefined>): Config {
  const known = Object.fromEntries(Object.keys(fullSchema.shape).map((key) => [key, env[key]]));
  const parsed = fullSchema.safeParse(known);
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`));
  }
  const crossField = [...safeOpsProblems(parsed.data), ...outboundConfigProblems(parsed.data)];
  if (crossField.length) throw new ConfigError(crossField);
  const warnings = [
    ...deprecatedSettingWarnings(env),
    ...unknownVariables(env, Object.keys(fullSchema.shape)).map(
      ({ name, suggestion }) => `unknown variable ${name} — did you mean ${suggestion}?`,
    ),
  ];
  return { ...parsed.data, temporalEnv: temporalEnvOf(env), warnings };
}

const reported = new Set<string>();

/**
 * Reports the configuration's warnings once per process (a worker and a gateway in one process, or
 * tenantctl starting a worker, say each once), through the caller's logger.
 */
export function reportConfigWarnings(config: Pick<Config, 'warnings'>, warn: (message: string) => void): void {
  for (const message of config.warnings) {
    if (reported.has(message)) continue;
    reported.add(message);
    warn(message);
  }
}
