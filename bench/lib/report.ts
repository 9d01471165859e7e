import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { BenchResult, Metric } from './types.js';

/** The printed table (benchmark, metric, value, target, met?) and the JSON file in bench/results/. */
export const RESULTS_DIR = fileURLToPath(new URL('../results/', import.meta.url));

export function formatValue(metric: Pick<Metric, 'value' | 'unit'>): string {
  const value = Number.isInteger(metric.value) ? String(metric.value) : metric.value.toFixed(1);
  return metric.unit ? `${value} ${metric.unit}` : value;
}

export function renderTable(results: ReadonlyArray<{ name: string; result: BenchResult }>): string {
  const rows = [['benchmark', 'metric', 'value', 'target', 'met?']];
  for (const { name, result } of results) {
    for (const metric of result.metrics) {
      rows.push([
        name,
        metric.metric,
        formatValue(metric),
        metric.target?.description ?? '',
        metric.target ? (metric.target.met ? 'yes' : 'NO') : '',
      ]);
    }
  }
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  const line = (row: string[]) =>
    row
      .map((cell, column) => cell.padEnd(widths[column]!))
      .join('  ')
      .trimEnd();
  return [line(rows[0]!), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.slice(1).map(line)].join('\n');
}

export function writeResults(document: Record<string, unknown>, startedAt: Date): string {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const path = `${RESULTS_DIR}${startedAt.toISOString().replace(/[:.]/g, '-')}.json`;
  writeFileSync(path, `${JSON.stringify(document, null, 2)}\n`);
  return path;
}
