"""`BeneathFiles`: the file tools' local disk access, behind the path policy.

The policy decided the call from its declaration (the first gate); this is the second,
at the moment of use, and it does not trust that nothing changed in between:

1. canonicalise the path again and judge it with the session's `PathPolicy`;
2. a secret is never read, whatever was approved (the policy denies those reads too);
3. a path outside the roots, or a protected write inside them, is used only when the
   running call's `Grant` names that exact canonical path: the policy allowed it, or
   the person said yes, for this call;
4. read it with the one reader of workspace files (`loopd.policy.reading`) beneath
   its root (`/` for an approved outside path): it opens the canonical path with
   `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`, so a symlink swapped in after
   the check fails the open instead of leading somewhere else; it reads regular
   files only, never the kernel's (`/proc/self/environ`, even approved);
5. refuse files over the size caps.

Every refusal is a `PathRefused` whose message says why, which the tool registry
turns into the result the model reads and the person sees.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from loopd.policy.beneath import FileTooLarge as BeneathTooLarge
from loopd.policy.beneath import write_text_beneath
from loopd.policy.grants import current_grant
from loopd.policy.paths import PathIssue, PathPolicy, PathVerdict
from loopd.policy.reading import DiskReader
from loopd.tools.access import Admitted, FileTooLarge, PathRefused, read_text_with

MAX_FILE_BYTES = 32 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class BeneathFiles:
    """`FileAccess` on the local disk for one session (see the module docstring)."""

    paths: PathPolicy
    max_read_bytes: int = MAX_FILE_BYTES
    max_write_bytes: int = MAX_FILE_BYTES

    def admit(self, path: str, *, write: bool) -> Admitted:
        """The policy's decision for `path` now (steps 1 to 3 above)."""
        verdict = self.paths.check_write(path) if write else self.paths.check_read(path)
        root = self._root_for(verdict)
        return Admitted(verdict.path, root, verdict.root is not None)

    async def read_text(self, path: str) -> str:
        admitted = self.admit(path, write=False)
        reader = DiskReader((admitted.root,))  # the policy judged the secrets, `readable` too
        return await asyncio.to_thread(read_text_with, reader, admitted.path, self.max_read_bytes)

    async def write_text(self, path: str, text: str) -> None:
        admitted = self.admit(path, write=True)
        try:
            await asyncio.to_thread(
                write_text_beneath,
                admitted.root,
                admitted.path,
                text,
                max_bytes=self.max_write_bytes,
                exact=True,
            )
        except BeneathTooLarge as e:
            raise FileTooLarge(path, e.size, e.limit) from None

    def _root_for(self, verdict: PathVerdict) -> str:
        """The directory to open beneath, or `PathRefused`."""
        if verdict.ok and verdict.root is not None:
            return verdict.root
        if verdict.issue is PathIssue.SECRET:
            raise PathRefused(verdict.path, f"{verdict.reason}; loopd never reads it")
        if verdict.path not in current_grant().paths:
            raise PathRefused(verdict.path, f"{verdict.reason}; this call was not approved")
        return verdict.root or "/"
