/**
 * What the encryption upkeep covers beyond the blob store, registered by each domain at start-up
 * (src/domains.ts), one line per column, so a domain that lands later (run-task HMAC keys, VCS
 * tokens, plan JSON) is covered without touching this folder.
 */
export interface ColumnRef {
  table: string;
  idColumn: string;
  column: string;
}

const NAME = /^[a-z_][a-z0-9_]*$/;
const sealedColumns = new Map<string, ColumnRef>();
const blobColumns = new Map<string, ColumnRef>();

function add(into: Map<string, ColumnRef>, ref: ColumnRef): void {
  for (const name of [ref.table, ref.idColumn, ref.column]) {
    if (!NAME.test(name)) throw new Error(`not a plain SQL identifier: ${name}`);
  }
  into.set(`${ref.table}.${ref.column}`, ref);
}

/**
 * A text column holding values from secrets.encrypt() (it may mix them with JSON text, which can
 * never look like one): rotation re-encrypts them under the current key.
 */
export function registerSealedColumn(ref: ColumnRef): void {
  add(sealedColumns, ref);
}

/**
 * A column holding the key of a sensitive blob (null when there is none): a blob stored before
 * encryption is sealed to a new key and the column moved to it.
 */
export function registerSealedBlobColumn(ref: ColumnRef): void {
  add(blobColumns, ref);
}

export function sealedColumnsRegistered(): ColumnRef[] {
  return [...sealedColumns.values()];
}

export function blobColumnsRegistered(): ColumnRef[] {
  return [...blobColumns.values()];
}
