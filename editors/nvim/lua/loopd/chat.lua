-- One project's chat: a log buffer rendering loopd/session/update (exactly ACP
-- session/update params) as markdown, an input buffer below it where Enter sends,
-- and a winbar with the session's title, mode and token usage. Streamed text is
-- gathered into paragraphs, thoughts are folded, tool calls show their status (and
-- diffs), the plan is one checklist updated in place.
local Chat = {}
Chat.__index = Chat

local by_buf = {} -- buffer -> chat, for the omnifunc and the foldexpr

--- A chat for `project` ({ root, send = function(text) }).
function Chat.new(project)
  return setmetatable({
    project = project,
    blocks = {},
    tools = {},
    plan = nil,
    buf = nil,
    input = nil,
    dirty = false,
    title = nil,
    mode = nil,
    usage = nil,
    commands = {},
  }, Chat)
end

local function chunk_text(content)
  if type(content) ~= 'table' then return '' end
  if content.type == 'text' then return content.text or '' end
  if content.type == 'resource' then return '\n`' .. tostring((content.resource or {}).uri) .. '`\n' end
  if content.type == 'resource_link' then return '`' .. tostring(content.uri) .. '`' end
  return ''
end

local function diff_lines(d)
  local old, new = d.oldText or '', d.newText or ''
  local ok, text = pcall(vim.diff, old, new, { result_type = 'unified' })
  local lines = { '```diff', '--- ' .. tostring(d.path), '+++ ' .. tostring(d.path) }
  for _, l in ipairs(vim.split(ok and text or '', '\n', { trimempty = true })) do table.insert(lines, l) end
  table.insert(lines, '```')
  return lines
end

local function content_lines(items)
  local lines = {}
  for _, c in ipairs(items or {}) do
    if c.type == 'diff' then
      vim.list_extend(lines, diff_lines(c))
    elseif c.type == 'content' then
      table.insert(lines, '```')
      vim.list_extend(lines, vim.split(chunk_text(c.content), '\n', { trimempty = true }))
      table.insert(lines, '```')
    elseif c.type == 'terminal' then
      table.insert(lines, '[terminal ' .. tostring(c.terminalId) .. ']')
    end
  end
  return lines
end

