/**
 * The panel's state as a pure function of what the host tells it: session updates
 * in, panel state out. No DOM and no `vscode` here, so the same code runs in the
 * webview and in the unit tests. The reducer never decides anything the server
 * decides; it only keeps what was said, in order, merging streamed chunks.
 */

import type {
  AvailableCommand,
  CheckpointsResult,
  ConfigOption,
  ContentBlock,
  Location,
  Mention,
  PermissionOption,
  PlanEntry,
  RestoreScope,
  SessionInfo,
  SessionUpdate,
  ToolCallFields,
  ToolContent,
  ToolKind,
  ToolStatus,
  Verification,
} from '../protocol';

export type MessageRole = 'user' | 'agent' | 'thought';

export interface MessageItem {
  kind: 'message';
  role: MessageRole;
  messageId?: string;
  text: string;
  /** Attachments the person sent (file links, selections), by name. */
  attachments: string[];
}

export interface ToolItem {
  kind: 'tool';
  id: string;
}

export type Item = MessageItem | ToolItem;

export interface ToolCard {
  id: string;
  title: string;
  kind: ToolKind;
  status: ToolStatus;
  /** The exact command (execute) or path (edits, reads) the call acts on. */
  subject?: string;
  content: ToolContent[];
  locations: Location[];
  rawOutput?: Record<string, unknown>;
}

export interface Usage {
  used: number;
  size: number;
  cost?: { amount: number; currency: string };
}

export interface Approval {
  id: string;
  title: string;
  kind: ToolKind;
  subject?: string;
  diff?: { path: string; oldText: string | null; newText: string };
  options: PermissionOption[];
}

export interface Turn {
  running: boolean;
  stopReason?: string;
  error?: string;
  verification?: Verification;
}

export interface PanelState {
  sessionId?: string;
  /** The workspace root, to show paths under it relative to it. */
  cwd?: string;
  title?: string;
  items: Item[];
  tools: Record<string, ToolCard>;
  plan: PlanEntry[];
  commands: AvailableCommand[];
  /** What `@` offers besides files: the session's MCP resources. */
  mentions: Mention[];
  configOptions: ConfigOption[];
  usage?: Usage;
  sandboxTier?: string;
  verification?: Verification;
  turn: Turn;
  approval?: Approval;
  trusted: boolean;
  sessions: SessionInfo[];
  /** The session's checkpoints (one before each prompt) and whether a restore can be redone. */
  checkpoints: CheckpointsResult;
  /**
   * The loaded session's last turn was cut off by a crash (`_meta.loopd.interrupted`
   * on the note it loads with): the panel offers to continue it, until a turn runs.
   */
  interrupted: boolean;
}

/** What the host posts to the webview. */
export type HostMessage =
  | { type: 'reset'; sessionId?: string; configOptions: ConfigOption[]; title?: string; cwd?: string }
  | { type: 'snapshot'; state: PanelState }
  | { type: 'update'; sessionId: string; update: SessionUpdate }
  | { type: 'turn'; turn: Turn }
  | { type: 'approval'; approval?: Approval }
  | { type: 'trust'; trusted: boolean }
  | { type: 'sessions'; sessions: SessionInfo[] }
  | { type: 'mentions'; mentions: Mention[] }
  | { type: 'checkpoints'; checkpoints: CheckpointsResult }
  | { type: 'attach'; attachment: Attachment }
  | { type: 'focus'; text?: string };

/**
 * What the person adds to a prompt besides text; the host turns it into content
 * blocks: a file, a folder or an MCP resource as a `resource_link` (the server reads
 * files and folders through its own gates), what only the editor knows (a selection,
 * a file's Problems, a terminal's output, the git changes) embedded as `text`, an
 * image as its base64 `data` (see composer.ts).
 */
export interface Attachment {
  kind: 'file' | 'folder' | 'selection' | 'resource' | 'problems' | 'terminal' | 'changes' | 'image';
  uri: string;
  name: string;
  text?: string;
  mimeType?: string;
  data?: string;
}

/** Context the host gathers when the person picks it from the `@` menu. */
export type ContextKind = 'folder' | 'problems' | 'terminal' | 'changes';

