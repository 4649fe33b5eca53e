-- loopd for Neovim (>= 0.10): starts `loopd lsp` with the built-in client, opts into
-- the loopd extension (ACP-shaped session methods), renders the session in a chat
-- buffer and answers approvals with vim.ui.select. Progress is plain LSP progress,
-- so fidget-style plugins and `vim.lsp.status()` show it.
local chat = require('loopd.chat')

local M = {}

M.config = {
  cmd = { 'loopd', 'lsp' }, -- how to start the server
  cmd_env = nil,
  name = 'loopd',
  root_markers = { '.loopd', '.git' },
  filetypes = nil, -- nil: every file buffer
  open_chat = true, -- open the chat window on :Loopd ask
}

-- What this Neovim knows about its loopd session.
M.state = { session = nil, config_options = {}, request = nil, last_stop = nil, turns = 0, verification = nil }

local has011 = vim.fn.has('nvim-0.11') == 1

local function call(client, method, ...)
  if has011 then return client[method](client, ...) end
  return client[method](...)
end

function M.client(bufnr)
  local clients = vim.lsp.get_clients({ name = M.config.name, bufnr = bufnr })
  if #clients == 0 then clients = vim.lsp.get_clients({ name = M.config.name }) end
  return clients[1]
end

local function notify(msg, level) vim.notify('loopd: ' .. msg, level or vim.log.levels.INFO) end

local function request(method, params, on_result)
  local client = M.client()
  if not client then return notify('not running (open a file first)', vim.log.levels.ERROR) end
  local _, id = call(client, 'request', method, params, function(err, result)
    if err then
      if method == 'loopd/session/prompt' and err.code == -32800 then return on_result and on_result(nil, err) end
      notify(method .. ': ' .. tostring(err.message), vim.log.levels.ERROR)
    end
    if on_result then on_result(result, err) end
  end, 0)
  return id
end

local function root_of(bufnr)
  local name = vim.api.nvim_buf_get_name(bufnr)
  local found = vim.fs.root and vim.fs.root(bufnr, M.config.root_markers)
  if not found and name ~= '' then found = vim.fs.dirname(name) end
  return found or vim.fn.getcwd()
end

-- -- approvals (loopd/session/requestPermission: ACP session/request_permission) --

local function describe(tool_call)
  local lines = { tostring(tool_call.title) }
  local raw = tool_call.rawInput or {}
  if raw.command then table.insert(lines, '$ ' .. tostring(raw.command)) end
  for _, c in ipairs(tool_call.content or {}) do
    if c.type == 'diff' then
      local ok, d = pcall(vim.diff, c.oldText or '', c.newText or '', { result_type = 'unified' })
      table.insert(lines, '--- ' .. tostring(c.path))
      if ok and d then vim.list_extend(lines, vim.split(d, '\n', { trimempty = true })) end
    end
  end
  return table.concat(lines, '\n')
end

-- Ask the person through a callback-style UI (`start(settle)`) from a server request
-- handler, and wait for the answer: inside the client's coroutine by yielding, else by
-- polling the event loop.
local function answered(start)
  local done, value = false, nil
  local co = coroutine.running()
  start(function(v)
    value, done = v, true
    if co and coroutine.status(co) == 'suspended' then
      vim.schedule(function() coroutine.resume(co) end)
    end
  end)
  if not done then
    if co and coroutine.isyieldable() then
      coroutine.yield()
    else
      vim.wait(600000, function() return done end, 20)
    end
  end
  return value
end

local function ask_permission(_, params)
  local choice = answered(function(settle)
    vim.ui.select(params.options, {
      prompt = 'loopd asks: ' .. describe(params.toolCall),
      kind = 'loopd.permission',
      format_item = function(o) return o.name end,
    }, settle)
  end)
  local id = choice and choice.optionId or 'reject_once'
  return { outcome = { outcome = 'selected', optionId = id } }
end

-- -- the verification seal ---------------------------------------------------------

-- The seal arrives in the update stream (session_info_update, _meta.loopd.verification)
-- and on the prompt's answer; either way it is the newest word on the session.
local function seal_of(meta)
  return type(meta) == 'table' and type(meta.loopd) == 'table' and meta.loopd.verification or nil
