/**
 * The panel's HTML shell, shared by the extension and the browser test. The CSP
 * allows only the bundled script (by nonce) and stylesheet: model text that
 * slipped past the markdown sanitiser still could not run.
 */

export interface ShellOptions {
  scriptUri: string;
  styleUri: string;
  cspSource: string;
  nonce: string;
}

export function panelHtml({ scriptUri, styleUri, cspSource, nonce }: ShellOptions): string {
  const csp = [
    "default-src 'none'",
    `style-src ${cspSource}`,
    `font-src ${cspSource}`,
    `img-src ${cspSource} https: data:`,
    `script-src 'nonce-${nonce}'`,
  ].join('; ');
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${styleUri}">
<title>loopd</title>
</head>
<body>
<header>
  <span id="title" class="title">loopd</span>
  <button id="sessions-button" class="icon" title="Sessions">☰</button>
  <button id="new-session" class="icon" title="New session">+</button>
</header>
<ul id="sessions" class="sessions" hidden></ul>
<div id="options" class="options"></div>
<div id="status" class="status"></div>
<div id="untrusted" class="banner" hidden>This workspace is not trusted: loopd runs no agent turns here until you trust it.</div>
<main id="conversation" class="conversation" aria-live="polite"></main>
<section id="plan" class="plan" hidden></section>
<section id="approval" class="approval" hidden></section>
<div id="redo" class="rewind-redo" hidden></div>
<footer>
  <div id="editing" class="banner editing" hidden></div>
  <div id="attachments" class="chips"></div>
  <ul id="completions" class="completions" hidden></ul>
  <textarea id="input" rows="3" placeholder="Ask loopd — Enter sends, Shift+Enter for a new line, / for commands"></textarea>
  <div class="input-bar">
    <button id="mention" title="Mention a file (@)">@</button>
    <button id="add-selection" title="Add the editor's selection">Add selection</button>
    <span class="spacer"></span>
    <button id="stop" class="stop" hidden>Stop</button>
    <button id="send" class="primary">Send</button>
  </div>
</footer>
<script nonce="${nonce}" src="${scriptUri}"></script>
</body>
</html>`;
}

export function makeNonce(): string {
  const chars = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  let out = '';
  for (let i = 0; i < 32; i++) out += chars[Math.floor(Math.random() * chars.length)];
  return out;
}
