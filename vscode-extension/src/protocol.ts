/**
 * The wire of loopd's LSP extension (`loopd/session/*`): ACP's session params and
 * results under the `loopd/` prefix. Only the fields the extension reads are typed;
 * everything else passes through untouched. No `vscode` import: the webview and the
 * tests use these types too.
 */

export const Method = {
  new: 'loopd/session/new',
  load: 'loopd/session/load',
  list: 'loopd/session/list',
  prompt: 'loopd/session/prompt',
  close: 'loopd/session/close',
  delete: 'loopd/session/delete',
  setConfigOption: 'loopd/session/setConfigOption',
  mentions: 'loopd/session/mentions',
  checkpoints: 'loopd/session/checkpoints',
  restore: 'loopd/session/restore',
  fork: 'loopd/session/fork',
  cancel: 'loopd/session/cancel',
  update: 'loopd/session/update',
  requestPermission: 'loopd/session/requestPermission',
  reviewPropose: 'loopd/review/propose',
  reviewSettled: 'loopd/review/settled',
} as const;

export type ContentBlock =
  | { type: 'text'; text: string }
  | { type: 'resource_link'; uri: string; name: string; mimeType?: string }
  | { type: 'resource'; resource: { uri: string; text: string; mimeType?: string } }
  | { type: 'image'; data: string; mimeType: string; uri?: string };

export type ToolContent =
  | { type: 'content'; content: ContentBlock }
  | { type: 'diff'; path: string; oldText: string | null; newText: string }
  | { type: 'terminal'; terminalId: string };

export type ToolKind =
  | 'read'
  | 'edit'
  | 'delete'
  | 'move'
  | 'search'
  | 'execute'
  | 'think'
  | 'fetch'
  | 'switch_mode'
  | 'other';
export type ToolStatus = 'pending' | 'in_progress' | 'completed' | 'failed';

export interface Location {
  path: string;
  line?: number;
}

export interface ToolCallFields {
  toolCallId: string;
  title?: string;
  kind?: ToolKind;
  status?: ToolStatus;
  content?: ToolContent[];
  locations?: Location[];
  rawInput?: Record<string, unknown>;
  rawOutput?: Record<string, unknown>;
}

export interface PlanEntry {
  content: string;
  priority: 'high' | 'medium' | 'low';
  status: 'pending' | 'in_progress' | 'completed';
}

export interface AvailableCommand {
  name: string;
  description: string;
  input?: { hint: string };
}

export interface ConfigChoice {
  value: string;
  name: string;
  description?: string;
}

export interface ConfigOption {
  id: string;
  name: string;
  category: string;
  type: 'select';
  currentValue: string;
  options: ConfigChoice[];
  description?: string;
}

/** A turn's verification seal (`_meta.loopd.verification` of the prompt's answer). */
export interface Verification {
  seal: 'clean' | 'passed' | 'failed' | 'stale' | 'unavailable';
  incomplete?: boolean;
  unmet?: string[];
  summary?: string;
}

/** loopd's own additions ride in `_meta.loopd` of any update. */
export interface LoopdMeta {
  sandboxTier?: string;
  verification?: Verification;
}

type Meta = { _meta?: { loopd?: LoopdMeta } };

export type SessionUpdate = Meta &
  (
    | { sessionUpdate: 'user_message_chunk'; content: ContentBlock; messageId?: string }
    | { sessionUpdate: 'agent_message_chunk'; content: ContentBlock; messageId?: string }
    | { sessionUpdate: 'agent_thought_chunk'; content: ContentBlock; messageId?: string }
    | ({ sessionUpdate: 'tool_call' } & ToolCallFields)
    | ({ sessionUpdate: 'tool_call_update' } & ToolCallFields)
    | { sessionUpdate: 'plan'; entries: PlanEntry[] }
    | { sessionUpdate: 'available_commands_update'; availableCommands: AvailableCommand[] }
    | { sessionUpdate: 'current_mode_update'; currentModeId: string }
    | { sessionUpdate: 'config_option_update'; configOptions: ConfigOption[] }
    | { sessionUpdate: 'session_info_update'; title?: string; updatedAt?: string }
    | {
        sessionUpdate: 'usage_update';
        used: number;
        size: number;
        cost?: { amount: number; currency: string };
      }
  );

