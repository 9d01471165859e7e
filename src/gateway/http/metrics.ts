/**
 * Prometheus text exposition (format 0.0.4) for the gateway's own metrics, hand-rolled: three metric
 * kinds with fixed label names are all the gateway needs, so no client library is pulled in.
 */
type Labels = Record<string, string>;

const escapeLabel = (value: string) => value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
const labelText = (labels: Labels) => {
  const entries = Object.entries(labels);
  return entries.length === 0 ? '' : `{${entries.map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(',')}}`;
};
const keyOf = (labels: Labels) => JSON.stringify(Object.entries(labels).sort(([a], [b]) => a.localeCompare(b)));

class Counter {
  readonly #values = new Map<string, { labels: Labels; value: number }>();
  constructor(
    readonly name: string,
    readonly help: string,
  ) {}
  inc(labels: Labels = {}, by = 1): void {
    const key = keyOf(labels);
    const entry = this.#values.get(key);
    if (entry) entry.value += by;
    else this.#values.set(key, { labels, value: by });
  }
  value(labels: Labels = {}): number {
    return this.#values.get(keyOf(labels))?.value ?? 0;
  }
  render(): string[] {
    return [
      `# HELP ${this.name} ${this.help}`,
      `# TYPE ${this.name} counter`,
      ...[...this.#values.values()].map((e) => `${this.name}${labelText(e.labels)} ${e.value}`),
    ];
  }
}

class Histogram {
  readonly #series = new Map<string, { labels: Labels; counts: number[]; sum: number; count: number }>();
  constructor(
    readonly name: string,
    readonly help: string,
    readonly buckets: readonly number[],
  ) {}
  observe(labels: Labels, value: number): void {
    const key = keyOf(labels);
    let series = this.#series.get(key);
    if (!series) this.#series.set(key, (series = { labels, counts: this.buckets.map(() => 0), sum: 0, count: 0 }));
    this.buckets.forEach((bound, i) => {
      if (value <= bound) series.counts[i]! += 1;
    });
    series.sum += value;
    series.count += 1;
  }
  render(): string[] {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} histogram`];
    for (const s of this.#series.values()) {
      this.buckets.forEach((bound, i) =>
        lines.push(`${this.name}_bucket${labelText({ ...s.labels, le: String(bound) })} ${s.counts[i]}`),
      );
      lines.push(`${this.name}_bucket${labelText({ ...s.labels, le: '+Inf' })} ${s.count}`);
      lines.push(
        `${this.name}_sum${labelText(s.labels)} ${s.sum}`,
        `${this.name}_count${labelText(s.labels)} ${s.count}`,
      );
    }
    return lines;
  }
}

export function createGatewayMetrics() {
  const httpRequests = new Counter(
    'gateway_http_requests_total',
    'HTTP requests answered, by method, route template and status.',
  );
  const httpDuration = new Histogram(
    'gateway_http_request_duration_seconds',
    'Time to answer, by method and route template.',
    [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
  );
  const webhookDeliveries = new Counter(
    'gateway_webhook_deliveries_total',
    'Registry deliveries received, by outcome (accepted, duplicate, or the refusal code).',
  );
  const workflowStarts = new Counter(
    'gateway_delivery_workflow_starts_total',
    'handleRegistryEvent starts, by outcome (started, failed).',
  );
  return {
    httpRequests,
    httpDuration,
    webhookDeliveries,
    workflowStarts,
    /** The exposition text; `extra` lines (gauges read at scrape time) are appended. */
    render(extra: string[] = []): string {
      return [
        ...httpRequests.render(),
        ...httpDuration.render(),
        ...webhookDeliveries.render(),
        ...workflowStarts.render(),
        ...extra,
        '',
      ].join('\n');
    },
  };
}
export type GatewayMetrics = ReturnType<typeof createGatewayMetrics>;

export function gaugeLines(name: string, help: string, series: Array<{ labels: Labels; value: number }>): string[] {
  return [
    `# HELP ${name} ${help}`,
    `# TYPE ${name} gauge`,
    ...series.map((s) => `${name}${labelText(s.labels)} ${s.value}`),
  ];
}
