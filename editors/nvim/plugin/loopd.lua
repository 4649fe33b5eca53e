-- Nothing starts until require('loopd').setup({...}) is called.
if vim.g.loaded_loopd then return end
vim.g.loaded_loopd = true
