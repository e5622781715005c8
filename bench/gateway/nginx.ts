/**
 * The nginx peer of the gateway benchmark (Debian's nginx-light): one worker, its own prefix under
 * the run's temp folder, `limit_req` per client address (`$binary_remote_addr`), keep-alive to
 * the upstream, and the same four forwarding headers as the gateway (`X-Forwarded-For`, `-Proto`,
 * `-Host` from the client's `Host`, and a `Forwarded` element). nginx cannot say how much of a
 * limit is left, so it sends a constant `RateLimit-Policy` and no `RateLimit` field. A refusal
 * is `limit_req_status 429` answered by a named location with `Retry-After`,
 * `Cache-Control: no-store` and the gateway's problem+json body.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** NGINX is the binary the benchmark runs; the nginx cells are left out when it is missing. */
export const NGINX = '/usr/sbin/nginx';

/** NginxLimit is the `limit_req` setting: its `rate` (`100r/s`, or `1r/m`, nginx's slowest) and `burst`. */
export interface NginxLimit {
  readonly rate: string;
  readonly burst: number;
  /** What `RateLimit-Policy` and `Retry-After` say (constants: nginx knows no remaining). */
  readonly policy: string;
  readonly retryAfterSeconds: number;
}

/** writeNginxConf writes nginx.conf under `prefix` and returns the argument list that runs it in the foreground. */
export async function writeNginxConf(
  prefix: string,
  options: { port: number; upstreamPort: number; limit: NginxLimit },
): Promise<string[]> {
  await mkdir(join(prefix, 'tmp'), { recursive: true });
  const { port, upstreamPort, limit } = options;
  const problem = JSON.stringify({
    type: 'https://iana.org/assignments/http-problem-types#quota-exceeded',
    title: 'Request cannot be satisfied as assigned quota has been exceeded',
    status: 429,
    'violated-policies': ['per-client'],
  });
  const conf = `worker_processes 1;
pid ${prefix}/nginx.pid;
error_log ${prefix}/error.log crit;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${prefix}/tmp/body; proxy_temp_path ${prefix}/tmp/proxy; fastcgi_temp_path ${prefix}/tmp/fcgi;
  uwsgi_temp_path ${prefix}/tmp/uwsgi; scgi_temp_path ${prefix}/tmp/scgi;
  limit_req_zone $binary_remote_addr zone=perip:10m rate=${limit.rate};
  limit_req_status 429;
  limit_req_log_level info;
  upstream backend { server 127.0.0.1:${upstreamPort}; keepalive 64; }
  server {
    listen 127.0.0.1:${port};
    location / {
      limit_req zone=perip${limit.burst > 0 ? ` burst=${limit.burst}` : ''} nodelay;
      error_page 429 = @limited;
      proxy_pass http://backend;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host 127.0.0.1:${upstreamPort};
      proxy_set_header X-Forwarded-For $remote_addr;
      proxy_set_header X-Forwarded-Proto $scheme;
      proxy_set_header X-Forwarded-Host $http_host;
      proxy_set_header Forwarded "for=$remote_addr;host=\\"$http_host\\";proto=$scheme";
      add_header RateLimit-Policy '${limit.policy}';
    }
    location @limited {
      default_type application/problem+json;
      add_header RateLimit-Policy '${limit.policy}' always;
      add_header Retry-After ${limit.retryAfterSeconds} always;
      add_header Cache-Control no-store always;
      return 429 '${problem}';
    }
  }
}
`;
  await writeFile(join(prefix, 'nginx.conf'), conf);
  return ['-p', prefix, '-e', join(prefix, 'error.log'), '-c', join(prefix, 'nginx.conf'), '-g', 'daemon off;'];
}
