/**
 * Where the server is: the `loopd.server.path` setting, else `loopd` on PATH, else
 * `python -m loopd` with the interpreter the Python extension selected (when that
 * interpreter has loopd). Pure: the probes are passed in, so tests run it without
 * VS Code.
 */

import { existsSync, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';

export interface ServerCommand {
  command: string;
  args: string[];
  /** How it was found, for the log. */
  source: 'setting' | 'path' | 'python';
}

export interface Probes {
  /** `loopd.server.path`, trimmed; empty when unset. */
  settingPath: string;
  /** `loopd.server.args`, put after `lsp`. */
  extraArgs: string[];
  /** The executable named `name` on PATH, if any. */
  which(name: string): string | undefined;
  /** The Python extension's interpreter, if it has one selected. */
  pythonInterpreter(): Promise<string | undefined>;
  /** Whether `python` can import loopd. */
  hasLoopd(python: string): Promise<boolean>;
}

/** The README's install line: the package from PyPI ("loopd" there is another project). */
export const INSTALL_LINE = 'uv tool install loopd-agent';

/** What the "server not found" notification says: where it looked, and how to install. */
export const MISSING_MESSAGE =
  "loopd: the server was not found (setting loopd.server.path, `loopd` on PATH, or the Python extension's interpreter). " +
  `Install it with: ${INSTALL_LINE} (or: pipx install loopd-agent), then restart the server`;

export async function findServer(probes: Probes): Promise<ServerCommand | undefined> {
  const args = ['lsp', ...probes.extraArgs];
  if (probes.settingPath) return { command: probes.settingPath, args, source: 'setting' };
  const onPath = probes.which('loopd');
  if (onPath) return { command: onPath, args, source: 'path' };
  const python = await probes.pythonInterpreter();
  if (python && (await probes.hasLoopd(python))) {
    return { command: python, args: ['-m', 'loopd', ...args], source: 'python' };
  }
  return undefined;
}

/**
 * `loopd login` run the way the server is: the same program, `login` in place of
 * `lsp` and its arguments (what the "Log in" command runs in a terminal).
 */
export function loginCommand(server: ServerCommand): ServerCommand {
  const at = server.args.indexOf('lsp');
  const args = at < 0 ? ['login'] : [...server.args.slice(0, at), 'login'];
  return { ...server, args };
}

/** `name` on `path` (PATH's format), as `which` finds it. */
export function which(name: string, path = process.env.PATH ?? ''): string | undefined {
  for (const dir of path.split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, name);
    try {
      if (existsSync(candidate) && statSync(candidate).isFile() && (statSync(candidate).mode & 0o111) !== 0) {
        return candidate;
      }
    } catch {
      // unreadable directory entries are not candidates
    }
  }
  return undefined;
}
