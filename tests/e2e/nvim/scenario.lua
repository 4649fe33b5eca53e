-- A real Neovim driving loopd through editors/nvim, in two projects at once:
--   A: ask; answer the floating approval (its diff highlighted) with `a`; see the
--      buffer edited and the chat filled, its winbar showing title, mode and usage;
--      complete a slash command and send from the chat's input area with Enter;
--      cancel that turn.
--   B: a session of its own, started by the server (as a code action starts one);
--      answer its approval with `R` (Always reject).
--   Then :checkhealth loopd.
-- Run: nvim --clean --headless -l scenario.lua (env: LOOPD_PLUGIN, LOOPD_PY,
-- LOOPD_LAUNCHER, LOOPD_FILE, LOOPD_FILE_B). Exit 0 and "NVIM-E2E: PASS" mean it passed.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'harness.lua'))
local finish, check, wait = H.finish, H.check, H.wait
local function text_of(buf) return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n') end
local function has(haystack, needle) return haystack:find(needle, 1, true) ~= nil end

vim.opt.runtimepath:prepend(assert(vim.env.LOOPD_PLUGIN))
local progress = {}
vim.api.nvim_create_autocmd('LspProgress', {
  callback = function(ev) table.insert(progress, ev.data.params.value.kind) end,
})

local loopd = require('loopd')
loopd.setup({ cmd = { assert(vim.env.LOOPD_PY), assert(vim.env.LOOPD_LAUNCHER) } })

local function approval_window()
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.w[win].loopd_approval then return win end
  end
end