function Chat:append_chunk(kind, update)
  local last = self.blocks[#self.blocks]
  if last and last.kind == kind and last.id == update.messageId then
    last.text = last.text .. chunk_text(update.content)
  else
    table.insert(self.blocks, { kind = kind, id = update.messageId, text = chunk_text(update.content) })
  end
end

function Chat:merge_tool(update)
  local tool = self.tools[update.toolCallId]
  if not tool then
    tool = { kind = 'tool', id = update.toolCallId, title = '', status = 'pending', content = {} }
    self.tools[update.toolCallId] = tool
    table.insert(self.blocks, tool)
  end
  for _, key in ipairs({ 'title', 'status', 'content', 'rawInput' }) do
    if update[key] ~= nil then tool[key] = update[key] end
  end
end

local function current_mode(options)
  for _, o in ipairs(options or {}) do
    if o.id == 'mode' then return o.currentValue end
  end
end

--- Feed one update; rendering happens once per event-loop turn.
function Chat:feed(update)
  local kind = update.sessionUpdate
  if kind == 'agent_message_chunk' then
    self:append_chunk('agent', update)
  elseif kind == 'agent_thought_chunk' then
    self:append_chunk('thought', update)
  elseif kind == 'user_message_chunk' then
    self:append_chunk('user', update)
  elseif kind == 'tool_call' or kind == 'tool_call_update' then
    self:merge_tool(update)
  elseif kind == 'plan' then
    if not self.plan then
      self.plan = { kind = 'plan', entries = {} }
      table.insert(self.blocks, self.plan)
    end
    self.plan.entries = update.entries or {}
  elseif kind == 'current_mode_update' then
    self.mode = update.currentModeId
    table.insert(self.blocks, { kind = 'note', text = 'mode: ' .. tostring(update.currentModeId) })
  elseif kind == 'config_option_update' then
    self.mode = current_mode(update.configOptions) or self.mode
  elseif kind == 'session_info_update' then
    self.title = update.title or self.title
  elseif kind == 'usage_update' then
    self.usage = { used = update.used, size = update.size, cost = update.cost }
  elseif kind == 'available_commands_update' then
    self.commands = update.availableCommands or {}
  else
    return
  end
  self:schedule()
end

--- What the session said when it opened (loopd/session/new or load result).
function Chat:opened(result)
  self.mode = current_mode(result.configOptions) or self.mode
  local meta = (result._meta or {}).loopd or {}
  if meta.availableCommands then self.commands = meta.availableCommands end
  self:schedule()
end

--- A line of our own (the prompt as sent, an answer given, how a turn ended).
function Chat:note(kind, text)
  table.insert(self.blocks, { kind = kind, text = text })
  self:schedule()
end

--- Forget what was shown (a new or loaded session); the buffers stay.
function Chat:reset()
  self.blocks, self.tools, self.plan = {}, {}, nil
  self.title, self.usage = nil, nil
  self:schedule()
end

local function block_lines(b)
  if b.kind == 'user' then
    return { '## You', '', unpack(vim.split(b.text, '\n')) }
  elseif b.kind == 'agent' then
    return { '## loopd', '', unpack(vim.split(b.text, '\n')) }
  elseif b.kind == 'thought' then
    local lines = {}
    for _, l in ipairs(vim.split(b.text, '\n')) do table.insert(lines, '> ' .. l) end
    return lines
  elseif b.kind == 'tool' then
    local lines = { string.format('- **%s** `%s`', b.status, b.title) }
    vim.list_extend(lines, content_lines(b.content))
    return lines
  elseif b.kind == 'plan' then
    local lines = { '**Plan**' }
    for _, e in ipairs(b.entries) do
      local mark = ({ completed = 'x', in_progress = '~' })[e.status] or ' '
      table.insert(lines, string.format('- [%s] %s', mark, e.content))
    end
    return lines
  end
  return { '_' .. tostring(b.text) .. '_' }
end

function Chat:lines()
  local out = {}
  for i, b in ipairs(self.blocks) do
    if i > 1 then table.insert(out, '') end
    vim.list_extend(out, block_lines(b))
  end
  return out
end

--- The winbar: title, mode, tokens used of the context window, and the cost.
function Chat:status()
  local parts = { 'loopd', self.title or 'new session' }
  if self.mode then table.insert(parts, self.mode) end
  local u = self.usage
  if u and u.used then
    local tokens = u.size and u.size > 0 and string.format('%d/%d tokens', u.used, u.size)
      or string.format('%d tokens', u.used)
    table.insert(parts, tokens)
    if u.cost and u.cost.amount then
      table.insert(parts, string.format('%.4f %s', u.cost.amount, u.cost.currency or ''))
    end
  end
  return table.concat(parts, ' · ')
end

-- -- the input area ---------------------------------------------------------------

--- Send what the input area holds (Enter), and empty it.
function Chat:submit()
  local buf = self.input
  if not buf or not vim.api.nvim_buf_is_valid(buf) then return end
  local text = vim.trim(table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n'))
  if text == '' then return end
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { '' })
  self.project.send(text)
end

--- The slash commands starting with `base`, as completion items.
function Chat:complete_items(base)
  local items = {}
  for _, c in ipairs(self.commands) do
    local word = '/' .. c.name
    if word:sub(1, #base) == base then
      table.insert(items, { word = word, menu = c.description, info = (c.input or {}).hint })
    end
  end
  return items
end

--- 'omnifunc' of the input area: completes slash commands at the start of a line.
function Chat.omnifunc(findstart, base)
  local chat = by_buf[vim.api.nvim_get_current_buf()]
  if findstart == 1 then
    local line = vim.api.nvim_get_current_line():sub(1, vim.fn.col('.') - 1)
    return (chat and line:match('^/%S*$')) and 0 or -3
  end
  return chat and chat:complete_items(base) or {}
end

function Chat:input_buffer()
  if self.input and vim.api.nvim_buf_is_valid(self.input) then return self.input end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(buf, 'loopd://input/' .. self.project.root)
  vim.bo[buf].filetype = 'markdown'
  vim.bo[buf].bufhidden = 'hide'
  vim.bo[buf].omnifunc = "v:lua.require'loopd.chat'.omnifunc"
  vim.b[buf].loopd_root = self.project.root
  local function map(mode, lhs, rhs, desc)
    vim.keymap.set(mode, lhs, rhs, { buffer = buf, desc = desc })
  end
  map({ 'n', 'i' }, '<CR>', function() self:submit() end, 'Send to loopd')
  map('i', '<S-CR>', '<CR>', 'New line')
  map('i', '<C-j>', '<CR>', 'New line')
  vim.keymap.set('i', '/', function()
    if vim.api.nvim_get_current_line() == '' then
      vim.schedule(function() vim.fn.complete(1, self:complete_items('/')) end)
    end
    return '/'
  end, { buffer = buf, expr = true, desc = 'Slash commands' })
  by_buf[buf] = self
  self.input = buf
  return buf
end

-- -- windows ----------------------------------------------------------------------

--- Fold thoughts (the `> ` lines) closed.
function Chat.foldexpr(lnum)
  return vim.fn.getline(lnum):sub(1, 2) == '> ' and '1' or '0'
end

function Chat:buffer()
  if self.buf and vim.api.nvim_buf_is_valid(self.buf) then return self.buf end
  local buf = vim.api.nvim_create_buf(true, true)
  vim.api.nvim_buf_set_name(buf, 'loopd://chat/' .. self.project.root)
  vim.bo[buf].filetype = 'markdown'
  vim.bo[buf].bufhidden = 'hide'
  vim.bo[buf].modifiable = false
  vim.b[buf].loopd_root = self.project.root
  vim.keymap.set('n', 'i', function() self:open({ focus = true }) end, { buffer = buf, desc = 'Write to loopd' })
  by_buf[buf] = self
  self.buf = buf
  return buf
end

--- Show the chat (log above, input below) in a right-hand split; `focus` moves the
--- cursor into the input area.
function Chat:open(opts)
  local from = vim.api.nvim_get_current_win()
  local buf, input = self:buffer(), self:input_buffer()
  local log_win = vim.fn.bufwinid(buf)
  if log_win == -1 then
    vim.cmd('botright vsplit')
    log_win = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(log_win, buf)
    vim.wo[log_win].foldmethod = 'expr'
    vim.wo[log_win].foldexpr = "v:lua.require'loopd.chat'.foldexpr(v:lnum)"
    vim.wo[log_win].foldlevel = 0
    vim.wo[log_win].wrap = true
  end
  local input_win = vim.fn.bufwinid(input)
  if input_win == -1 then
    vim.api.nvim_set_current_win(log_win)
    vim.cmd('belowright 4split')
    input_win = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(input_win, input)
    vim.wo[input_win].winfixheight = true
    vim.wo[input_win].winbar = 'Enter sends · Ctrl-J new line · / commands'
  end
  vim.api.nvim_set_current_win((opts or {}).focus and input_win or from)
  self:render()
end

function Chat:render()
  self.dirty = false
  local buf = self:buffer()
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, self:lines())
  vim.bo[buf].modifiable = false
  local win = vim.fn.bufwinid(buf)
  if win ~= -1 then
    vim.wo[win].winbar = self:status():gsub('%%', '%%%%')
    vim.api.nvim_win_set_cursor(win, { vim.api.nvim_buf_line_count(buf), 0 })
  end
end

function Chat:schedule()
  if self.dirty then return end
  self.dirty = true
  vim.schedule(function() self:render() end)
end

return Chat
