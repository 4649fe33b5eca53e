-- A real Neovim driving loopd through editors/nvim: start, ask, approve an edit
-- through vim.ui.select, see the buffer edited and the chat buffer filled, cancel a
-- turn. Run: nvim --clean --headless -l scenario.lua   (env: LOOPD_PLUGIN, LOOPD_PY,
-- LOOPD_LAUNCHER, LOOPD_FILE). Exit status 0 and "NVIM-E2E: PASS" mean it passed.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'harness.lua'))
local log, finish, check, wait = H.log, H.finish, H.check, H.wait

vim.opt.runtimepath:prepend(assert(vim.env.LOOPD_PLUGIN))
local prompts, progress = {}, {}
vim.ui.select = function(items, opts, on_choice)
  table.insert(prompts, opts.prompt)
  for i, item in ipairs(items) do
    if type(item) == 'table' and item.optionId == 'allow_once' then return on_choice(item, i) end
  end
  on_choice(nil, nil)
end
vim.api.nvim_create_autocmd('LspProgress', {
  callback = function(ev) table.insert(progress, ev.data.params.value.kind) end,
})

local loopd = require('loopd')
loopd.setup({ cmd = { assert(vim.env.LOOPD_PY), assert(vim.env.LOOPD_LAUNCHER) } })
vim.cmd('edit ' .. assert(vim.env.LOOPD_FILE))
local buf = vim.api.nvim_get_current_buf()
wait('the loopd client attached', function() return loopd.client(buf) ~= nil and loopd.client(buf).initialized end)

-- 1. ask; the agent edits the open buffer after an approval through vim.ui.select
vim.cmd('Loopd ask make x two')
wait('the turn ended', function() return loopd.state.last_stop ~= nil end)
check(loopd.state.last_stop == 'end_turn', 'it ended with end_turn (got ' .. tostring(loopd.state.last_stop) .. ')')
check(#prompts == 1 and prompts[1]:find('Write', 1, true) ~= nil, 'one approval, naming the write')
check(prompts[1]:find('+x = 2', 1, true) ~= nil, 'the approval shows the diff')
check(vim.api.nvim_buf_get_lines(buf, 0, 1, false)[1] == 'x = 2', 'the buffer was edited')
check(vim.bo[buf].modified, 'the edit is unsaved, in the buffer (undo works)')
local chat_buf = require('loopd.chat').state.buf
wait('the chat shows the reply', function()
  local text = table.concat(vim.api.nvim_buf_get_lines(chat_buf, 0, -1, false), '\n')
  return text:find('I changed x', 1, true) ~= nil
end)
local chat = table.concat(vim.api.nvim_buf_get_lines(chat_buf, 0, -1, false), '\n')
check(chat:find('## You', 1, true) and chat:find('make x two', 1, true), 'the chat shows the prompt')
check(chat:find('**completed** `Write', 1, true) ~= nil, 'the chat shows the tool call and its status')
check(chat:find('```diff', 1, true) ~= nil, 'the chat shows the diff')
check(chat:find('> let me see', 1, true) ~= nil, 'the chat shows the thought')
check(vim.tbl_contains(progress, 'begin') and vim.tbl_contains(progress, 'end'), 'LSP progress began and ended')

-- 2. a long turn, cancelled with :Loopd cancel ($/cancelRequest)
vim.cmd('Loopd ask take your time')
wait('the long turn streams', function()
  return table.concat(vim.api.nvim_buf_get_lines(chat_buf, 0, -1, false), '\n'):find('thinking hard', 1, true) ~= nil
end)
vim.cmd('Loopd cancel')
wait('the plugin saw the cancel', function() return loopd.state.last_stop == 'cancelled' end)
local function exec(command)
  local answer
  loopd.client(buf):request('workspace/executeCommand', { command = command, arguments = {} },
    function(_, r) answer = r end, buf)
  wait(command .. ' answered', function() return answer ~= nil end)
  return answer
end
wait('the server cancelled the turn', function()
  local turns = exec('loopd.status').turns
  return #turns == 2 and turns[2].stopReason == 'cancelled'
end)

-- 3. the session is listed, with its title
local listed
loopd.client(buf):request('loopd/session/list', { cwd = vim.fn.getcwd() }, function(_, r) listed = r end, buf)
wait('sessions listed', function() return listed ~= nil end)
check(#listed.sessions == 1 and listed.sessions[1].sessionId == loopd.state.session, 'the session is listed')

loopd.client(buf):stop()
finish(true)
