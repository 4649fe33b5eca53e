-- The chat buffer: renders loopd/session/update (exactly ACP session/update params)
-- as markdown. Streamed text is gathered into paragraphs, thoughts are folded, tool
-- calls show their status (and diffs), the plan is one checklist updated in place.
local M = {}

local function new_state()
  return { blocks = {}, tools = {}, plan = nil, buf = nil, dirty = false }
end

M.state = new_state()

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

local function append_chunk(kind, update)
  local last = M.state.blocks[#M.state.blocks]
  if last and last.kind == kind and last.id == update.messageId then
    last.text = last.text .. chunk_text(update.content)
  else
    table.insert(M.state.blocks, { kind = kind, id = update.messageId, text = chunk_text(update.content) })
  end
end

local function merge_tool(update)
  local tool = M.state.tools[update.toolCallId]
  if not tool then
    tool = { kind = 'tool', id = update.toolCallId, title = '', status = 'pending', content = {} }
    M.state.tools[update.toolCallId] = tool
    table.insert(M.state.blocks, tool)
  end
  for _, key in ipairs({ 'title', 'status', 'content', 'rawInput', 'kind' }) do
    if update[key] ~= nil and key ~= 'kind' then tool[key] = update[key] end
  end
end

local function tokens(n)
  if n >= 1000 then return string.format('%.1fk', n / 1000) end
  return tostring(n)
end

--- The context in use, for a statusline: `g:loopd_usage` ("context 12% of 200k, $0.04").
local function set_usage(update)
  local used, size = tonumber(update.used) or 0, tonumber(update.size) or 0
  local text = string.format('context %d%% of %s', size > 0 and math.floor(100 * used / size) or 0, tokens(size))
  if type(update.cost) == 'table' and update.cost.amount then
    text = text .. string.format(', $%.2f', update.cost.amount)
  end
  vim.g.loopd_usage = text
end

--- Feed one update; rendering happens once per event-loop turn.
function M.feed(update)
  local kind = update.sessionUpdate
  if kind == 'usage_update' then
    set_usage(update)
    return
  elseif kind == 'agent_message_chunk' then
    append_chunk('agent', update)
  elseif kind == 'agent_thought_chunk' then
    append_chunk('thought', update)
  elseif kind == 'user_message_chunk' then
    append_chunk('user', update)
  elseif kind == 'tool_call' or kind == 'tool_call_update' then
    merge_tool(update)
  elseif kind == 'plan' then
    if not M.state.plan then
      M.state.plan = { kind = 'plan', entries = {} }
      table.insert(M.state.blocks, M.state.plan)
    end
    M.state.plan.entries = update.entries or {}
  elseif kind == 'current_mode_update' then
    table.insert(M.state.blocks, { kind = 'note', text = 'mode: ' .. tostring(update.currentModeId) })
  else
    return
  end
  M.schedule()
end

--- A line of our own (the prompt as sent, how a turn ended).
function M.note(kind, text)
  table.insert(M.state.blocks, { kind = kind, text = text })
  M.schedule()
end

function M.reset()
  local buf = M.state.buf
  M.state = new_state()
  M.state.buf = buf
  M.schedule()
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

function M.lines()
  local out = {}
  for i, b in ipairs(M.state.blocks) do
    if i > 1 then table.insert(out, '') end
    vim.list_extend(out, block_lines(b))
  end
  return out
end

--- Fold thoughts (the `> ` lines) closed.
function M.foldexpr(lnum)
  return vim.fn.getline(lnum):sub(1, 2) == '> ' and '1' or '0'
end

function M.buffer()
  local buf = M.state.buf
  if buf and vim.api.nvim_buf_is_valid(buf) then return buf end
  buf = vim.api.nvim_create_buf(true, true)
  vim.api.nvim_buf_set_name(buf, 'loopd://chat')
  vim.bo[buf].filetype = 'markdown'
  vim.bo[buf].bufhidden = 'hide'
  M.state.buf = buf
  return buf
end

function M.open()
  local buf = M.buffer()
  if vim.fn.bufwinid(buf) == -1 then
    vim.cmd('botright vsplit')
    vim.api.nvim_win_set_buf(0, buf)
    vim.wo.foldmethod = 'expr'
    vim.wo.foldexpr = "v:lua.require'loopd.chat'.foldexpr(v:lnum)"
    vim.wo.foldlevel = 0
    vim.cmd('wincmd p')
  end
  M.render()
end

function M.render()
  M.state.dirty = false
  local buf = M.buffer()
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, M.lines())
  vim.bo[buf].modifiable = false
  local win = vim.fn.bufwinid(buf)
  if win ~= -1 then vim.api.nvim_win_set_cursor(win, { vim.api.nvim_buf_line_count(buf), 0 }) end
end

function M.schedule()
  if M.state.dirty then return end
  M.state.dirty = true
  vim.schedule(M.render)
end

return M
