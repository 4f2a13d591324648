import { createHash } from 'node:crypto';
import { Hono } from 'hono';
import type { WebEnv } from './security.js';

/**
 * The UI's only stylesheet and script, served by Terrace itself (it runs air-gapped: no CDN, no
 * external fonts). The script is progressive enhancement: every page works without it.
 */
const CSS = `
:root{--fg:#1b1f24;--muted:#4a5360;--bg:#fff;--panel:#f5f7fa;--line:#d5dbe3;--accent:#0b5cad;--accent-fg:#fff;--bad:#a4141b;--ok:#17663a;font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
*{box-sizing:border-box}body{margin:0;line-height:1.5}
a{color:var(--accent)}a:focus-visible,button:focus-visible,input:focus-visible,select:focus-visible,summary:focus-visible{outline:3px solid #f0a500;outline-offset:2px}
.skip{position:absolute;left:-999px}.skip:focus{left:8px;top:8px;background:var(--bg);padding:4px 8px;z-index:2}
header.top{display:flex;gap:1.5rem;align-items:center;padding:.6rem 1.5rem;background:#14253d;color:#fff}
header.top a{color:#fff;text-decoration:none}header.top a:hover{text-decoration:underline}
header.top .brand{font-weight:700;font-size:1.15rem}header.top nav ul{display:flex;gap:1rem;list-style:none;margin:0;padding:0}
header.top .who{margin-left:auto;display:flex;gap:.75rem;align-items:center}
header.top .who button{background:transparent;color:#fff;border:1px solid #8aa0bd;border-radius:4px;padding:.15rem .6rem;cursor:pointer}
main{max-width:72rem;margin:0 auto;padding:1.25rem 1.5rem 3rem}
footer{max-width:72rem;margin:0 auto;padding:1rem 1.5rem;color:var(--muted);font-size:.85rem;border-top:1px solid var(--line)}
h1{font-size:1.6rem;margin:.5rem 0 1rem}h2{font-size:1.2rem;margin:1.5rem 0 .5rem}
table{border-collapse:collapse;width:100%;margin:.5rem 0 1rem}th,td{text-align:left;padding:.4rem .5rem;border-bottom:1px solid var(--line);vertical-align:top}
th{background:var(--panel);font-weight:600}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.9em}
pre{background:var(--panel);border:1px solid var(--line);border-radius:6px;padding:.75rem;overflow:auto}
form.inline{display:inline}label{font-weight:600;display:block;margin:.5rem 0 .25rem}
input[type=text],input[type=search],input[type=password],select{font:inherit;padding:.4rem .5rem;border:1px solid #7b8794;border-radius:4px;min-width:18rem}
button,.button{font:inherit;background:var(--accent);color:var(--accent-fg);border:0;border-radius:4px;padding:.4rem .9rem;cursor:pointer;text-decoration:none;display:inline-block}
button.secondary{background:#e4e9f0;color:var(--fg)}button.danger{background:var(--bad)}
.cards{list-style:none;padding:0;display:grid;grid-template-columns:repeat(auto-fill,minmax(20rem,1fr));gap:.75rem}
.cards li{border:1px solid var(--line);border-radius:6px;padding:.75rem 1rem}.cards li p{margin:.25rem 0;color:var(--muted)}
.muted{color:var(--muted)}.badge{display:inline-block;border-radius:10px;padding:0 .5rem;font-size:.8rem;background:#e4e9f0}
.badge.errored{background:#fde2e2;color:var(--bad)}.badge.ok{background:#dcf3e4;color:var(--ok)}.badge.pending{background:#fff1c9;color:#5c4500}
.notice{border-left:4px solid var(--accent);background:var(--panel);padding:.5rem 1rem;margin:1rem 0}
.notice.error{border-color:var(--bad)}.secret{font-family:ui-monospace,monospace;word-break:break-all;background:#fff1c9;padding:.5rem;border-radius:4px}
.module-head{display:flex;flex-wrap:wrap;gap:1rem;align-items:flex-end;justify-content:space-between}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem}dl.facts dt{font-weight:600}dl.facts dd{margin:0}
ul.outcomes{list-style:none;padding:0}ul.outcomes li{border:1px solid var(--line);border-radius:6px;padding:.25rem 1rem;margin:.5rem 0}
.readme img{max-width:100%}.readme{border:1px solid var(--line);border-radius:6px;padding:0 1.25rem}
details.section{border:1px solid var(--line);border-radius:6px;margin:.75rem 0;padding:.25rem 1rem}details.section>summary{font-weight:600;cursor:pointer;padding:.4rem 0}
.chart{display:block;max-width:100%;height:auto}.chart rect{fill:var(--accent)}
nav.tabs ul{list-style:none;display:flex;gap:.25rem;padding:0;border-bottom:1px solid var(--line);flex-wrap:wrap}
nav.tabs a{display:block;padding:.35rem .8rem;text-decoration:none;border:1px solid transparent;border-bottom:0;border-radius:6px 6px 0 0}
nav.tabs a[aria-current=page]{border-color:var(--line);background:var(--bg);font-weight:600}
form.filters{display:flex;flex-wrap:wrap;gap:.5rem 1.5rem;align-items:flex-end;margin:1rem 0}
form.filters fieldset{border:1px solid var(--line);border-radius:6px;padding:.1rem .75rem .4rem;margin:0}form.filters legend{font-weight:600;padding:0 .25rem}
form.filters label.check{display:inline-flex;gap:.35rem;align-items:center;font-weight:400;margin:.2rem .9rem .2rem 0}form.filters .muted{flex-basis:100%;margin:0}form.filters .actions a{margin-left:.75rem}td time{white-space:nowrap}td>p.muted{margin:.2rem 0 0}
input[type=datetime-local]{font:inherit;padding:.35rem .5rem;border:1px solid #7b8794;border-radius:4px}
ul.pager{list-style:none;display:flex;gap:1.5rem;padding:0}
`;

