// What every HTTP example does once its server listens: a few requests to itself over loopback,
// printing each status and the rate-limit headers, so a run shows admission, then refusal.

/** sendRequests sends `count` GET requests to `url` one after another and prints what came back. */
export async function sendRequests(
  url: string,
  count: number,
  headers: Record<string, string> = {},
): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 1; i <= count; i++) {
    const response = await fetch(url, { headers });
    await response.text();
    statuses.push(response.status);
    const limit = response.headers.get('ratelimit') ?? '-';
    const retry = response.headers.get('retry-after');
    console.log(`  #${i} ${response.status} ratelimit: ${limit}${retry === null ? '' : `, retry-after: ${retry}`}`);
  }
  return statuses;
}
