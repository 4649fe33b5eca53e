-- loopd for Neovim (>= 0.10): starts `loopd lsp` with the built-in client, one per
-- project root, opts into the loopd extension (ACP-shaped session methods), keeps one
-- session per project root, renders it in that project's chat (an input area where
-- Enter sends), answers approvals in a floating window and the agent's questions with
-- vim.ui.select, and keeps each project's verification seal for the statusline.
-- Progress is plain LSP progress, so fidget-style plugins and `vim.lsp.status()` show it.
local actions = require('loopd.actions')
local approval = require('loopd.approval')
local Chat = require('loopd.chat')
local login = require('loopd.login')
local pick = require('loopd.pick')
local remote = require('loopd.remote')
local seal = require('loopd.seal')

local M = {}

M.config = {
  cmd = { 'loopd', 'lsp' }, -- how to start the server
  cmd_env = nil,
  name = 'loopd',
  root_markers = { '.loopd', '.git' },
  filetypes = nil, -- nil: every file buffer
  open_chat = true, -- open the chat window on :Loopd ask
  approval = 'float', -- 'float' (a window with the diff and a key per answer) or 'select'
  login_cmd = nil, -- nil: `cmd` with `lsp` replaced by `login`
  remote = nil, -- { url, fingerprint, token_file }: `loopd serve` elsewhere (see loopd.remote)
}

M.configured = false
-- root -> { root, session, config_options, request, last_stop, turns, verification, chat }
M.projects = {}
local by_session = {} -- session id -> project
local early = {} -- session id -> updates that arrived before the session's answer
local EARLY_LIMIT = 200 -- per session: sessions started elsewhere (code actions) never bind

local has011 = vim.fn.has('nvim-0.11') == 1

local function call(client, method, ...)
  if has011 then return client[method](client, ...) end
  return client[method](...)
end

local function notify(msg, level) vim.notify('loopd: ' .. msg, level or vim.log.levels.INFO) end