end

local function take_seal(v)
  if not v then return end
  M.state.verification = v
  vim.schedule(function() pcall(vim.cmd.redrawstatus) end)
end

--- For 'statusline': "loopd: passed", "loopd: failed (tests)", "loopd: incomplete (tests)",
--- "loopd: stale"... or '' before any seal. Protected writes add "!protected".
function M.statusline()
  local v = M.state.verification
  if not v then return '' end
  local word = v.incomplete and 'incomplete' or v.seal
  local text = 'loopd: ' .. word
  if (v.incomplete or v.seal == 'failed') and #(v.unmet or {}) > 0 then
    text = text .. ' (' .. table.concat(v.unmet, ', ') .. ')'
  end
  if #(v.protectedWrites or {}) > 0 then text = text .. ' !protected' end
  return text
end

-- -- the agent's questions (loopd/session/askUser) --------------------------------------

local OTHER = 'Something else…'

local function ask_user(_, params)
  local prompt = 'loopd asks: ' .. tostring(params.question)
  local items = vim.list_extend({}, params.choices or {})
  if params.allowText and #items > 0 then table.insert(items, OTHER) end
  local answer = answered(function(settle)
    local function free_text() vim.ui.input({ prompt = prompt .. ' ' }, settle) end
    if #items == 0 then return free_text() end
    vim.ui.select(items, { prompt = prompt, kind = 'loopd.question' }, function(item)
      if item == OTHER then return free_text() end
      settle(item)
    end)
  end)
  return { answer = answer }
end

local handlers = {
  ['loopd/session/update'] = function(_, params)
    if params and params.sessionId == M.state.session then
      take_seal(seal_of(params.update._meta))
      chat.feed(params.update)
    end
  end,
  ['loopd/session/requestPermission'] = ask_permission,
  ['loopd/session/askUser'] = ask_user,
}

-- -- sessions -----------------------------------------------------------------------

local function remember(result)
  if result and result.configOptions then M.state.config_options = result.configOptions end
end

local function with_session(fn)
  if M.state.session then return fn(M.state.session) end
  request('loopd/session/new', { cwd = root_of(0), mcpServers = {} }, function(result)
    if not result then return end
    M.state.session = result.sessionId
    remember(result)
    fn(result.sessionId)
  end)
end

function M.new_session()
  M.state.session = nil
  chat.reset()
  with_session(function(id) notify('new session ' .. id) end)
end

function M.ask(text, range)
  if not text or text == '' then
    return vim.ui.input({ prompt = 'Ask loopd: ' }, function(input)
      if input and input ~= '' then M.ask(input, range) end
    end)
  end
  local blocks = { { type = 'text', text = text } }
  if range then
    local buf = vim.api.nvim_get_current_buf()
    local lines = vim.api.nvim_buf_get_lines(buf, range[1] - 1, range[2], false)
    local uri = vim.uri_from_bufnr(buf) .. string.format('#L%d-%d', range[1], range[2])
    table.insert(blocks, { type = 'resource', resource = { uri = uri, text = table.concat(lines, '\n') } })
  end
  with_session(function(id)
    if M.config.open_chat then chat.open() end
    chat.note('user', text)
    M.state.turns = M.state.turns + 1
    M.state.last_stop = nil
    M.state.request = request('loopd/session/prompt', { sessionId = id, prompt = blocks }, function(result, err)
      M.state.request = nil
      M.state.last_stop = result and result.stopReason or (err and err.code == -32800 and 'cancelled') or 'error'
      local seal = seal_of(result and result._meta)
      take_seal(seal)
      chat.note('note', 'turn ended: ' .. M.state.last_stop .. (seal and (' · ' .. seal.summary) or ''))
    end)
  end)
end

--- Say something to the running turn; it reads it at its next step (a streaming
--- reply is interrupted for it). With no turn running, it is sent as a prompt.
function M.steer(text)
  if not text or text == '' then
    return vim.ui.input({ prompt = 'Tell loopd (mid-turn): ' }, function(input)
      if input and input ~= '' then M.steer(input) end
    end)
  end
  local client = M.client()
  if not client or not M.state.session then return M.ask(text) end
  call(client, 'request', 'loopd/session/steer', { sessionId = M.state.session, text = text }, function(err)
    if err then return M.ask(text) end -- no turn is running: a plain prompt
  end, 0)
