/**
 * The `loopd.mcpServers` setting as ACP's `mcpServers`: what every session the panel
 * opens or loads gets. A server runs a command (`{name, command, args, env}`) or
 * answers at a URL (`{name, url, headers}`); env and headers are plain objects in
 * the setting and name/value lists on the wire. An entry that is neither is left
 * out and named, so a typo is seen rather than silently ignored. No `vscode` import.
 */

import type { McpServer } from './protocol';

export interface McpSettings {
  servers: McpServer[];
  /** Why an entry was left out, one line each. */
  problems: string[];
}

export function mcpServersFromSettings(value: unknown): McpSettings {
  const servers: McpServer[] = [];
  const problems: string[] = [];
  const entries = Array.isArray(value) ? value : [];
  entries.forEach((entry, index) => {
    const server = serverOf(entry);
    if (typeof server === 'string') problems.push(`loopd.mcpServers[${index}]: ${server}`);
    else servers.push(server);
  });
  return { servers, problems };
}

function serverOf(entry: unknown): McpServer | string {
  if (typeof entry !== 'object' || entry === null) return 'not an object';
  const e = entry as Record<string, unknown>;
  if (typeof e.name !== 'string' || !e.name) return 'needs a name';
  if (typeof e.command === 'string' && e.command) {
    const args = Array.isArray(e.args) ? e.args.map(String) : [];
    return { name: e.name, command: e.command, args, env: pairs(e.env) };
  }
  if (typeof e.url === 'string' && e.url) return { type: 'http', name: e.name, url: e.url, headers: pairs(e.headers) };
  return `${e.name} needs a command or a url`;
}

function pairs(value: unknown): { name: string; value: string }[] {
  if (typeof value !== 'object' || value === null) return [];
  return Object.entries(value).map(([name, v]) => ({ name, value: String(v) }));
}
