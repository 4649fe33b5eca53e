-- The verification seal (`_meta.loopd.verification`, see `:help loopd-verification`):
-- where it is found on the wire, and how the statusline says it.
local M = {}

--- The seal a `_meta` carries (an update's, or the prompt answer's), or nil.
function M.of(meta)
  return type(meta) == 'table' and type(meta.loopd) == 'table' and meta.loopd.verification or nil
end

--- "loopd: passed", "loopd: failed (tests)", "loopd: incomplete (tests)",
--- "loopd: stale"..., with "!protected" when the turn wrote a protected file; '' for no
--- seal.
function M.line(v)
  if not v then return '' end
  local text = 'loopd: ' .. (v.incomplete and 'incomplete' or tostring(v.seal))
  if (v.incomplete or v.seal == 'failed') and #(v.unmet or {}) > 0 then
    text = text .. ' (' .. table.concat(v.unmet, ', ') .. ')'
  end
  if #(v.protectedWrites or {}) > 0 then text = text .. ' !protected' end
  return text
end

return M