local function answer_approval(key, expect)
  wait('the approval window opened', function() return approval_window() ~= nil end)
  local win = approval_window()
  local buf = vim.api.nvim_win_get_buf(win)
  local config = vim.api.nvim_win_get_config(win)
  check(config.relative == 'editor', 'it floats')
  check(vim.api.nvim_get_current_win() == win, 'it has the focus')
  check(vim.bo[buf].filetype == 'diff', 'it is highlighted as a diff')
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  check(has(lines[1], 'Write'), 'it names the write')
  local added
  for i, l in ipairs(lines) do if l == expect then added = i end end
  check(added ~= nil, 'it shows the diff line ' .. expect)
  local marks = vim.api.nvim_buf_get_extmarks(buf, -1, { added - 1, 0 }, { added - 1, -1 }, { details = true })
  check(#marks > 0 and marks[1][4].hl_group == 'DiffAdd', 'the added line is highlighted DiffAdd')
  local footer = vim.inspect(config.footer)
  check(has(footer, '[a] Allow once') and has(footer, '[R] Always reject'), 'the footer names the keys')
  for _, k in ipairs({ 'a', 'A', 'r', 'R', 'q' }) do
    check(vim.fn.maparg(k, 'n', false, true).buffer == 1, 'key ' .. k .. ' answers')
  end
  vim.api.nvim_feedkeys(key, 'x', false)
  check(not vim.api.nvim_win_is_valid(win), 'answering closes the window')
end

-- A ---------------------------------------------------------------------------------
vim.cmd('edit ' .. assert(vim.env.LOOPD_FILE))
local buf_a = vim.api.nvim_get_current_buf()
local root_a = loopd.root_of(buf_a)
wait('the loopd client attached (A)', function()
  local c = loopd.client(buf_a)
  return c ~= nil and c.initialized and c.root_dir == root_a
end)

vim.cmd('Loopd ask make x two')
answer_approval('a', '+x = 2')
local a = loopd.project(root_a)
wait('the turn ended', function() return a.last_stop ~= nil end)
check(a.last_stop == 'end_turn', 'it ended with end_turn (got ' .. tostring(a.last_stop) .. ')')
check(vim.api.nvim_buf_get_lines(buf_a, 0, 1, false)[1] == 'x = 2', 'the buffer was edited')
check(vim.bo[buf_a].modified, 'the edit is unsaved, in the buffer (undo works)')
wait('the chat shows the reply', function() return has(text_of(a.chat.buf), 'I changed x') end)
local chat = text_of(a.chat.buf)
check(has(chat, '## You') and has(chat, 'make x two'), 'the chat shows the prompt')
check(has(chat, '**completed** `Write'), 'the chat shows the tool call and its status')
check(has(chat, '```diff'), 'the chat shows the diff')
check(has(chat, '> let me see'), 'the chat shows the thought')
check(has(chat, '_Allow once: Write'), 'the chat notes the answer given')
check(vim.tbl_contains(progress, 'begin') and vim.tbl_contains(progress, 'end'), 'LSP progress began and ended')
local log_win = vim.fn.bufwinid(a.chat.buf)
local winbar = vim.wo[log_win].winbar
check(has(winbar, 'make x two') and has(winbar, 'ask') and has(winbar, 'tokens'),
  'the winbar shows title, mode and usage: ' .. winbar)

-- the input area: slash commands complete, Enter sends
local input_win = vim.fn.bufwinid(a.chat.input)
check(input_win ~= -1, 'the input area is open below the chat')
vim.api.nvim_set_current_win(input_win)
vim.api.nvim_buf_set_lines(a.chat.input, 0, -1, false, { '/c' })
vim.api.nvim_win_set_cursor(input_win, { 1, 2 })
local omni = require('loopd.chat').omnifunc
check(omni(1, '') == 0, 'a slash command completes from the start of the line')
local words = vim.tbl_map(function(i) return i.word end, omni(0, '/c'))
check(vim.deep_equal(words, { '/clear', '/compact', '/continue' }), 'the session offers /clear, /compact and /continue: ' .. vim.inspect(words))
local all = vim.tbl_map(function(i) return i.word end, omni(0, '/'))
check(vim.tbl_contains(all, '/undo'), 'and /undo: ' .. vim.inspect(all))
vim.api.nvim_buf_set_lines(a.chat.input, 0, -1, false, { 'take your time' })
vim.api.nvim_feedkeys(vim.keycode('<CR>'), 'x', false)
check(text_of(a.chat.input) == '', 'Enter sent the input and emptied it')
wait('the long turn streams', function() return has(text_of(a.chat.buf), 'thinking hard') end)
check(has(text_of(a.chat.buf), 'take your time'), 'the sent text is the prompt')
vim.cmd('Loopd cancel')
wait('the plugin saw the cancel', function() return a.last_stop == 'cancelled' end)
local function exec(client, command)
  local answer
  client:request('workspace/executeCommand', { command = command, arguments = {} },
    function(_, r) answer = r end, buf_a)
  wait(command .. ' answered', function() return answer ~= nil end)
  return answer
end
local client_a = loopd.client(buf_a)
wait('the server cancelled the turn', function()
  local turns = exec(client_a, 'loopd.status').turns
  return #turns == 2 and turns[2].stopReason == 'cancelled'
end)

-- B: another project root, another server and session --------------------------------
vim.cmd('wincmd t')
vim.cmd('edit ' .. assert(vim.env.LOOPD_FILE_B))
local buf_b = vim.api.nvim_get_current_buf()
local root_b = loopd.root_of(buf_b)
check(root_b ~= root_a, 'B is another project root')
wait('the loopd client attached (B)', function()
  local c = loopd.client(buf_b)
  return c ~= nil and c.initialized and c.root_dir == root_b
end)
check(loopd.client(buf_b).id ~= client_a.id, 'B has its own server')
-- the turn starts the way a code action starts it: the server opens the session
local started
loopd.client(buf_b):request('workspace/executeCommand',
  { command = 'loopd.ask', arguments = { { prompt = 'hello from b', uri = vim.uri_from_bufnr(buf_b) } } },
  function(_, r) started = r end, buf_b)
answer_approval('R', '+x = 2')
wait('the server answered the command', function() return started ~= nil end)
local b = loopd.project(root_b)
check(b.session == started.sessionId and b.session ~= a.session, "B's own session, started by the server, is B's")
wait('B chat shows the refusal and the reply', function()
  local shown = b.chat.buf and text_of(b.chat.buf) or ''
  return has(shown, '**failed** `Write') and has(shown, 'I changed x')
end)
check(has(text_of(b.chat.buf), '_Always reject: Write'), 'B chat notes Always reject')
check(vim.api.nvim_buf_get_lines(buf_a, 0, 1, false)[1] == 'x = 2', 'the rejected write changed nothing')
check(not has(text_of(a.chat.buf), 'hello from b'), "A's chat shows nothing of B")
check(b.chat.buf ~= a.chat.buf, 'each project has its own chat buffer')

-- sessions are listed with their titles
local listed
client_a:request('loopd/session/list', { cwd = root_a }, function(_, r) listed = r end, buf_a)
wait('sessions listed', function() return listed ~= nil end)
check(#listed.sessions == 1 and listed.sessions[1].title == 'make x two', 'A lists its session, titled')

-- :checkhealth loopd
vim.cmd('checkhealth loopd')
local report = text_of(vim.api.nvim_get_current_buf())
check(has(report, 'setup() called; approvals: float'), 'health: setup')
check(has(report, 'server command:'), 'health: the command')
check(has(report, 'server for ' .. root_a) and has(report, 'server for ' .. root_b), 'health: both servers')
check(has(report, 'extension v1, session ' .. a.session), 'health: the extension and the session')
check(not has(report, 'ERROR'), 'health: no errors')

client_a:stop()
loopd.client(buf_b):stop()
finish(true)