--- The project root of a buffer: the one a chat or input buffer belongs to, else
--- found from `root_markers`, else the file's folder, else the working directory.
function M.root_of(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  if vim.b[bufnr].loopd_root then return vim.b[bufnr].loopd_root end
  local name = vim.api.nvim_buf_get_name(bufnr)
  local found = vim.fs.root and vim.fs.root(bufnr, M.config.root_markers)
  if not found and name ~= '' and vim.bo[bufnr].buftype == '' then found = vim.fs.dirname(name) end
  return found or vim.fn.getcwd()
end

--- The loopd client serving `root` (the current buffer's project by default).
function M.client(bufnr, root)
  root = root or M.root_of(bufnr)
  local clients = vim.lsp.get_clients({ name = M.config.name })
  for _, c in ipairs(clients) do
    if c.root_dir == root then return c end
  end
  return clients[1]
end

--- The project of `root` (the current buffer's by default), made on first use.
function M.project(root)
  root = root or M.root_of(0)
  local p = M.projects[root]
  if not p then
    p = { root = root, session = nil, config_options = {}, request = nil, last_stop = nil, turns = 0 }
    p.verification = nil -- the newest seal (`_meta.loopd.verification`) of the session
    p.left = {} -- sessions this project moved away from (:Loopd new, :Loopd sessions)
    p.send = function(text) M.ask(text, nil, p) end
    p.chat = Chat.new(p)
    M.projects[root] = p
  end
  return p
end

-- The requests that run a turn: their answer ends it, and a cancel answers -32800.
local TURNS = { ['loopd/session/prompt'] = true, ['loopd/session/continue'] = true }

local function request(project, method, params, on_result)
  local client = M.client(nil, project.root)
  if not client then return notify('not running (open a file first)', vim.log.levels.ERROR) end
  local _, id = call(client, 'request', method, params, function(err, result)
    if err then
      if TURNS[method] and err.code == -32800 then return on_result and on_result(nil, err) end
      notify(method .. ': ' .. tostring(err.message), vim.log.levels.ERROR)
    end
    if on_result then on_result(result, err) end
  end, 0)
  return id
end

-- -- the verification seal ---------------------------------------------------------

-- The seal arrives in the update stream and on the prompt's answer; either way it is
-- the newest word on the project's session.
local function take_seal(project, v)
  if not v then return end
  project.verification = v
  vim.schedule(function() pcall(vim.cmd.redrawstatus, { bang = true }) end)
end

--- For 'statusline': the seal of the project of `bufnr` (by default the buffer of
--- the window being drawn), '' before any.
function M.statusline(bufnr)
  local project = M.projects[M.root_of(bufnr)]
  return seal.line(project and project.verification)
end

--- One update of the project's session: its seal, then the chat.
local function deliver(project, update)
  take_seal(project, seal.of(update._meta))
  project.chat:feed(update)
end

local function bind(project, session_id)
  if project.session then
    by_session[project.session] = nil
    project.left[project.session] = true
  end
  project.session = session_id
  if not session_id then return end
  by_session[session_id] = project
  for _, update in ipairs(early[session_id] or {}) do deliver(project, update) end
  early[session_id] = nil
end

-- -- approvals ------------------------------------------------------------------------

-- The session's project, or the current one for a session this Neovim never bound.
local function asker(params) return by_session[params.sessionId] or M.project() end

local function ask_permission(_, params) return approval.permission(params, M.config.approval, asker(params).chat) end

local function ask_user(_, params) return approval.ask_user(params, asker(params).chat) end

local handlers = {
  ['loopd/session/update'] = function(_, params, ctx)
    if not params then return end
    local project = by_session[params.sessionId]
    if not project then
      -- A session the server started for this project (a code action's turn) becomes
      -- the project's session when it has none; one it left stays left.
      local client = ctx and vim.lsp.get_client_by_id(ctx.client_id)
      local candidate = client and client.root_dir and M.project(client.root_dir)
      if candidate and not candidate.session and not candidate.opening and not candidate.left[params.sessionId] then
        bind(candidate, params.sessionId)
        project = candidate
      end
    end
    if project then return deliver(project, params.update) end
    -- a session this Neovim has not bound (yet): kept until its answer binds it
    local kept = early[params.sessionId] or {}
    early[params.sessionId] = kept
    if #kept < EARLY_LIMIT then table.insert(kept, params.update) end
  end,
  ['loopd/session/requestPermission'] = ask_permission,
  ['loopd/session/askUser'] = ask_user,
}

-- -- sessions (one per project root) ---------------------------------------------

local function remember(project, result)
  if not result then return end
  if result.configOptions then project.config_options = result.configOptions end
  project.chat:opened(result)
end

local function with_session(project, fn)
  if project.session then return fn(project.session) end
  project.opening = true
  request(project, 'loopd/session/new', { cwd = project.root, mcpServers = {} }, function(result)
    project.opening = false
    if not result then return end
    bind(project, result.sessionId)
    remember(project, result)
    fn(result.sessionId)
  end)
end

function M.new_session(project)
  project = project or M.project()
  bind(project, nil)
  project.chat:reset()
  with_session(project, function(id) notify('new session ' .. id) end)
end

--- Run one turn of the project's session (`method`: one of TURNS), `said` shown as
--- the person's words; its answer ends it in the chat, with the seal.
local function turn(project, method, params, said)
  if M.config.open_chat then project.chat:open() end
  project.chat:note('user', said)
  project.turns = project.turns + 1
  project.last_stop = nil
  project.request = request(project, method, params, function(result, err)
    project.request = nil
    project.last_stop = result and result.stopReason or (err and err.code == -32800 and 'cancelled') or 'error'
    local v = seal.of(result and result._meta)
    take_seal(project, v)
    project.chat:note('note', 'turn ended: ' .. project.last_stop .. (v and (' · ' .. v.summary) or ''))
  end)
end

function M.ask(text, range, project)
  project = project or M.project()
  if not text or text == '' then
    return vim.ui.input({ prompt = 'Ask loopd: ' }, function(input)
      if input and input ~= '' then M.ask(input, range, project) end
    end)
  end
  local blocks = { { type = 'text', text = text } }
  if range then
    local buf = vim.api.nvim_get_current_buf()
    local lines = vim.api.nvim_buf_get_lines(buf, range[1] - 1, range[2], false)
    local uri = vim.uri_from_bufnr(buf) .. string.format('#L%d-%d', range[1], range[2])
    table.insert(blocks, { type = 'resource', resource = { uri = uri, text = table.concat(lines, '\n') } })
  end
  with_session(project, function(id) turn(project, 'loopd/session/prompt', { sessionId = id, prompt = blocks }, text) end)
end

--- Continue the project's session where a crash cut its last turn off (the server
--- says when there is nothing to continue).
function M.continue(project)
  project = project or M.project()
  if not project.session then return notify('no session yet in this project') end
  turn(project, 'loopd/session/continue', { sessionId = project.session }, '/continue')
end

--- Say something to the project's running turn: it reads it at its next step (a
--- reply being written is interrupted for it). With no turn running (the server
--- refuses the steer), it is sent as a prompt.
function M.steer(text, project)
  project = project or M.project()
  if not text or text == '' then
    return vim.ui.input({ prompt = 'Tell loopd (mid-turn): ' }, function(input)
      if input and input ~= '' then M.steer(input, project) end
    end)
  end
  local client = M.client(nil, project.root)
  if not client or not project.session then return M.ask(text, nil, project) end
  call(client, 'request', 'loopd/session/steer', { sessionId = project.session, text = text }, function(err)
    if err then return M.ask(text, nil, project) end -- no turn is running: a plain prompt
  end, 0)
end

function M.cancel(project)
  project = project or M.project()
  local client = M.client(nil, project.root)
  if client and project.request then
    -- $/cancelRequest cancels the turn; Neovim drops the -32800 answer, so note it here.
    call(client, 'cancel_request', project.request)
    project.request, project.last_stop = nil, 'cancelled'
    project.chat:note('note', 'turn ended: cancelled')
  elseif client and project.session then
    call(client, 'notify', 'loopd/session/cancel', { sessionId = project.session })
  end
end

function M.sessions(project)
  project = project or M.project()
  request(project, 'loopd/session/list', { cwd = project.root }, function(result)
    if not result or #result.sessions == 0 then return notify('no sessions here') end
    pick.session(result.sessions, function(s)
      if not s then return end
      bind(project, s.sessionId)
      project.chat:reset()
      project.chat.title = s.title
      if M.config.open_chat then project.chat:open() end
      request(project, 'loopd/session/load', { sessionId = s.sessionId, cwd = s.cwd, mcpServers = {} }, function(r)
        remember(project, r)
      end)
    end)
  end)
end

local function set_option(option, value)
  local project = M.project()
  with_session(project, function(id)
    local function apply(v)
      if not v then return end
      request(project, 'loopd/session/setConfigOption', { sessionId = id, configId = option, value = v }, function(r)
        remember(project, r)
        if r then notify(option .. ' = ' .. v) end
      end)
    end
    if value and value ~= '' then return apply(value) end
    pick.option(project.config_options, option, apply)
  end)
end

local function execute(client, command, on_result)
  call(client, 'request', 'workspace/executeCommand', { command = command, arguments = {} }, on_result, 0)
end

--- Log in: `loopd login` in a terminal split, then ask the project's server whether a
--- runtime is usable now, and say so.
function M.login(project)
  project = project or M.project()
  local cmd = M.config.login_cmd or login.command(M.config.cmd)
  if not cmd then
    return notify('cannot tell the login command from `cmd`: set `login_cmd` in setup()', vim.log.levels.ERROR)
  end
  login.run(cmd, M.config.cmd_env, function(code)
    login.report(cmd, code, M.client(nil, project.root), execute, notify)
  end)
end

function M.rewind(project)
  project = project or M.project()
  if not project.session then return notify('no session yet in this project') end
  require('loopd.rewind').pick(request, notify, project, project.session)
end

function M.undo()
  local client = M.client()
  if not client then return end
  execute(client, 'loopd.undo', function(err, result)
    if err then return notify(err.message, vim.log.levels.WARN) end
    notify(result.summary)
  end)
end

-- -- wiring -------------------------------------------------------------------------

local subcommands = {
  ask = function(args, range) M.ask(args, range) end,
  cancel = function() M.cancel() end,
  continue = function() M.continue() end,
  steer = function(args) M.steer(args) end,
  new = function() M.new_session() end,
  sessions = function() M.sessions() end,
  mode = function(args) set_option('mode', args) end,
  model = function(args) set_option('model', args) end,
  undo = function() M.undo() end,
  rewind = function() M.rewind() end,
  login = function() M.login() end,
  chat = function() M.project().chat:open({ focus = true }) end,
}

local function command(opts)
  local name, rest = opts.args:match('^(%S+)%s*(.*)$')
  local fn = subcommands[name or '']
  if not fn then return notify('unknown subcommand ' .. tostring(name), vim.log.levels.ERROR) end
  fn(rest, opts.range > 0 and { opts.line1, opts.line2 } or nil)
end

function M.attach(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  if vim.bo[bufnr].buftype ~= '' or vim.api.nvim_buf_get_name(bufnr) == '' then return end
  local ft = M.config.filetypes
  if ft and not vim.tbl_contains(ft, vim.bo[bufnr].filetype) then return end
  local capabilities = vim.tbl_deep_extend('force', vim.lsp.protocol.make_client_capabilities(), {
    experimental = { loopd = { sessionUpdate = true, requestPermission = true, askUser = true } },
  })
  if remote.problem(M.config.remote) then return end -- said once, by setup()
  return vim.lsp.start({
    name = M.config.name,
    cmd = remote.command(M.config.cmd, M.config.remote),
    cmd_env = M.config.cmd_env,
    root_dir = M.root_of(bufnr),
    capabilities = capabilities,
    handlers = handlers,
  }, { bufnr = bufnr })
end

function M.setup(opts)
  M.config = vim.tbl_deep_extend('force', M.config, opts or {})
  M.configured = true
  local problem = remote.problem(M.config.remote)
  if problem then notify(problem, vim.log.levels.ERROR) end
  vim.api.nvim_create_user_command('Loopd', command, {
    nargs = '+',
    range = true,
    complete = function(lead)
      return vim.tbl_filter(function(n) return n:find(lead, 1, true) == 1 end, vim.tbl_keys(subcommands))
    end,
  })
  actions.register(call)
  local group = vim.api.nvim_create_augroup('loopd', { clear = true })
  vim.api.nvim_create_autocmd({ 'BufReadPost', 'BufNewFile', 'FileType' }, {
    group = group,
    callback = function(ev) M.attach(ev.buf) end,
  })
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) then M.attach(buf) end
  end
end

return M
