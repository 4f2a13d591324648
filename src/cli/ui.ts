// Rendering and prompting shared by the commands.
import type { Api } from './client.js';
import type { Ctx } from './command.js';
import { usageError } from './errors.js';

/** Aligned columns with a header row; empty tables say so. */
export function table(ctx: Ctx, rows: Record<string, unknown>[], columns: string[], empty = 'none'): void {
  if (rows.length === 0) return ctx.out(`(${empty})`);
  const cells = rows.map((r) => columns.map((c) => (r[c] === null || r[c] === undefined ? '-' : String(r[c]))));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i]!.length)));
  const line = (vals: string[]) => vals.map((v, i) => (i === vals.length - 1 ? v : v.padEnd(widths[i]!))).join('  ');
  ctx.out(line(columns.map((c) => c.toUpperCase())));
  for (const row of cells) ctx.out(line(row));
}

/** Every page of a JSON:API collection (page[size]=100). */
export async function allPages(api: Api, rel: string, what: string): Promise<any[]> {
  const out: any[] = [];
  for (let page = 1; ; page++) {
    const sep = rel.includes('?') ? '&' : '?';
    const res = await api.api('GET', `${rel}${sep}page%5Bnumber%5D=${page}&page%5Bsize%5D=100`, undefined, what);
    const data = Array.isArray(res.json?.data) ? res.json.data : [];
    out.push(...data);
    const next = res.json?.meta?.pagination?.['next-page'];
    if (!next || data.length === 0) return out;
  }
}

/** Reads one line from stdin; on a terminal, hides what is typed when secret. */
export async function prompt(ctx: Ctx, question: string, secret = false): Promise<string> {
  ctx.stderr.write(question);
  const stdin = ctx.stdin;
  const raw = secret && stdin.isTTY && typeof stdin.setRawMode === 'function';
  if (raw) stdin.setRawMode!(true);
  return new Promise((resolve, reject) => {
    let buf = '';
    const onData = (chunk: Buffer | string) => {
      for (const ch of chunk.toString('utf8')) {
        if (ch === '\u0003') return finish(new Error('interrupted'));
        if (ch === '\r' || ch === '\n') return finish();
        if (raw && (ch === '\u007f' || ch === '\b')) buf = buf.slice(0, -1);
        else buf += ch;
      }
    };
    const onEnd = () => finish();
    const finish = (err?: Error) => {
      stdin.removeListener('data', onData);
      stdin.removeListener('end', onEnd);
      if (raw) stdin.setRawMode!(false);
      stdin.pause();
      if (raw) ctx.stderr.write('\n');
      if (err) reject(err);
      else resolve(buf.trim());
    };
    stdin.on('data', onData);
    stdin.on('end', onEnd);
    stdin.resume();
  });
}

/** Destructive commands need --yes, or a "yes" typed at a terminal. */
export async function confirm(ctx: Ctx, yes: boolean, question: string): Promise<void> {
  if (yes) return;
  if (!ctx.stdin.isTTY) throw usageError(`${question}: refusing without confirmation`, 'add --yes to confirm');
  const answer = await prompt(ctx, `${question}? Type "yes" to confirm: `);
  if (answer !== 'yes') throw usageError('not confirmed; nothing was changed');
}

export const mib = (n: number) => (n >= 1024 * 1024 ? `${(n / 1024 / 1024).toFixed(1)} MiB` : n >= 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${n} B`);

/** A module address: <namespace>/<name>/<provider>. */
export function parseAddress(raw: string | undefined): { namespace: string; name: string; provider: string } {
  const parts = (raw ?? '').split('/');
  if (parts.length !== 3 || parts.some((p) => !p)) {
    throw usageError(`"${raw ?? ''}" is not a module address`, 'write it as <organization>/<name>/<provider>, for example acme/network/aws');
  }
  return { namespace: parts[0]!, name: parts[1]!, provider: parts[2]! };
}
