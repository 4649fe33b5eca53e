// Two bundles: the extension (Node, CommonJS, `vscode` external) and the panel's
// script (browser, IIFE). vsce packages dist/ only: no node_modules in the .vsix.
import { copyFileSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import * as esbuild from 'esbuild';

const production = process.argv.includes('--production');
mkdirSync('dist', { recursive: true });

if (process.argv.includes('--tests')) {
  // The tests, bundled for node's test runner (marked is ESM-only; bundling
  // sidesteps CommonJS/ESM interop). playwright-core stays a real require.
  const entryPoints = readdirSync('test', { recursive: true })
    .filter((f) => f.endsWith('.test.ts'))
    .map((f) => join('test', f));
  await esbuild.build({
    entryPoints,
    bundle: true,
    outdir: 'out/test',
    outbase: 'test',
    external: ['playwright-core', 'vscode'],
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    sourcemap: true,
    logLevel: 'warning',
  });
  process.exit(0);
}

await Promise.all([
  esbuild.build({
    entryPoints: ['src/extension.ts'],
    bundle: true,
    outfile: 'dist/extension.js',
    external: ['vscode'],
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    minify: production,
    sourcemap: !production,
    logLevel: 'warning',
  }),
  esbuild.build({
    entryPoints: ['src/webview/main.ts'],
    bundle: true,
    outfile: 'dist/webview.js',
    format: 'iife',
    platform: 'browser',
    target: 'es2022',
    minify: production,
    sourcemap: !production,
    logLevel: 'warning',
  }),
]);
copyFileSync('media/panel.css', 'dist/panel.css');
