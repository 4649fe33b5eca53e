"""The sandbox tiers, best first, and what each one can contain.

Pure vocabulary (no I/O), so the policy can reason about containment without importing
any mechanism: only a tier that confines filesystem writes lets the policy auto-allow a
command, because only then does "the sandbox can contain it" hold.
"""

from __future__ import annotations

from enum import StrEnum


class Tier(StrEnum):
    BWRAP_LANDLOCK = "bwrap+landlock"
    BWRAP = "bwrap"
    LANDLOCK = "landlock"
    NETNS = "netns"
    NONE = "none"

    @property
    def contains_writes(self) -> bool:
        """Writes outside the writable roots fail inside this tier."""
        return self in (Tier.BWRAP_LANDLOCK, Tier.BWRAP, Tier.LANDLOCK)

    @property
    def masks_secrets(self) -> bool:
        """Secret files are unreadable inside this tier (not just to the file tools)."""
        return self in (Tier.BWRAP_LANDLOCK, Tier.BWRAP)

    @property
    def binds_proxy(self) -> bool:
        """Network by domain holds here: the command has a network namespace of its
        own, and the proxy's socket, bound in, is its only way out. Landlock rules
        TCP by port, not by address, and the netns tier has no mount namespace to
        bind the socket into, so neither can confine a command to the proxy."""
        return self in (Tier.BWRAP_LANDLOCK, Tier.BWRAP)


TIER_ORDER: tuple[Tier, ...] = tuple(Tier)
