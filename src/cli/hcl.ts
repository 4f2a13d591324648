// A reader for Terraform's CLI configuration files (~/.terraformrc, *.tfrc). They are HCL 1, which
// the module parser in the server (HCL 2) does not read faithfully, and the CLI needs only a
// small part: blocks with labels, attributes, strings, objects and lists.

export type HclValue = string | number | boolean | null | HclValue[] | { [key: string]: HclValue };
export interface HclItem { key: string; labels: string[]; value?: HclValue; body?: HclItem[] }

type Tok = { t: 'str' | 'ident' | 'num' | 'punct'; v: string; line: number };

export class HclSyntaxError extends Error {}

function tokenize(src: string): Tok[] {
  const out: Tok[] = [];
  let i = 0;
  let line = 1;
  const err = (msg: string) => new HclSyntaxError(`line ${line}: ${msg}`);
  while (i < src.length) {
    const c = src[i]!;
    if (c === '\n') { line++; i++; continue; }
    if (/\s/.test(c)) { i++; continue; }
    if (c === '#' || (c === '/' && src[i + 1] === '/')) {
      while (i < src.length && src[i] !== '\n') i++;
      continue;
    }
    if (c === '/' && src[i + 1] === '*') {
      const end = src.indexOf('*/', i + 2);
      if (end < 0) throw err('unterminated /* comment');
      line += src.slice(i, end).split('\n').length - 1;
      i = end + 2;
      continue;
    }
    if (c === '"') {
      let s = '';
      i++;
      for (;;) {
        const d = src[i];
        if (d === undefined || d === '\n') throw err('unterminated string');
        i++;
        if (d === '"') break;
        if (d === '\\') {
          const e = src[i++];
          const simple: Record<string, string> = { n: '\n', t: '\t', r: '\r', '"': '"', '\\': '\\' };
          if (e !== undefined && e in simple) s += simple[e];
          else if (e === 'u') { s += String.fromCharCode(parseInt(src.slice(i, i + 4), 16)); i += 4; }
          else s += `\\${e ?? ''}`;
        } else s += d;
      }
      out.push({ t: 'str', v: s, line });
      continue;
    }
    if (c === '<' && src[i + 1] === '<') {
      const m = /^<<-?([A-Za-z_][A-Za-z0-9_]*)\r?\n/.exec(src.slice(i));
      if (!m) throw err('malformed heredoc');
      const start = i + m[0].length;
      const end = new RegExp(`^[ \\t]*${m[1]}[ \\t]*$`, 'm');
      const rest = src.slice(start);
      const found = end.exec(rest);
      if (!found) throw err(`heredoc ${m[1]} is not terminated`);
      out.push({ t: 'str', v: rest.slice(0, found.index).replace(/\r?\n$/, ''), line });
      line += rest.slice(0, found.index + found[0].length).split('\n').length;
      i = start + found.index + found[0].length;
      continue;
    }
    if ('{}[]=,:'.includes(c)) { out.push({ t: 'punct', v: c, line }); i++; continue; }
    const num = /^-?\d+(\.\d+)?([eE][+-]?\d+)?/.exec(src.slice(i));
    if (num) { out.push({ t: 'num', v: num[0], line }); i += num[0].length; continue; }
    const id = /^[A-Za-z_][A-Za-z0-9_.-]*/.exec(src.slice(i));
    if (id) { out.push({ t: 'ident', v: id[0], line }); i += id[0].length; continue; }
    throw err(`unexpected character ${JSON.stringify(c)}`);
  }
  return out;
}

export function parseHcl(src: string): HclItem[] {
  const toks = tokenize(src);
  let p = 0;
  const peek = () => toks[p];
  const err = (msg: string) => new HclSyntaxError(`line ${peek()?.line ?? 'end'}: ${msg}`);
  const isPunct = (v: string) => peek()?.t === 'punct' && peek()!.v === v;

  function body(closing: boolean): HclItem[] {
    const items: HclItem[] = [];
    for (;;) {
      const tok = peek();
      if (!tok) {
        if (closing) throw err('missing "}"');
        return items;
      }
      if (tok.t === 'punct' && tok.v === '}') {
        if (!closing) throw err('unexpected "}"');
        p++;
        return items;
      }
      if (tok.t === 'punct' && tok.v === ',') { p++; continue; }
      if (tok.t !== 'ident' && tok.t !== 'str') throw err(`expected a name, found ${JSON.stringify(tok.v)}`);
      p++;
      const item: HclItem = { key: tok.v, labels: [] };
      while (peek() && (peek()!.t === 'str' || peek()!.t === 'ident')) item.labels.push(toks[p++]!.v);
      if (isPunct('=') || isPunct(':')) {
        p++;
        item.value = value();
      } else if (isPunct('{')) {
        p++;
        item.body = body(true);
      } else throw err(`expected "=" or "{" after ${JSON.stringify(tok.v)}`);
      items.push(item);
    }
  }

  function value(): HclValue {
    const tok = toks[p++];
    if (!tok) throw err('expected a value');
    if (tok.t === 'str') return tok.v;
    if (tok.t === 'num') return Number(tok.v);
    if (tok.t === 'ident') return tok.v === 'true' ? true : tok.v === 'false' ? false : tok.v === 'null' ? null : tok.v;
    if (tok.v === '[') {
      const list: HclValue[] = [];
      for (;;) {
        if (isPunct(']')) { p++; return list; }
        if (isPunct(',')) { p++; continue; }
        list.push(value());
      }
    }
    if (tok.v === '{') return toObject(body(true));
    throw err(`unexpected ${JSON.stringify(tok.v)}`);
  }

  return body(false);
}

/** An object body (`{ a = 1, "b" = 2 }`) as a plain record. */
export function toObject(items: HclItem[]): { [key: string]: HclValue } {
  const o: { [key: string]: HclValue } = {};
  for (const it of items) o[it.key] = it.body ? toObject(it.body) : (it.value ?? null);
  return o;
}
