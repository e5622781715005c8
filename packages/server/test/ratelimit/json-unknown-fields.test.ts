/**
 * The JSON API refuses a field the request message does not define, as Go's envoyproxy/ratelimit
 * does (its `/json` reads with protojson, which refuses unknown fields): 400 naming the field, at
 * any depth, against a real `floodgate ratelimit` process. A misspelt `hits_adend` would otherwise
 * count one hit in silence. Both spellings protojson accepts (`hits_addend`, `hitsAddend`) pass.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startServiceProcess, type ServiceProcess } from './processes.js';
import { fixturePath, postJson, rl } from './support.js';

describe('the JSON API refuses unknown fields', () => {
  let service: ServiceProcess;

  before(async () => {
    service = await startServiceProcess(['--config', fixturePath('example.yaml')]);
  });
  after(async () => {
    await service?.stop();
  });

  const refused = [
    ['hits_adend', { ...rl('rl', [[['foo', 'a']]]), hits_adend: 5 }],
    [
      'descriptors[0].hitsAdend',
      { domain: 'rl', descriptors: [{ entries: [{ key: 'foo', value: 'a' }], hitsAdend: 2 }] },
    ],
    ['descriptors[0].entries[0].vaule', { domain: 'rl', descriptors: [{ entries: [{ key: 'foo', vaule: 'a' }] }] }],
    [
      'descriptors[0].limit.request_per_unit',
      {
        domain: 'rl',
        descriptors: [{ entries: [{ key: 'foo', value: 'a' }], limit: { request_per_unit: 3, unit: 'SECOND' } }],
      },
    ],
  ] as const;
  for (const [field, body] of refused)
    it(`POST /json answers 400 naming ${field}`, async () => {
      const answer = await postJson(service.httpPort, '/json', body);
      assert.equal(answer.status, 400);
      const error = answer.json.error as { code: string; field: string; message: string };
      assert.equal(error.code, 'INVALID_REQUEST');
      assert.equal(error.field, field);
      assert.match(error.message, /is not a field of the request; expected/);
    });

  it('takes the fields protojson knows, in both spellings, and /v1/decide its mode', async () => {
    const known = {
      domain: 'rl',
      hitsAddend: 1,
      descriptors: [{ entries: [{ key: 'foo', value: 'b' }], hits_addend: 1 }],
    };
    assert.equal((await postJson(service.httpPort, '/json', known)).status, 200);
    assert.equal((await postJson(service.httpPort, '/v1/decide', { ...known, mode: 'peek' })).status, 200);
    const misspelt = await postJson(service.httpPort, '/v1/decide', { ...known, mdoe: 'peek' });
    assert.equal(misspelt.status, 400);
    assert.equal((misspelt.json.error as { field: string }).field, 'mdoe');
  });
});
