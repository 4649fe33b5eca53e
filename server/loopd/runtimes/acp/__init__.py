"""Any ACP agent as a runtime: loopd is the client of a child agent (`child`), runs
its terminals (`terminals`), gates what it asks (`gate`), bounds what it sends
(`bounds`) and maps its wire (`wire`); `agent` is the runtime. Not `loopd.acp`,
which is loopd's own ACP frontend for editors."""
