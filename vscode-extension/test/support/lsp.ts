/**
 * `loopd lsp` on stdio behind vscode-jsonrpc, the JSON-RPC stack VS Code's
 * language client uses, initialized the way the extension initializes it
 * (`capabilities.experimental.loopd = true`).
 */

import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  createMessageConnection,
  type MessageConnection,
  StreamMessageReader,
  StreamMessageWriter,
} from 'vscode-jsonrpc/node';
import { PYTHON } from './loopd';

export interface Lsp {
  connection: MessageConnection;
  proc: ChildProcess;
  stderr: string[];
  close(): Promise<void>;
}

interface TextEdit {
  range: { start: { line: number; character: number }; end: { line: number; character: number } };
  newText: string;
}

export async function startLsp(cwd: string, env: Record<string, string>): Promise<Lsp> {
  const proc = spawn(PYTHON, ['-m', 'loopd', 'lsp'], { cwd, env, stdio: ['pipe', 'pipe', 'pipe'] });
  const stderr: string[] = [];
  proc.stderr!.on('data', (chunk: Buffer) => stderr.push(chunk.toString()));
  const connection = createMessageConnection(new StreamMessageReader(proc.stdout!), new StreamMessageWriter(proc.stdin!));
  // An editor with no open buffers applies an edit by writing the file, as VS Code does for closed files.
  connection.onRequest('workspace/applyEdit', (params: { edit: { changes?: Record<string, TextEdit[]> } }) => {
    for (const [uri, edits] of Object.entries(params.edit.changes ?? {})) {
      const path = fileURLToPath(uri);
      writeFileSync(path, applyEdits(readFileSync(path, 'utf8'), edits));
    }
    return { applied: true };
  });
  connection.onRequest('window/workDoneProgress/create', () => null);
  connection.listen();
  await connection.sendRequest('initialize', {
    processId: process.pid,
    rootUri: null,
    workspaceFolders: [{ uri: `file://${cwd}`, name: 'work' }],
    capabilities: { experimental: { loopd: true }, window: { workDoneProgress: true } },
    clientInfo: { name: 'loopd-vscode-test' },
  });
  await connection.sendNotification('initialized', {});
  return {
    connection,
    proc,
    stderr,
    close: async () => {
      try {
        await connection.sendRequest('shutdown');
        await connection.sendNotification('exit');
      } catch {
        // already gone
      }
      connection.dispose();
      proc.kill();
    },
  };
}

function applyEdits(text: string, edits: TextEdit[]): string {
  const lines = text.split('\n');
  const offset = (p: { line: number; character: number }) =>
    lines.slice(0, p.line).reduce((n, l) => n + l.length + 1, 0) + p.character;
  const sorted = [...edits].sort((a, b) => offset(b.range.start) - offset(a.range.start));
  let out = text;
  for (const e of sorted) out = out.slice(0, offset(e.range.start)) + e.newText + out.slice(offset(e.range.end));
  return out;
}
