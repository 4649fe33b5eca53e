-- What every Neovim scenario shares: a log, checks that fail the run at once, waits
-- with a bound, and the verdict ("NVIM-E2E: PASS" on stderr, exit status 0).
local H = { out = {} }

function H.log(...) table.insert(H.out, table.concat(vim.tbl_map(tostring, { ... }), ' ')) end

function H.finish(ok)
  io.stderr:write(table.concat(H.out, '\n') .. '\n' .. (ok and 'NVIM-E2E: PASS' or 'NVIM-E2E: FAIL') .. '\n')
  vim.cmd(ok and 'qall!' or 'cquit! 3')
end

function H.check(cond, what)
  if not cond then
    H.log('FAILED: ' .. what)
    H.finish(false)
  end
  H.log('ok: ' .. what)
end

function H.wait(what, pred, ms) H.check(vim.wait(ms or 15000, pred, 10), what) end

-- The plugin set up on the test's loopd, LOOPD_FILE opened, and its client attached.
function H.attach()
  local loopd = require('loopd')
  loopd.setup({ cmd = { assert(vim.env.LOOPD_PY), '-m', 'loopd', 'lsp' } })
  vim.cmd('edit ' .. assert(vim.env.LOOPD_FILE))
  local buf = vim.api.nvim_get_current_buf()
  H.wait('the loopd client attached', function() return loopd.client(buf) ~= nil and loopd.client(buf).initialized end)
  return loopd, buf
end

return H
