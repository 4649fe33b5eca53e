import assert from 'node:assert/strict';
import { test } from 'node:test';
import { renderMarkdown, safeHref } from '../../src/webview/markdown';

const TAGS = new Set(
  'p br hr h1 h2 h3 h4 h5 h6 strong em del code pre blockquote ul ol li table thead tbody tr th td a span div button input'.split(' '),
);
const ATTRIBUTES = new Set(['class', 'href', 'title', 'type', 'checked', 'disabled', 'start', 'align']);

/**
 * Every real tag (an unescaped `<`) is on the allowlist with allowlisted
 * attributes, links go only to http(s) or mailto, and inputs are disabled
 * checkboxes: nothing in the output can run script.
 */
function assertInert(html: string): void {
  for (const [, name, attrs] of html.matchAll(/<\/?([a-zA-Z][\w-]*)([^>]*)>/g)) {
    assert.ok(TAGS.has(name.toLowerCase()), `tag <${name}> in ${html}`);
    for (const [, attr, value] of attrs.matchAll(/([^\s=]+)(?:="([^"]*)")?/g)) {
      assert.ok(ATTRIBUTES.has(attr.toLowerCase()), `attribute ${attr} in ${html}`);
      if (attr === 'href') assert.match(value, /^(https?:|mailto:)/, html);
    }
    if (name === 'input') assert.match(attrs, /disabled/);
  }
}

test('raw HTML from the model is shown as text', () => {
  const html = renderMarkdown('before <script>alert(1)</script> after\n\n<img src=x onerror="alert(2)">\n\n<iframe src="javascript:alert(3)"></iframe>');
  assertInert(html);
  assert.match(html, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/);
  assert.match(html, /&lt;img src=x onerror=/);
});

test('javascript:, data: and vbscript: links are plain text; http links stay links', () => {
  const cases = [
    '[click](javascript:alert(1))',
    '[click](JaVaScRiPt:alert(1))',
    '[click](  javascript:alert(1))',
    '[click](java&#09;script:alert(1))',
    '<javascript:alert(1)>',
    '[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)',
    '[x](vbscript:msgbox(1))',
    '![img](javascript:alert(1))',
    '[x]: javascript:alert(1)\n\n[ref][x]',
  ];
  for (const source of cases) {
    const html = renderMarkdown(source);
    assertInert(html);
    assert.doesNotMatch(html, /<a /, source);
  }
  const ok = renderMarkdown('[docs](https://example.com/a?b=1&c="2")');
  assert.match(ok, /<a href="https:\/\/example\.com\/a\?b=1&amp;c=%222%22">docs<\/a>/);
  assert.equal(safeHref('mailto:a@b.c'), 'mailto:a@b.c');
  assert.equal(safeHref('/etc/passwd'), undefined);
});

test('attribute breakouts in titles and code fence languages are escaped', () => {
  const html = renderMarkdown('[a](https://x.y "t\\" onmouseover=\\"alert(1)")\n\n```"><script>alert(1)</script>\ncode\n```');
  assertInert(html);
});

test('code blocks are highlighted, escaped and copyable', () => {
  const html = renderMarkdown('```python\ndef f(x):\n    return "<b>" + x\n```');
  assert.match(html, /class="code-block"/);
  assert.match(html, /<button class="copy"/);
  assert.match(html, /<span class="hljs-keyword">def<\/span>/);
  assert.match(html, /&lt;b&gt;/);
  assertInert(html);
  const unknown = renderMarkdown('```nosuchlang\n<script>x</script>\n```');
  assert.match(unknown, /&lt;script&gt;/);
});

test('ordinary markdown renders', () => {
  const html = renderMarkdown('# Title\n\n- **bold** and `code`\n- [ ] task\n\n| a | b |\n|---|---|\n| 1 | 2 |');
  for (const tag of ['<h1>', '<strong>bold</strong>', '<code>code</code>', '<table>']) assert.ok(html.includes(tag), tag);
});

test('markdown cut mid-stream still renders safely', () => {
  for (const partial of ['```py\nx = "<scr', '[link](javascr', '<scr', '**bold']) assertInert(renderMarkdown(partial));
});
