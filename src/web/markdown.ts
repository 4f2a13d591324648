import path from 'node:path';
import { createRequire } from 'node:module';
import type MarkdownIt from 'markdown-it';

type Token = ReturnType<MarkdownIt['parse']>[number];

/**
 * A module README is untrusted. markdown-it with html: false escapes every raw HTML tag (script,
 * svg, img with onerror…) into text; what is left to police is URLs:
 * - links: http(s) and mailto keep (they leave only when clicked); #anchors keep; a relative link
 *   naming one of the module's submodules or examples points at its section on this page; every
 *   other URL (javascript:, data:, vbscript:, paths outside the module) is dropped, its text kept;
 * - images never load from anywhere: a page must make no request to another origin, and the
 *   module's own files are not served to browsers. An http(s) image becomes a link to it, any
 *   other image its alt text.
 */
let instance: MarkdownIt | undefined;

/** markdown-it, loaded on the first README rendered: it is not needed to serve the registry, and start-up stays short. */
function markdown(): MarkdownIt {
  if (instance) return instance;
  const Ctor = createRequire(import.meta.url)('markdown-it') as typeof MarkdownIt;
  const md = new Ctor({ html: false, linkify: true, typographer: false });
  // Our own rules below decide; markdown-it's check would drop some URLs before they reach them.
  md.validateLink = () => true;
  md.renderer.rules.image = renderImage(md);
  return (instance = md);
}

const EXTERNAL = /^(https?:\/\/|mailto:)/i;

/** Where a relative link inside the module goes on the module page, or null to drop it. */
function moduleAnchor(href: string, sections: Map<string, string>): string | null {
  if (/^[a-z][a-z0-9+.-]*:/i.test(href) || href.startsWith('//') || href.startsWith('/') || href.includes('\\')) return null;
  const cleaned = path.posix.normalize(decodeSafe(href.split(/[?#]/)[0]!)).replace(/\/(README\.md)?$/i, '');
  if (cleaned.startsWith('..')) return null;
  for (const [dir, anchor] of sections) if (cleaned === dir || cleaned.startsWith(`${dir}/`)) return anchor;
  return null;
}

function decodeSafe(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);

function policeLinks(children: Token[], sections: Map<string, string>): void {
  const dropped: boolean[] = [];
  for (const t of children) {
    // An image inside a kept link (a badge) cannot become a link itself: links do not nest.
    if (t.type === 'image') t.meta = { insideLink: dropped.some((d) => !d) };
    if (t.type === 'link_open') {
      const href = (t.attrGet('href') ?? '').trim();
      let target: string | null = null;
      if (EXTERNAL.test(href)) target = href;
      else if (href.startsWith('#')) target = href;
      else target = moduleAnchor(href, sections);
      dropped.push(target === null);
      if (target === null) {
        t.type = 'text';
        t.content = '';
      } else {
        t.attrSet('href', target);
        if (EXTERNAL.test(target)) t.attrSet('rel', 'nofollow noopener noreferrer');
      }
    } else if (t.type === 'link_close') {
      if (dropped.pop()) {
        t.type = 'text';
        t.content = '';
      }
    }
  }
}

const renderImage = (md: MarkdownIt): NonNullable<MarkdownIt['renderer']['rules']['image']> => (tokens, idx) => {
  const t = tokens[idx]!;
  const src = (t.attrGet('src') ?? '').trim();
  const alt = t.children ? md.renderer.renderInlineAsText(t.children, md.options, {}) : t.content;
  const external = /^https?:\/\//i.test(src);
  if (external && !t.meta?.insideLink) return `<a href="${escapeHtml(src)}" rel="nofollow noopener noreferrer">${escapeHtml(alt || src)}</a>`;
  const text = alt || (external ? src : '');
  return text ? `<span class="muted">${escapeHtml(text)}</span>` : '';
};

/** sections: module-relative directories (modules/x, examples/y) and the anchors of their sections. */
export function renderReadme(source: string, sections: Map<string, string>): string {
  const md = markdown();
  const tokens = md.parse(source, {});
  for (const t of tokens) if (t.type === 'inline' && t.children) policeLinks(t.children, sections);
  return md.renderer.render(tokens, md.options, {});
}
