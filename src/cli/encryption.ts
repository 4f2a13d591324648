// Site administration: where encryption at rest stands (GET /api/v2/admin/encryption).
import type { Command } from './command.js';
import { table } from './ui.js';

const count = (byKey: Record<string, number>) =>
  Object.entries(byKey)
    .map(([k, n]) => `${k}=${n}`)
    .join(', ') || '-';

export const encryptionCommands: Command[] = [
  {
    name: 'admin encryption-status',
    summary: 'Show the encryption at rest status: current key, data per key id, the upkeep job (site admins)',
    details:
      'Blobs and secrets still under a key other than the current one are re-wrapped by the upkeep job, which a restart with a new current key queues. ' +
      'An older key may be removed from TERRACE_ENCRYPTION_KEYS once "complete" is yes.',
    async run(ctx) {
      const api = await ctx.api();
      const res = await api.api('GET', 'admin/encryption', undefined, 'reading the encryption status (site admins only)');
      const a = res.json.data.attributes;
      ctx.emit(res.json.data, () => {
        const p = a.job.progress;
        const rows = [
          { field: 'current key', value: a['current-key-id'] },
          { field: 'configured keys', value: (a['configured-key-ids'] as string[]).join(', ') },
          { field: 'blobs by key', value: count(a['blobs-by-key-id']) },
          { field: 'secrets by key', value: count(a['secrets-by-key-id']) },
          { field: 'plaintext blobs', value: a['plaintext-blobs'] },
          { field: 'missing keys', value: (a['missing-key-ids'] as string[]).join(', ') || null },
          { field: 'complete', value: a.complete ? 'yes' : 'no' },
          { field: 'upkeep job', value: a.job.state + (a.job['next-run-at'] ? ` (next run ${a.job['next-run-at']})` : '') },
          ...(p ? [{ field: 'progress', value: `${p.step}: rewrapped ${p.rewrapped}, re-encrypted ${p.reencrypted}, sealed ${p.sealed}, missing ${p.missing}` }] : []),
          ...(a.job['last-error'] ? [{ field: 'last error', value: a.job['last-error'] }] : []),
        ];
        table(ctx, rows, ['field', 'value']);
      });
    },
  },
];
