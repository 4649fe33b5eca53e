/**
 * Model text as HTML that cannot run anything. marked parses; every renderer that
 * could let markup through is replaced: raw HTML is shown as text, links keep only
 * http(s) and mailto targets (anything else, `javascript:` included, is plain
 * text), images become links, and code is highlighted by highlight.js (whose
 * output is escaped). The webview's CSP forbids inline script on top of this.
 */

import hljs from 'highlight.js/lib/core';
import bash from 'highlight.js/lib/languages/bash';
import c from 'highlight.js/lib/languages/c';
import cpp from 'highlight.js/lib/languages/cpp';
import css from 'highlight.js/lib/languages/css';
import diff from 'highlight.js/lib/languages/diff';
import go from 'highlight.js/lib/languages/go';
import ini from 'highlight.js/lib/languages/ini';
import java from 'highlight.js/lib/languages/java';
import javascript from 'highlight.js/lib/languages/javascript';
import json from 'highlight.js/lib/languages/json';
import python from 'highlight.js/lib/languages/python';
import rust from 'highlight.js/lib/languages/rust';
import sql from 'highlight.js/lib/languages/sql';
import typescript from 'highlight.js/lib/languages/typescript';
import xml from 'highlight.js/lib/languages/xml';
import yaml from 'highlight.js/lib/languages/yaml';
import { Marked, type Tokens } from 'marked';

for (const [name, lang] of Object.entries({
  bash,
  c,
  cpp,
  css,
  diff,
  go,
  ini,
  java,
  javascript,
  json,
  python,
  rust,
  sql,
  typescript,
  xml,
  yaml,
})) {
  hljs.registerLanguage(name, lang);
}
hljs.registerAliases(['sh', 'shell', 'zsh', 'console'], { languageName: 'bash' });
hljs.registerAliases(['py'], { languageName: 'python' });
hljs.registerAliases(['ts', 'tsx'], { languageName: 'typescript' });
hljs.registerAliases(['js', 'jsx', 'mjs'], { languageName: 'javascript' });
hljs.registerAliases(['toml'], { languageName: 'ini' });
hljs.registerAliases(['html', 'svg'], { languageName: 'xml' });

const SAFE_SCHEMES = ['http:', 'https:', 'mailto:'];

export function escapeHtml(text: string): string {
  return text
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;');
}

/** `href` if it is an absolute http(s) or mailto URL, else undefined. */
export function safeHref(href: string): string | undefined {
  try {
    const url = new URL(href.trim());
    return SAFE_SCHEMES.includes(url.protocol) ? url.href : undefined;
  } catch {
    return undefined;
  }
}

/** Highlighted, escaped HTML for a code block. */
export function highlight(code: string, lang: string | undefined): string {
  const name = lang?.trim().split(/\s/)[0]?.toLowerCase();
  if (name && hljs.getLanguage(name)) {
    return hljs.highlight(code, { language: name, ignoreIllegals: true }).value;
  }
  return escapeHtml(code);
}

const marked = new Marked({
  gfm: true,
  breaks: false,
  async: false,
  renderer: {
    html({ text }: Tokens.HTML | Tokens.Tag): string {
      return escapeHtml(text);
    },
    link({ href, title, tokens }: Tokens.Link): string {
      const inner = this.parser.parseInline(tokens);
      const safe = safeHref(href);
      if (!safe) return `<span class="link-text">${inner}</span>`;
      const t = title ? ` title="${escapeHtml(title)}"` : '';
      return `<a href="${escapeHtml(safe)}"${t}>${inner}</a>`;
    },
    image({ href, text }: Tokens.Image): string {
      const safe = safeHref(href);
      const label = escapeHtml(text || href);
      return safe ? `<a href="${escapeHtml(safe)}">${label}</a>` : `<span>${label}</span>`;
    },
    code({ text, lang }: Tokens.Code): string {
      const label = escapeHtml(lang?.trim().split(/\s/)[0] ?? '');
      return (
        `<div class="code-block"><div class="code-bar"><span class="code-lang">${label}</span>` +
        `<button class="copy" type="button" title="Copy">Copy</button></div>` +
        `<pre><code class="hljs">${highlight(text, lang)}</code></pre></div>`
      );
    },
  },
});

/** Markdown (possibly cut mid-stream) as inert HTML. */
export function renderMarkdown(text: string): string {
  return marked.parse(text) as string;
}
