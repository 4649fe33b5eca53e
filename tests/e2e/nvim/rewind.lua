-- A real Neovim on the real `loopd lsp` (fake model): two turns (the second changes
-- files with bash), then :Loopd rewind picks "before prompt 1" and "the code and the
-- conversation": the files are back; then :Loopd rewind picks redo.
-- Run: nvim --clean --headless -l rewind.lua  (env: LOOPD_PLUGIN, LOOPD_PY, LOOPD_FILE,
-- LOOPD_WORK). Exit status 0 and "NVIM-E2E: PASS" mean it passed.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'harness.lua'))
local finish, check, wait = H.finish, H.check, H.wait

vim.opt.runtimepath:prepend(assert(vim.env.LOOPD_PLUGIN))
local picks = {} -- what each vim.ui.select call is answered with, in order
local prompts = {}
vim.ui.select = function(items, opts, on_choice)
  table.insert(prompts, opts.prompt)
  local want = table.remove(picks, 1)
  for i, item in ipairs(items) do
    if want(item) then return on_choice(item, i) end
  end
  on_choice(nil, nil)
end

local loopd, buf = H.attach()
local project = loopd.project(loopd.root_of(buf))
local work = assert(vim.env.LOOPD_WORK)
local function exists(name) return vim.uv.fs_stat(vim.fs.joinpath(work, name)) ~= nil end

for _, text in ipairs({ 'one', 'two' }) do
  project.last_stop = nil
  vim.cmd('Loopd ask ' .. text)
  wait('turn ' .. text .. ' ended', function() return project.last_stop ~= nil end)
end
check(exists('b.txt') and not exists('keep.txt'), 'the bash turn changed the files')

picks = {
  function(item) return item.prompt == 1 end,
  function(scope) return scope[1] == 'both' end,
}
vim.cmd('Loopd rewind')
wait('the files are back', function() return exists('keep.txt') and not exists('b.txt') and not exists('notes.txt') end)
check(prompts[1] == 'Rewind loopd to' and prompts[2] == 'Put back', 'asked for the point, then the scope')

picks = { function(item) return item.redo end, function(scope) return scope[1] == 'both' end }
vim.cmd('Loopd rewind')
wait('redo put the turns back', function() return exists('b.txt') and exists('notes.txt') end)

loopd.client(buf):stop()
finish(true)
