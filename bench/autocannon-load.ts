// Load generator used when wrk is not installed: autocannon's programmatic API, run in its own
// (pinned) process by bench/load.ts. Each request GETs a random path from the paths file.
//
//   npx tsx bench/autocannon-load.ts <config.json>
//   config: { url, pathsFile, connections, durationSeconds, headers }
import fs from 'node:fs';
import autocannon from 'autocannon';

interface Config {
  url: string;
  pathsFile: string;
  connections: number;
  durationSeconds: number;
  headers: Record<string, string>;
}

async function main(): Promise<void> {
  const config = JSON.parse(fs.readFileSync(process.argv[2]!, 'utf8')) as Config;
  const paths = fs.readFileSync(config.pathsFile, 'utf8').split('\n').filter(Boolean);
  if (paths.length === 0) throw new Error(`no paths in ${config.pathsFile}`);
  const result = await autocannon({
    url: config.url,
    connections: config.connections,
    duration: config.durationSeconds,
    headers: config.headers,
    requests: [
      {
        method: 'GET',
        setupRequest: (req) => ({ ...req, path: paths[Math.floor(Math.random() * paths.length)] }),
      },
    ],
  });
  const summary = {
    requests: result.requests.total,
    seconds: result.duration,
    errors: result.errors,
    timeouts: result.timeouts,
    non2xx: result.non2xx,
    // autocannon records latencies in milliseconds, at millisecond resolution.
    p50_ms: result.latency.p50,
    p90_ms: result.latency.p90,
    p99_ms: result.latency.p99,
    max_ms: result.latency.max,
    mean_ms: result.latency.mean,
  };
  process.stdout.write(`AC_JSON ${JSON.stringify(summary)}\n`);
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
