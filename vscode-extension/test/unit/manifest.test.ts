import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { test } from 'node:test';

const ROOT = resolve(__dirname, '..', '..', '..');
const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
const source = readFileSync(join(ROOT, 'src', 'commands.ts'), 'utf8');

test("the manifest's commands exist, and never take the server's own command ids", () => {
  const declared: string[] = manifest.contributes.commands.map((c: { command: string }) => c.command);
  const implemented = [...source.matchAll(/'(loopd\.panel\.\w+)':/g)].map((m) => m[1]);
  assert.deepEqual([...declared].sort(), [...implemented].sort());
  // vscode-languageclient registers the server's commands (loopd.ask, loopd.cancel, ...) itself.
  for (const id of declared) assert.match(id, /^loopd\.panel\./);
  const used = [
    ...manifest.contributes.keybindings.map((k: { command: string }) => k.command),
    ...Object.values(manifest.contributes.menus).flatMap((items) => (items as { command: string }[]).map((i) => i.command)),
  ];
  for (const id of used) assert.ok(declared.includes(id), id);
});

test('untrusted workspaces: limited support, and the settings that choose what runs are restricted', () => {
  const untrusted = manifest.capabilities.untrustedWorkspaces;
  assert.equal(untrusted.supported, 'limited');
  assert.deepEqual(untrusted.restrictedConfigurations, [
    'loopd.server.path',
    'loopd.server.args',
    'loopd.server.env',
    'loopd.server.remote.url',
    'loopd.server.remote.fingerprint',
    'loopd.server.remote.tokenFile',
    'loopd.mcpServers',
  ]);
  for (const key of untrusted.restrictedConfigurations) assert.ok(key in manifest.contributes.configuration.properties, key);
});
