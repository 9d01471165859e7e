import { TEMPORAL_ENVCONFIG_PREFIXES, TEMPORAL_ENVCONFIG_VARIABLES } from './temporal.js';
import { nearestKnown, prefixesOf } from './variable-names.js';

/**
 * A misspelt or removed variable is otherwise silently ignored: a set variable that carries one of
 * our prefixes (the first word of a known variable: GATEWAY_, ROTATION_, EVENTS_, ...) but is not
 * one of ours is reported with the nearest known name. Variables others read under those prefixes
 * (@temporalio/envconfig's TEMPORAL_TLS_*, the Temporal server's own settings) are not ours to report.
 */
const OTHERS = new Set<string>([...TEMPORAL_ENVCONFIG_VARIABLES, 'TEMPORAL_NUM_HISTORY_SHARDS']);
const OTHERS_PREFIXES: readonly string[] = TEMPORAL_ENVCONFIG_PREFIXES;

/** The set variables (non-empty) with one of our prefixes that are not known, each with a suggestion; names only. */
export function unknownVariables(
  env: Record<string, string | undefined>,
  known: readonly string[],
): Array<{ name: string; suggestion: string }> {
  const knownSet = new Set(known);
  const prefixes = prefixesOf(known);
  return Object.keys(env)
    .filter(
      (name) =>
        env[name] !== undefined &&
        !knownSet.has(name) &&
        !OTHERS.has(name) &&
        !OTHERS_PREFIXES.some((prefix) => name.startsWith(prefix)) &&
        prefixes.some((prefix) => name.startsWith(prefix)),
    )
    .sort()
    .map((name) => ({ name, suggestion: nearestKnown(name, known) }));
}
