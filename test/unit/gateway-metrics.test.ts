import { describe, expect, it } from 'vitest';
import { createGatewayMetrics, gaugeLines } from '../../src/gateway/http/metrics.js';

describe('gateway Prometheus metrics', () => {
  it('renders counters and cumulative histogram buckets in the text exposition format', () => {
    const metrics = createGatewayMetrics();
    metrics.httpRequests.inc({ method: 'POST', route: '/v1/tenants', status: '202' });
    metrics.httpRequests.inc({ method: 'POST', route: '/v1/tenants', status: '202' });
    metrics.httpDuration.observe({ method: 'GET', route: '/healthz' }, 0.003);
    metrics.httpDuration.observe({ method: 'GET', route: '/healthz' }, 0.2);
    metrics.webhookDeliveries.inc({ outcome: 'SIGNATURE_MISMATCH' });
    const text = metrics.render(
      gaugeLines('gateway_webhook_inbox_deliveries', 'Inbox.', [{ labels: { state: 'pending' }, value: 4 }]),
    );
    expect(text).toContain('# TYPE gateway_http_requests_total counter');
    expect(text).toContain('gateway_http_requests_total{method="POST",route="/v1/tenants",status="202"} 2');
    expect(text).toContain('gateway_http_request_duration_seconds_bucket{method="GET",route="/healthz",le="0.0025"} 0');
    expect(text).toContain('gateway_http_request_duration_seconds_bucket{method="GET",route="/healthz",le="0.005"} 1');
    expect(text).toContain('gateway_http_request_duration_seconds_bucket{method="GET",route="/healthz",le="0.25"} 2');
    expect(text).toContain('gateway_http_request_duration_seconds_bucket{method="GET",route="/healthz",le="+Inf"} 2');
    expect(text).toContain('gateway_http_request_duration_seconds_count{method="GET",route="/healthz"} 2');
    expect(text).toContain('gateway_webhook_deliveries_total{outcome="SIGNATURE_MISMATCH"} 1');
    expect(text).toContain('gateway_webhook_inbox_deliveries{state="pending"} 4');
    expect(text.endsWith('\n')).toBe(true);
  });

  it('escapes label values', () => {
    const metrics = createGatewayMetrics();
    metrics.httpRequests.inc({ method: 'GET', route: 'a"b\\c\nd', status: '404' });
    expect(metrics.render()).toContain('route="a\\"b\\\\c\\nd"');
  });
});
