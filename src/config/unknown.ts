import { TEMPORAL_ENVCONFIG_PREFIXES, TEMPORAL_ENVCONFIG_VARIABLES } from './temporal.js';

/**
 * A misspelt or removed variable is otherwise silently ignored: a set variable that carries one of
 * our prefixes (the first word of a known variable: GATEWAY_, ROTATION_, EVENTS_, ...) but is not
 * one of ours is reported with the nearest known name. Variables others read under those prefixes
 * (@temporalio/envconfig's TEMPORAL_TLS_*, the Temporal server's own settings) are not ours to report.
 */
const OTHERS = new Set<string>([...TEMPORAL_ENVCONFIG_VARIABLES, 'TEMPORAL_NUM_HISTORY_SHARDS']);
const OTHERS_PREFIXES: readonly string[] = TEMPORAL_ENVCONFIG_PREFIXES;

/** The prefixes of the known variables: each one's first word and its underscore (OPERATORS has none). */
export function prefixesOf(known: readonly string[]): string[] {
  return [...new Set(known.flatMap((name) => (name.includes('_') ? [`${name.slice(0, name.indexOf('_') + 1)}`] : [])))];
}

/** Edit distance with adjacent transpositions (optimal string alignment): PROT to PORT is 1. */
export function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++)
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        best = Math.min(best, d[i - 2]![j - 2]! + 1);
      d[i]![j] = best;
    }
  return d[a.length]![b.length]!;
}

/** The known name nearest to `name` (ties: one with the same prefix, then the first alphabetically). */
export function nearestKnown(name: string, known: readonly string[]): string {
  const prefix = name.slice(0, name.indexOf('_') + 1);
  const ranked = [...known].sort(
    (a, b) =>
      editDistance(name, a) - editDistance(name, b) ||
      Number(!a.startsWith(prefix)) - Number(!b.startsWith(prefix)) ||
      a.localeCompare(b),
  );
  return ranked[0]!;
}

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
