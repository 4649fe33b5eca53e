// Two bundles: the extension (Node, CommonJS, `vscode` external) and the panel's
// script (browser, IIFE). vsce packages dist/ only: no node_modules in the .vsix.
import { copyFileSync, mkdirSync } from 'node:fs';
import * as esbuild from 'esbuild';

const production = process.argv.includes('--production');
mkdirSync('dist', { recursive: true });
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
