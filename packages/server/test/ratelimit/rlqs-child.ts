/**
 * A data plane in its own process, for tests that kill it: reports `{name: api}` with 100 requests
 * on one RLQS stream to the port given, prints each grant it receives as a JSON line, and reports
 * again every second until killed.
 *
 *   node --conditions=floodgate-source --import tsx rlqs-child.ts <port> <domain>
 */
import { grantOf, RlqsClient } from './rlqs-support.js';

const client = new RlqsClient(Number(process.argv[2]));
const domain = process.argv[3] ?? 'edge';
let seen = 0;
const report = (): void => client.report(domain, [{ name: 'api' }], 100);
report();
setInterval(report, 1000);
setInterval(() => {
  while (seen < client.received.length)
    process.stdout.write(`${JSON.stringify({ grant: grantOf(client.received[seen++]) })}\n`);
}, 10);
