import http from 'node:http';

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/**
 * One HTTP request sent exactly as given: the request target is not normalized or re-encoded
 * (fetch would resolve "..", re-encode unicode and refuse some header values), headers may
 * repeat, and the body is sent with an exact Content-Length (or chunked).
 */
export function rawRequest(
  baseUrl: string,
  method: string,
  target: string,
  headers: [string, string][],
  body?: Buffer,
  chunked = false,
): Promise<RawResponse> {
  const base = new URL(baseUrl);
  // With a raw header list Node adds no defaults, Host included.
  const flat: string[] = ['Host', base.host];
  for (const [k, v] of headers) flat.push(k, v);
  // One connection per request: a refusal that leaves a body unread may close it, and a reused
  // socket would then turn the next request into a hang-up that is no answer of the app.
  if (chunked) flat.push('Transfer-Encoding', 'chunked');
  else flat.push('Content-Length', String(body?.length ?? 0));
  flat.push('Connection', 'close');
  return new Promise((resolve, reject) => {
    const req = http.request({ host: base.hostname, port: base.port, method, path: target, headers: flat, agent: false });
    req.setTimeout(30_000, () => req.destroy(new Error(`no answer within 30 s to ${method} ${target.slice(0, 200)}`)));
    req.on('error', reject);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    if (chunked && body) {
      // A few chunks, so the server sees a body arrive in pieces.
      const step = Math.max(1, Math.ceil(body.length / 3));
      for (let i = 0; i < body.length; i += step) req.write(body.subarray(i, i + step));
      req.end();
    } else req.end(body);
  });
}
