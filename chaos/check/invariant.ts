/** One row of the chaos table: what was checked, and every way it was broken. */
export interface InvariantResult {
  name: string;
  checked: number;
  /** One line each, naming the tenant / workflow and what was found. */
  violations: string[];
}

export function invariant(name: string): InvariantResult {
  return { name, checked: 0, violations: [] };
}

/** A platform token as our logger would NOT have masked it (`svsk_[redacted]` is the masked form). */
export const TOKEN_PATTERN = /svsk_[A-Za-z0-9]/;

export function printTable(results: InvariantResult[], write: (line: string) => void, detailsPerRow = 10): void {
  const width = Math.max(...results.map((r) => r.name.length), 'invariant'.length);
  const row = (a: string, b: string, c: string) => `| ${a.padEnd(width)} | ${b.padStart(7)} | ${c.padStart(10)} |`;
  const rule = `|${'-'.repeat(width + 2)}|${'-'.repeat(9)}|${'-'.repeat(12)}|`;
  write(row('invariant', 'checked', 'violations'));
  write(rule);
  for (const r of results) write(row(r.name, String(r.checked), String(r.violations.length)));
  for (const r of results.filter((x) => x.violations.length > 0)) {
    write('');
    write(`${r.name}: ${r.violations.length} violation(s)`);
    for (const line of r.violations.slice(0, detailsPerRow)) write(`  - ${line}`);
    if (r.violations.length > detailsPerRow)
      write(`  … and ${r.violations.length - detailsPerRow} more (see the JSON report)`);
  }
}