/** What the webview posts to the host. */
export type WebviewMessage =
  | { type: 'ready' }
  | { type: 'prompt'; text: string; attachments: Attachment[] }
  | { type: 'stop' }
  | { type: 'newSession' }
  | { type: 'listSessions' }
  | { type: 'loadSession'; sessionId: string }
  | { type: 'deleteSession'; sessionId: string }
  | { type: 'setConfig'; configId: string; value: string }
  | { type: 'openLocation'; path: string; line?: number }
  | { type: 'openDiff'; path: string; oldText: string | null; newText: string }
  | { type: 'answer'; approvalId: string; optionId: string }
  | { type: 'mention' }
  | { type: 'mentionContext'; kind: ContextKind }
  | { type: 'listMentions' }
  | { type: 'addSelection' }
  | { type: 'copy'; text: string }
  | { type: 'restore'; prompt: number; scope: RestoreScope }
  | { type: 'redo' }
  | { type: 'continue' }
  | { type: 'fork'; prompt: number }
  | { type: 'edit'; prompt: number; text: string; attachments: Attachment[] };

export function initialState(): PanelState {
  return {
    items: [],
    tools: {},
    plan: [],
    commands: [],
    mentions: [],
    configOptions: [],
    turn: { running: false },
    trusted: true,
    sessions: [],
    checkpoints: { checkpoints: [], redo: false },
    interrupted: false,
  };
}

export function reduce(state: PanelState, message: HostMessage): PanelState {
  switch (message.type) {
    case 'reset':
      return {
        ...initialState(),
        sessionId: message.sessionId,
        cwd: message.cwd,
        title: message.title,
        configOptions: message.configOptions,
        trusted: state.trusted,
        sessions: state.sessions,
      };
    case 'snapshot':
      return message.state;
    case 'update':
      if (state.sessionId !== undefined && message.sessionId !== state.sessionId) return state;
      return withMeta(applyUpdate(state, message.update), message.update);
    case 'turn': {
      const interrupted = state.interrupted && !message.turn.running; // a turn ran: nothing is cut off now
      return { ...state, turn: message.turn, interrupted, verification: message.turn.verification ?? state.verification };
    }
    case 'approval':
      return { ...state, approval: message.approval };
    case 'trust':
      return { ...state, trusted: message.trusted };
    case 'sessions':
      return { ...state, sessions: message.sessions };
    case 'mentions':
      return { ...state, mentions: message.mentions };
    case 'checkpoints':
      return { ...state, checkpoints: message.checkpoints };
    case 'attach':
    case 'focus':
      return state; // input-box concerns, not panel state
  }
}

function applyUpdate(state: PanelState, update: SessionUpdate): PanelState {
  switch (update.sessionUpdate) {
    case 'user_message_chunk':
      return appendChunk(state, 'user', update.content, update.messageId);
    case 'agent_message_chunk':
      return appendChunk(state, 'agent', update.content, update.messageId);
    case 'agent_thought_chunk':
      return appendChunk(state, 'thought', update.content, update.messageId);
    case 'tool_call':
    case 'tool_call_update':
      return upsertTool(state, update);
    case 'plan':
      return { ...state, plan: update.entries };
    case 'available_commands_update':
      return { ...state, commands: update.availableCommands };
    case 'current_mode_update':
      return { ...state, configOptions: withCurrent(state.configOptions, 'mode', update.currentModeId) };
    case 'config_option_update':
      return { ...state, configOptions: update.configOptions };
    case 'session_info_update':
      return { ...state, title: update.title ?? state.title };
    case 'usage_update':
      return { ...state, usage: { used: update.used, size: update.size, cost: update.cost } };
  }
}

function withMeta(state: PanelState, update: SessionUpdate): PanelState {
  const meta = update._meta?.loopd;
  if (!meta) return state;
  return {
    ...state,
    sandboxTier: meta.sandboxTier ?? state.sandboxTier,
    verification: meta.verification ?? state.verification,
    interrupted: meta.interrupted ?? state.interrupted,
  };
}

function withCurrent(options: ConfigOption[], category: string, value: string): ConfigOption[] {
  return options.map((o) => (o.category === category ? { ...o, currentValue: value } : o));
}

/** A chunk joins the last message when it continues it (same role, same message id). */
function appendChunk(
  state: PanelState,
  role: MessageRole,
  content: ContentBlock,
  messageId: string | undefined,
): PanelState {
  const last = state.items.at(-1);
  const { text, attachment } = blockText(content);
  if (last?.kind === 'message' && last.role === role && last.messageId === messageId) {
    const merged: MessageItem = {
      ...last,
      text: last.text + text,
      attachments: attachment ? [...last.attachments, attachment] : last.attachments,
    };
    return { ...state, items: [...state.items.slice(0, -1), merged] };
  }
  const item: MessageItem = {
    kind: 'message',
    role,
    messageId,
    text,
    attachments: attachment ? [attachment] : [],
  };
  return { ...state, items: [...state.items, item] };
}

