"""Checkpoints: the workspace and the conversation as they were before each prompt,
so any earlier point of a session can be restored, redone, forked or edited.

`blobs` keeps file contents by sha256, written once; `manifest` the path -> blob
tables, one small blob per directory so an unchanged folder is shared by every
checkpoint; `scan` walks the roots (beneath them, honouring `.gitignore`, skipping
loopd's own folders and secrets) reusing the previous manifest's hashes by stat;
`book` the checkpoint rows in the session store; `restore` puts a manifest back
through the same beneath-the-root opens as the file tools; `service` ties them.
"""
