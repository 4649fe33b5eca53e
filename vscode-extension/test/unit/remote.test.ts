import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import type { ServerCommand } from '../../src/discovery';
import { remoteEnv, remoteServer, tokenMissing } from '../../src/remote';

const ROOT = resolve(__dirname, '..', '..', '..');
const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
const settings = manifest.contributes.configuration.properties;
const local: ServerCommand = { command: '/usr/bin/python3', args: ['-m', 'loopd', 'lsp', '-v'], source: 'python' };
const none = { url: '', fingerprint: '', tokenFile: '' };

test('with no remote URL the local server starts as found', () => {
  assert.deepEqual(remoteServer(local, none), local);
  assert.deepEqual(remoteServer(local, { ...none, url: '   ' }), local);
});

test('a remote URL makes it `loopd lsp --remote URL`, with the fingerprint and token file, never the token', () => {
  const url = 'https://devbox:8765/acp';
  const bridge = remoteServer(local, { url, fingerprint: 'AB:CD', tokenFile: '/home/me/.loopd-token' });
  assert.deepEqual(bridge.args, [
    '-m', 'loopd', 'lsp', '--remote', url, '--fingerprint', 'AB:CD', '--token-file', '/home/me/.loopd-token', '-v',
  ]);
  assert.deepEqual(remoteServer(local, { ...none, url }).args, ['-m', 'loopd', 'lsp', '--remote', url, '-v']);
  assert.equal(bridge.command, local.command);
});

test('the token travels in the environment only, as LOOPD_REMOTE_TOKEN', () => {
  const env = { PATH: '/bin' };
  assert.deepEqual(remoteEnv(env, 'secret-token'), { PATH: '/bin', LOOPD_REMOTE_TOKEN: 'secret-token' });
  assert.deepEqual(remoteEnv(env, undefined), env);
  assert.deepEqual(remoteEnv({ ...env, LOOPD_REMOTE_TOKEN: 'from-shell' }, ''), { ...env, LOOPD_REMOTE_TOKEN: 'from-shell' });
  const bridge = remoteServer(local, { ...none, url: 'https://devbox:8765/acp' });
  assert.ok(!bridge.args.some((a) => a.includes('secret-token')));
});

test('the remote settings are user settings only, and no setting holds the token', () => {
  for (const key of ['loopd.server.remote.url', 'loopd.server.remote.fingerprint', 'loopd.server.remote.tokenFile']) {
    assert.equal(settings[key]?.scope, 'machine', key);
    assert.ok(manifest.capabilities.untrustedWorkspaces.restrictedConfigurations.includes(key), key);
  }
  assert.ok(!Object.keys(settings).some((key) => /token$/i.test(key)));
  const commands = manifest.contributes.commands.map((c: { command: string }) => c.command);
  assert.ok(commands.includes('loopd.panel.setRemoteToken'));
});

test('a remote URL with no token anywhere is said before the bridge would fail', () => {
  const url = 'https://devbox:8765/acp';
  assert.equal(tokenMissing({ ...none, url }, undefined, {}), true);
  assert.equal(tokenMissing({ ...none, url }, 'secret', {}), false);
  assert.equal(tokenMissing({ ...none, url, tokenFile: '/t' }, undefined, {}), false);
  assert.equal(tokenMissing({ ...none, url }, undefined, { LOOPD_REMOTE_TOKEN: 'x' }), false);
  assert.equal(tokenMissing(none, undefined, {}), false);
});