end

function M.cancel()
  local client = M.client()
  if client and M.state.request then
    -- $/cancelRequest cancels the turn; Neovim drops the -32800 answer, so note it here.
    call(client, 'cancel_request', M.state.request)
    M.state.request, M.state.last_stop = nil, 'cancelled'
    chat.note('note', 'turn ended: cancelled')
  elseif client and M.state.session then
    call(client, 'notify', 'loopd/session/cancel', { sessionId = M.state.session })
  end
end

function M.sessions()
  request('loopd/session/list', { cwd = root_of(0) }, function(result)
    if not result or #result.sessions == 0 then return notify('no sessions here') end
    vim.ui.select(result.sessions, {
      prompt = 'Load a loopd session',
      format_item = function(s) return (s.title or s.sessionId) .. '  ' .. (s.updatedAt or '') end,
    }, function(s)
      if not s then return end
      M.state.session = s.sessionId
      chat.reset()
      if M.config.open_chat then chat.open() end
      request('loopd/session/load', { sessionId = s.sessionId, cwd = s.cwd, mcpServers = {} }, remember)
    end)
  end)
end

local function set_option(option, value)
  with_session(function(id)
    local function apply(v)
      if not v then return end
      request('loopd/session/setConfigOption', { sessionId = id, configId = option, value = v }, function(r)
        remember(r)
        if r then notify(option .. ' = ' .. v) end
      end)
    end
    if value and value ~= '' then return apply(value) end
    for _, o in ipairs(M.state.config_options) do
      if o.id == option then
        return vim.ui.select(o.options, {
          prompt = 'loopd ' .. option,
          format_item = function(c) return c.name .. (c.value == o.currentValue and ' (current)' or '') end,
        }, function(c) apply(c and c.value) end)
      end
    end
  end)
end

function M.undo()
  local client = M.client()
  if not client then return end
  call(client, 'request', 'workspace/executeCommand', { command = 'loopd.undo', arguments = {} }, function(err, result)
    if err then return notify(err.message, vim.log.levels.WARN) end
    notify(result.summary)
  end, 0)
end

-- -- wiring -------------------------------------------------------------------------

local subcommands = {
  ask = function(args, range) M.ask(args, range) end,
  cancel = function() M.cancel() end,
  steer = function(args) M.steer(args) end,
  new = function() M.new_session() end,
  sessions = function() M.sessions() end,
  mode = function(args) set_option('mode', args) end,
  model = function(args) set_option('model', args) end,
  undo = function() M.undo() end,
  chat = function() chat.open() end,
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
  return vim.lsp.start({
    name = M.config.name,
    cmd = M.config.cmd,
    cmd_env = M.config.cmd_env,
    root_dir = root_of(bufnr),
    capabilities = capabilities,
    handlers = handlers,
  }, { bufnr = bufnr })
end

function M.setup(opts)
  M.config = vim.tbl_deep_extend('force', M.config, opts or {})
  vim.api.nvim_create_user_command('Loopd', command, {
    nargs = '+',
    range = true,
    complete = function(lead)
      return vim.tbl_filter(function(n) return n:find(lead, 1, true) == 1 end, vim.tbl_keys(subcommands))
    end,
  })
  -- "Ask loopd" code actions come without a question: ask for one here.
  vim.lsp.commands['loopd.ask'] = function(cmd, ctx)
    local arg = (cmd.arguments or {})[1] or {}
    local function send(text)
      arg.prompt = text
      local client = vim.lsp.get_client_by_id(ctx.client_id)
      if client then
        call(client, 'request', 'workspace/executeCommand', { command = 'loopd.ask', arguments = { arg } }, nil, ctx.bufnr)
      end
    end
    if arg.ask and not arg.prompt then
      vim.ui.input({ prompt = 'Ask loopd: ' }, function(text) if text then send(text) end end)
    else
      send(arg.prompt)
    end
  end
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