function blockText(block: ContentBlock): { text: string; attachment?: string } {
  switch (block.type) {
    case 'text':
      return { text: block.text };
    case 'resource_link':
      return { text: '', attachment: block.name };
    case 'resource':
      return { text: '', attachment: baseName(block.resource.uri) };
    case 'image':
      return { text: '', attachment: 'image' };
  }
}

function upsertTool(state: PanelState, fields: ToolCallFields): PanelState {
  const old = state.tools[fields.toolCallId];
  const card: ToolCard = {
    id: fields.toolCallId,
    title: fields.title ?? old?.title ?? fields.toolCallId,
    kind: fields.kind ?? old?.kind ?? 'other',
    status: fields.status ?? old?.status ?? 'pending',
    content: fields.content ?? old?.content ?? [],
    locations: fields.locations ?? old?.locations ?? [],
    rawOutput: fields.rawOutput ?? old?.rawOutput,
    subject: subjectOf(fields) ?? old?.subject,
  };
  const items: Item[] = old ? state.items : [...state.items, { kind: 'tool', id: card.id }];
  return { ...state, items, tools: { ...state.tools, [card.id]: card } };
}

/** The exact command or path a tool call acts on, from what the server sent. */
export function subjectOf(fields: ToolCallFields): string | undefined {
  const input = fields.rawInput ?? {};
  for (const key of ['command', 'cmd']) {
    const value = input[key];
    if (typeof value === 'string') return value;
    if (Array.isArray(value)) return value.join(' ');
  }
  for (const key of ['path', 'file_path', 'filePath', 'pattern', 'url']) {
    const value = input[key];
    if (typeof value === 'string') return value;
  }
  const diff = fields.content?.find((c) => c.type === 'diff');
  if (diff?.type === 'diff') return diff.path;
  return fields.locations?.[0]?.path;
}

/** The approval a permission request asks for, in the panel's terms. */
export function approvalOf(
  id: string,
  toolCall: ToolCallFields,
  options: PermissionOption[],
): Approval {
  const diff = toolCall.content?.find((c) => c.type === 'diff');
  return {
    id,
    title: toolCall.title ?? 'loopd asks',
    kind: toolCall.kind ?? 'other',
    subject: subjectOf(toolCall),
    diff: diff?.type === 'diff' ? { path: diff.path, oldText: diff.oldText, newText: diff.newText } : undefined,
    options,
  };
}

/** Text shown for a tool's content that is not a diff (command output, read text). */
export function toolText(card: ToolCard): string {
  const parts: string[] = [];
  for (const c of card.content) {
    if (c.type === 'content' && c.content.type === 'text') parts.push(c.content.text);
  }
  return parts.join('\n');
}

/** Slash commands matching what the person typed after `/`. */
export function completeCommand(commands: AvailableCommand[], input: string): AvailableCommand[] {
  const match = /^\/(\S*)$/.exec(input);
  if (!match) return [];
  const typed = match[1].toLowerCase();
  return commands.filter((c) => c.name.toLowerCase().startsWith(typed));
}

/** `path` relative to `cwd` when it is under it (for display only). */
export function shortPath(path: string, cwd: string | undefined): string {
  if (cwd && path.startsWith(`${cwd.replace(/\/$/, '')}/`)) return path.slice(cwd.replace(/\/$/, '').length + 1);
  return path;
}

export function baseName(uriOrPath: string): string {
  const clean = uriOrPath.split('#')[0];
  return clean.slice(clean.lastIndexOf('/') + 1) || clean;
}

/** "12% of 200k" style context usage, and the cost when known. */
export function usageLabel(usage: Usage): string {
  const pct = usage.size > 0 ? Math.round((100 * usage.used) / usage.size) : 0;
  let label = `${pct}% of ${compact(usage.size)} context`;
  if (usage.cost) label += ` · ${usage.cost.amount.toFixed(2)} ${usage.cost.currency}`;
  return label;
}

function compact(n: number): string {
  if (n >= 1_000_000) return `${+(n / 1_000_000).toFixed(1)}M`;
  if (n >= 1000) return `${Math.round(n / 1000)}k`;
  return String(n);
}
