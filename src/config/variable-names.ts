/**
 * How a misspelt variable is matched to the nearest known name (unknown.ts, for the whole configuration; tenantctl's
 * gateway commands, for their own TENANTCTL_ variables). No schema here: loading zod is not needed to suggest a name.
 */

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
