import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { ruleOf } from '../../src/ratelimit/quota/buckets.js';
import { domainsOf } from './support.js';
import { grantOf, RlqsClient, startQuotaServer, type QuotaServer } from './rlqs-support.js';

const path = (name: string): string => fileURLToPath(new URL(`../../../../examples/rlqs/${name}`, import.meta.url));
const envoy = parse(readFileSync(path('envoy.yaml'), 'utf8')) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
const domains = domainsOf(readFileSync(path('ratelimit.yaml'), 'utf8'), 'ratelimit.yaml');
const filter = envoy.static_resources.listeners[0].filter_chains[0].filters[0].typed_config.http_filters.find(
  (f: { name: string }) => f.name === 'envoy.filters.http.rate_limit_quota',
).typed_config;

/** bucketsOf returns the bucket ids the filter's matchers build, a custom (per-request) value filled with `sample`. */
function bucketsOf(sample: string): Array<Record<string, string>> {
  const actions = [
    ...filter.bucket_matchers.matcher_list.matchers.map((m: { on_match: { action: unknown } }) => m.on_match.action),
    filter.bucket_matchers.on_no_match.action,
  ] as Array<{ typed_config: { bucket_id_builder: { bucket_id_builder: Record<string, { string_value?: string }> } } }>;
  return actions.map((a) =>
    Object.fromEntries(
      Object.entries(a.typed_config.bucket_id_builder.bucket_id_builder).map(([k, v]) => [k, v.string_value ?? sample]),
    ),
  );
}

describe('the RLQS example of docs/rlqs.md (examples/rlqs)', () => {
  let server: QuotaServer | undefined;
  after(async () => server?.close());

  it("name a domain with a quota section, and floodgate's gRPC port (8081, as the doc's command) as the RLQS cluster", () => {
    assert.equal(
      filter['@type'],
      'type.googleapis.com/envoy.extensions.filters.http.rate_limit_quota.v3.RateLimitQuotaFilterConfig',
    );
    assert.equal(filter.rlqs_server.envoy_grpc.cluster_name, 'floodgate_rlqs');
    const cluster = envoy.static_resources.clusters.find((c: { name: string }) => c.name === 'floodgate_rlqs');
    assert.equal(cluster.load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address.port_value, 8081);
    const domain = domains.find((d) => d.domain === filter.domain);
    assert.ok(domain?.quota !== undefined, `domain ${String(filter.domain)} has a quota section`);
    // Every bucket the filter builds (a tenant header matching its t- prefix) has a rule.
    for (const bucket of bucketsOf('t-42'))
      assert.ok(ruleOf(domain.quota, bucket) !== undefined, JSON.stringify(bucket));
  });

  it('answer the buckets the filter builds with token-bucket assignments of their budgets', async () => {
    server = await startQuotaServer({ domains });
    const client = new RlqsClient(server.port);
    const buckets = bucketsOf('t-42');
    client.report(filter.domain as string, buckets, 5, 0);
    await client.until(() => client.received.length === buckets.length, 'an assignment per bucket');
    assert.deepEqual(
      buckets.map((b) => grantOf(client.latestOf(b))),
      [100, 1000],
    );
    client.close();
  });
});
