/**
 * `loopd.server.remote.*`: the server runs elsewhere (`loopd serve` on a dev box or
 * in a container) and the extension starts `loopd lsp --remote URL`, a local bridge
 * to it. The token is never an argument (any process may read another's command
 * line) and never a setting (settings sync and show): it is kept in VS Code's
 * secret storage and handed to the bridge in its environment, as
 * `LOOPD_REMOTE_TOKEN`, which only the user can read; or the bridge reads it from
 * `tokenFile`. Pure: tests run it without VS Code.
 */

import type { ServerCommand } from './discovery';

export interface RemoteSettings {
  /** The URL `loopd serve` printed (its `/acp` endpoint) or the server's own; empty: local. */
  url: string;
  /** The certificate's SHA-256 fingerprint, as `loopd serve` printed it (a self-signed one). */
  fingerprint: string;
  /** A file holding the token, instead of the secret storage. */
  tokenFile: string;
}

/** The secret storage key of the token (`loopd.panel.setRemoteToken` stores it). */
export const REMOTE_TOKEN_SECRET = 'loopd.server.remote.token';

/** `server` made a bridge to `remote.url` (unchanged when no URL is set). */
export function remoteServer(server: ServerCommand, remote: RemoteSettings): ServerCommand {
  const url = remote.url.trim();
  if (!url) return server;
  const bridge = ['--remote', url];
  if (remote.fingerprint.trim()) bridge.push('--fingerprint', remote.fingerprint.trim());
  if (remote.tokenFile.trim()) bridge.push('--token-file', remote.tokenFile.trim());
  const at = server.args.indexOf('lsp');
  const args = [...server.args];
  args.splice(at < 0 ? args.length : at + 1, 0, ...bridge);
  return { ...server, args };
}

/** The server's environment: the token from the secret storage, when there is one,
 * as `LOOPD_REMOTE_TOKEN` (else what the environment had, if anything). */
export function remoteEnv(
  env: Record<string, string | undefined>,
  token: string | undefined,
): Record<string, string | undefined> {
  return token ? { ...env, LOOPD_REMOTE_TOKEN: token } : env;
}

/** Whether the bridge would start with no token to send (it would exit at once):
 * a remote URL, and neither the secret, a token file nor LOOPD_REMOTE_TOKEN. */
export function tokenMissing(
  remote: RemoteSettings,
  token: string | undefined,
  env: Record<string, string | undefined>,
): boolean {
  return Boolean(remote.url.trim()) && !token && !remote.tokenFile.trim() && !env.LOOPD_REMOTE_TOKEN?.trim();
}