const JS = `
(function(){
  'use strict';
  // Search as you type: the GET form keeps working without this script.
  var form=document.querySelector('form[data-live-search]');
  if(form){
    var input=form.querySelector('input[type=search]');var out=document.getElementById('results');var timer=null;var seq=0;
    input.addEventListener('input',function(){
      clearTimeout(timer);
      timer=setTimeout(function(){
        var params=new URLSearchParams(new FormData(form));var mine=++seq;
        fetch(form.getAttribute('data-live-search')+'?'+params.toString(),{credentials:'same-origin',headers:{'Accept':'text/html'}})
          .then(function(r){return r.ok?r.text():null}).then(function(html){
            if(html===null||mine!==seq)return;
            out.innerHTML=html;history.replaceState(null,'',form.getAttribute('action')+'?'+params.toString());
          }).catch(function(){});
      },250);
    });
  }
  // Copy the usage snippet.
  document.querySelectorAll('button[data-copy]').forEach(function(b){
    b.hidden=false;
    b.addEventListener('click',function(){
      var el=document.getElementById(b.getAttribute('data-copy'));
      if(!el||!navigator.clipboard)return;
      navigator.clipboard.writeText(el.textContent).then(function(){b.textContent='Copied';setTimeout(function(){b.textContent='Copy'},1500)});
    });
  });
  // The version switcher navigates on change; its button is the no-script way.
  document.querySelectorAll('select[data-autosubmit]').forEach(function(s){
    s.addEventListener('change',function(){s.form.submit()});
  });
})();
`;

function asset(body: string, type: string) {
  const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 16)}"`;
  return { body, type, etag };
}

const ASSETS: Record<string, ReturnType<typeof asset>> = {
  'terrace.css': asset(CSS.trim(), 'text/css; charset=utf-8'),
  'terrace.js': asset(JS.trim(), 'text/javascript; charset=utf-8'),
};

export function assetRoutes(): Hono<WebEnv> {
  const app = new Hono<WebEnv>();
  for (const [name, a] of Object.entries(ASSETS)) {
    app.get(`/app/assets/${name}`, (c) => {
      const headers = { 'Content-Type': a.type, ETag: a.etag, 'Cache-Control': 'public, max-age=300' };
      if (c.req.header('if-none-match') === a.etag) return c.body(null, 304, headers);
      return c.body(a.body, 200, headers);
    });
  }
  return app;
}
