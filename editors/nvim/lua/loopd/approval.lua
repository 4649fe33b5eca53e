-- Asking the person: approvals (loopd/session/requestPermission, exactly ACP
-- session/request_permission params) and the agent's questions (loopd/session/askUser).
-- By default an approval opens a floating window showing what the agent wants to do,
-- with the diff highlighted, and one key per answer; `approval = 'select'` in setup()
-- uses vim.ui.select instead (for picker plugins). Closing the window, or no answer,
-- rejects. Questions go to vim.ui.select / vim.ui.input.
local M = {}

-- One key per ACP option kind, shown in the window's footer.
M.keys = { allow_once = 'a', allow_always = 'A', reject_once = 'r', reject_always = 'R' }

local function diff_lines(c)
  local ok, d = pcall(vim.diff, c.oldText or '', c.newText or '', { result_type = 'unified', ctxlen = 3 })
  local lines = { '--- ' .. tostring(c.path), '+++ ' .. tostring(c.path) }
  if ok and d then vim.list_extend(lines, vim.split(d, '\n', { trimempty = true })) end
  return lines
end

--- What the question shows: the title, the command, then each diff.
function M.lines(tool_call)
  local lines = { tostring(tool_call.title) }
  local raw = tool_call.rawInput or {}
  if raw.command then table.insert(lines, '$ ' .. tostring(raw.command)) end
  for _, c in ipairs(tool_call.content or {}) do
    if c.type == 'diff' then
      table.insert(lines, '')
      vim.list_extend(lines, diff_lines(c))
    end
  end
  return lines
end

--- The question as one string (the vim.ui.select prompt).
function M.describe(tool_call) return table.concat(M.lines(tool_call), '\n') end

local ns = vim.api.nvim_create_namespace('loopd.approval')
local GROUPS = { ['+'] = 'DiffAdd', ['-'] = 'DiffDelete', ['@'] = 'DiffChange' }

local function highlight(buf, lines)
  for i, line in ipairs(lines) do
    local group = GROUPS[line:sub(1, 1)]
    if i == 1 then group = 'Title' end
    if line:sub(1, 4) == '--- ' or line:sub(1, 4) == '+++ ' then group = 'Directory' end
    if group then
      vim.api.nvim_buf_set_extmark(buf, ns, i - 1, 0, { end_row = i, hl_group = group, hl_eol = true })
    end
  end
end

local function footer(options)
  local parts = {}
  for _, o in ipairs(options) do
    local key = M.keys[o.kind]
    if key then table.insert(parts, string.format('[%s] %s', key, o.name)) end
  end
  table.insert(parts, '[q] Reject')
  return ' ' .. table.concat(parts, '  ') .. ' '
end

--- Open the question in a focused floating window; `on_choice(option or nil)` is
--- called exactly once: with the option whose key was pressed, or nil (q, <Esc>,
--- the window closed).
function M.float(params, on_choice)
  local lines = M.lines(params.toolCall)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].filetype = 'diff'
  vim.bo[buf].modifiable = false
  vim.bo[buf].bufhidden = 'wipe'
  highlight(buf, lines)
  local hint = footer(params.options)
  local width = #hint
  for _, l in ipairs(lines) do width = math.max(width, vim.fn.strdisplaywidth(l)) end
  width = math.min(width + 2, math.max(vim.o.columns - 4, 20))
  local height = math.min(#lines, math.max(vim.o.lines - 6, 3))
  local win = vim.api.nvim_open_win(buf, true, {
    relative = 'editor',
    row = math.floor((vim.o.lines - height) / 2) - 1,
    col = math.floor((vim.o.columns - width) / 2),
    width = width,
    height = height,
    style = 'minimal',
    border = 'rounded',
    title = ' loopd asks ',
    title_pos = 'center',
    footer = hint,
    footer_pos = 'center',
  })
  vim.w[win].loopd_approval = true
  local answered = false
  local function answer(option)
    if answered then return end
    answered = true
    if vim.api.nvim_win_is_valid(win) then vim.api.nvim_win_close(win, true) end
    on_choice(option)
  end
  for _, o in ipairs(params.options) do
    local key = M.keys[o.kind]
    if key then
      vim.keymap.set('n', key, function() answer(o) end, { buffer = buf, nowait = true, desc = o.name })
    end
  end
  for _, key in ipairs({ 'q', '<Esc>' }) do
    vim.keymap.set('n', key, function() answer(nil) end, { buffer = buf, nowait = true, desc = 'Reject' })
  end
  vim.api.nvim_create_autocmd('BufWipeout', { buffer = buf, once = true, callback = function() answer(nil) end })
  return win
end

--- Ask with vim.ui.select (any picker plugin that replaces it works).
function M.select(params, on_choice)
  vim.ui.select(params.options, {
    prompt = 'loopd asks: ' .. M.describe(params.toolCall),
    kind = 'loopd.permission',
    format_item = function(o) return o.name end,
  }, on_choice)
end

--- Wait, from a server request handler, for the person to answer through a
--- callback-style UI (`start(settle)` calls `settle(value)` once): inside the LSP
--- client's coroutine by yielding, else by polling the event loop. Returns the value.
function M.answered(start)
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

--- The handler's answer to an approval: the chosen option, or nil (which rejects).
function M.ask(params, how)
  local ask = how == 'select' and M.select or M.float
  return M.answered(function(settle) ask(params, settle) end)
end

-- -- the agent's questions (loopd/session/askUser) --------------------------------------

M.OTHER = 'Something else…'

--- Put the agent's question (`{question, choices, allowText}`) with vim.ui.select,
--- plus "Something else…" opening vim.ui.input when it takes free text (and
--- vim.ui.input alone when it has no choices). Returns the answer, or nil when the
--- person dismissed it.
function M.question(params)
  local prompt = 'loopd asks: ' .. tostring(params.question)
  local items = vim.list_extend({}, params.choices or {})
  if params.allowText and #items > 0 then table.insert(items, M.OTHER) end
  return M.answered(function(settle)
    local function free_text() vim.ui.input({ prompt = prompt .. ' ' }, settle) end
    if #items == 0 then return free_text() end
    vim.ui.select(items, { prompt = prompt, kind = 'loopd.question' }, function(item)
      if item == M.OTHER then return free_text() end
      settle(item)
    end)
  end)
end

--- The answer to loopd/session/requestPermission, asked `how` (`ask`); `chat` (the
--- project's) notes what was chosen. No answer rejects.
function M.permission(params, how, chat)
  local choice = M.ask(params, how)
  local id = choice and choice.optionId or 'reject_once'
  local name = choice and choice.name or 'Reject'
  chat:note('note', string.format('%s: %s', name, tostring(params.toolCall.title)))
  return { outcome = { outcome = 'selected', optionId = id } }
end

--- The answer to loopd/session/askUser: the question goes to the person, the answer
--- (nil when dismissed) back to the agent, and `chat` notes it.
function M.ask_user(params, chat)
  local answer = M.question(params)
  local said = answer and ('answered: ' .. answer) or 'not answered'
  chat:note('note', string.format('%s (%s)', said, tostring(params.question)))
  return { answer = answer }
end

return M
