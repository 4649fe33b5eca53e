-- A real Neovim on the real `loopd lsp` (fake model): a turn that stalls on an unmet
-- criterion shows as incomplete in the chat buffer and in the statusline of a window
-- on that project, not of one on another (LOOPD_FILE_B's).
-- Run: nvim --clean --headless -l verification.lua  (env: LOOPD_PLUGIN, LOOPD_PY,
-- LOOPD_FILE, LOOPD_FILE_B). Exit status 0 and "NVIM-E2E: PASS" mean it passed.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'harness.lua'))
local finish, check, wait = H.finish, H.check, H.wait

vim.opt.runtimepath:prepend(assert(vim.env.LOOPD_PLUGIN))
vim.ui.select = function(items, _, on_choice)
  for i, item in ipairs(items) do
    if type(item) == 'table' and item.optionId == 'allow_once' then return on_choice(item, i) end
  end
  on_choice(nil, nil)
end

local loopd = require('loopd')
loopd.setup({ cmd = { assert(vim.env.LOOPD_PY), '-m', 'loopd', 'lsp' }, approval = 'select' })
vim.cmd('edit ' .. assert(vim.env.LOOPD_FILE))
local buf = vim.api.nvim_get_current_buf()
wait('the loopd client attached', function() return loopd.client(buf) ~= nil and loopd.client(buf).initialized end)
check(loopd.statusline() == '', 'no seal before any turn')

vim.cmd('Loopd ask make app.txt good')
local project = loopd.project(loopd.root_of(buf))
wait('the turn ended', function() return project.last_stop ~= nil end)
check(project.last_stop == 'end_turn', 'it ended with end_turn (got ' .. tostring(project.last_stop) .. ')')
check(loopd.statusline() == 'loopd: incomplete (content)', 'the statusline says incomplete: ' .. loopd.statusline())
local chat_buf = project.chat.buf
wait('the chat shows the seal', function()
  local text = table.concat(vim.api.nvim_buf_get_lines(chat_buf, 0, -1, false), '\n')
  return text:find('Verification incomplete: unmet content', 1, true) ~= nil
    and text:find('turn ended: end_turn · verification incomplete', 1, true) ~= nil
end)
local text = table.concat(vim.api.nvim_buf_get_lines(chat_buf, 0, -1, false), '\n')
check(text:find('Check content', 1, true) ~= nil, 'the chat shows the check as a command')

-- the seal is the project's: a window on another project shows none
local expr = "%{v:lua.require'loopd'.statusline()}"
local win_a = vim.api.nvim_get_current_win()
vim.cmd('split ' .. assert(vim.env.LOOPD_FILE_B))
local win_b = vim.api.nvim_get_current_win()
check(loopd.root_of(0) ~= loopd.root_of(buf), 'B is another project')
check(vim.api.nvim_eval_statusline(expr, { winid = win_a }).str == 'loopd: incomplete (content)',
  "A's window shows A's seal")
check(vim.api.nvim_eval_statusline(expr, { winid = win_b }).str == '', "B's window shows none")

vim.cmd('checkhealth loopd')
local report = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
check(report:find('session ' .. project.session .. ', last seal: incomplete (content)', 1, true) ~= nil,
  ':checkhealth shows the seal of the project')

for _, client in ipairs(vim.lsp.get_clients({ name = 'loopd' })) do client:stop() end
finish(true)