export interface SessionNotification {
  sessionId: string;
  update: SessionUpdate;
}

export type PermissionKind = 'allow_once' | 'allow_always' | 'reject_once' | 'reject_always';

export interface PermissionOption {
  optionId: string;
  name: string;
  kind: PermissionKind;
}

export interface PermissionParams {
  sessionId: string;
  toolCall: ToolCallFields;
  options: PermissionOption[];
}

export type PermissionOutcome =
  | { outcome: { outcome: 'selected'; optionId: string } }
  | { outcome: { outcome: 'cancelled' } };

/** Context the session offers to @-mention (an MCP server's resource); a prompt links it by `uri`. */
export interface Mention {
  server: string;
  uri: string;
  name: string;
  title?: string;
  description?: string;
  mimeType?: string;
}

export interface MentionsResult {
  mentions: Mention[];
}

/** An MCP server as ACP's `session/new` takes it: a command (stdio) or a URL (HTTP). */
export type McpServer =
  | { name: string; command: string; args: string[]; env: { name: string; value: string }[] }
  | { type: 'http'; name: string; url: string; headers: { name: string; value: string }[] };

export interface NewSessionResult {
  sessionId: string;
  configOptions: ConfigOption[];
}

export interface SessionInfo {
  sessionId: string;
  cwd: string;
  title?: string;
  updatedAt?: string;
}

export interface ListResult {
  sessions: SessionInfo[];
  nextCursor?: string;
}

export interface PromptResult {
  stopReason: string;
  _meta?: { loopd?: { turnId?: string; verification?: Verification } };
}

/** One run of changed lines of a proposed edit; lines are 0-based (`loopd.lsp.hunks`). */
export interface ReviewHunk {
  index: number;
  oldStart: number;
  oldLines: number;
  newStart: number;
  newLines: number;
  oldText: string;
  newText: string;
}

/** `loopd/review/propose` (server -> client): an edit waiting for the person's review. */
export interface ReviewProposal {
  reviewId: string;
  sessionId: string;
  toolCallId: string;
  /** Canonical (symlinks resolved by the server). */
  path: string;
  uri: string;
  relativePath: string;
  /** null for a new file, or for one loopd may write but not read (`oldUnread`: a secret, proposed whole). */
  oldText: string | null;
  oldUnread?: boolean;
  newText: string;
  hunks: ReviewHunk[];
  /** The server's own verdict: no timer may accept this path. */
  alwaysAsk: boolean;
}

export type HunkDecision = 'accept' | 'reject';

/** The answer: what is not accepted is rejected; `by: 'timer'` accepts no alwaysAsk path. */
export interface ReviewAnswer {
  hunks: { index: number; decision: HunkDecision }[];
  by: 'person' | 'timer';
}

/** `loopd/review/settled` (server -> client): the reviewed text was written (or nothing was). */
export interface ReviewSettled {
  reviewId: string;
  sessionId: string;
  path: string;
  uri: string;
  written: boolean;
}

/** A checkpoint of the session: the workspace and the conversation before prompt `prompt`. */
export interface Checkpoint {
  prompt: number;
  /** The prompt's first line (as the session's title is made). */
  label: string;
  createdAt: string;
  /** Whether the conversation can be restored too (the runtime's context is loopd's). */
  conversation: boolean;
  /** Files the checkpoint could not hold (too large, or the store was full). */
  leftOut: string[];
}

export interface CheckpointsResult {
  checkpoints: Checkpoint[];
  /** Whether the last restore can be redone. */
  redo: boolean;
}

export type RestoreScope = 'both' | 'code' | 'conversation';

/**
 * `loopd/session/restore`'s answer: done, or refused (nothing changed) because files
 * changed outside the agent since the checkpoint; `force: true` overwrites them.
 */
export type RestoreResult =
  | { restored: true; summary: string; written: string[]; removed: string[]; failed: { path: string; reason: string }[] }
  | { restored: false; summary: string; changedOutside: string[] };
