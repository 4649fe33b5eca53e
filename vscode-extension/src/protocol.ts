/**
 * The wire of loopd's LSP extension (`loopd/session/*`): ACP's session params and
 * results under the `loopd/` prefix. The types are generated from the server's models
 * (server/loopd/protocol/wire) into ./generated/wire.ts; this module is where the
 * extension imports them from. No `vscode` import: the webview and the tests use
 * these types too.
 */

export * from './generated/wire';
