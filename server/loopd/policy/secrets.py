"""Secrets: what loopd never reads, by the file tools' rules, whoever reads.

The path policy (`loopd.policy.paths`), the one reader (`loopd.policy.reading`), the
sandbox's scan and the checkpoints' scan all judge a canonical path by these rules, so
they are written once and sit below all of them: a secret is a name (`.env*` but not
its examples, keys and certificates, credential files), anything inside a folder that
holds keys (`~/.ssh` and friends, wherever they are), or a place under the home that
holds credentials or loopd's own configuration. Names match case-insensitively,
because some filesystems do.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable

# Directories whose whole content is secret wherever they appear.
SECRET_DIR_NAMES = frozenset({".ssh", ".gnupg", ".aws", ".azure", ".kube", ".password-store"})
# Secret locations under the home directory (files or directories).
HOME_SECRETS = (
    ".ssh", ".gnupg", ".aws", ".azure", ".kube", ".config/gcloud", ".config/gh",
    ".docker/config.json", ".netrc", ".npmrc", ".pypirc", ".git-credentials", ".pgpass",
    ".config/loopd", ".local/share/loopd",
)  # fmt: skip
SECRET_FILE_GLOBS = (
    ".env", ".env.*", "*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore",
    "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*", ".netrc", ".npmrc", ".pypirc",
    ".git-credentials", ".pgpass", "*credentials*.json", "*.kdbx",
)  # fmt: skip
SECRET_EXCEPTIONS = frozenset({".env.example", ".env.sample", ".env.template"})


def contains(root: str, path: str) -> bool:
    """Whether canonical `path` is `root` or below it (by whole components)."""
    return path == root or path.startswith(root.rstrip("/") + "/")


_SECRET_NAME = re.compile("|".join(fnmatch.translate(g) for g in SECRET_FILE_GLOBS), re.I)


def is_secret_name(name: str) -> bool:
    """Whether a file name alone marks a secret (case-insensitive)."""
    return name.lower() not in SECRET_EXCEPTIONS and _SECRET_NAME.match(name) is not None


def secret_reason(
    path: str, home: str, extra: Iterable[str] = (), exempt: Iterable[str] = ()
) -> str | None:
    """Why a canonical path is a secret, or None. A secret location holding one of
    the `exempt` folders does not count for what is in them (loopd reading the
    person's own skills in its config folder); names of secrets still do."""
    parts = [p.lower() for p in path.split("/") if p]
    name = parts[-1] if parts else ""
    if is_secret_name(name):
        return f"{os.path.basename(path)} looks like a secret (keys, tokens or credentials)"
    if any(p in SECRET_DIR_NAMES for p in parts[:-1]) or name in SECRET_DIR_NAMES:
        return f"{path} is inside a directory that holds keys or credentials"
    home_lower = home.lower().rstrip("/")
    spared = [e.lower() for e in exempt]
    for location in (*(f"{home_lower}/{h}" for h in HOME_SECRETS), *(e.lower() for e in extra)):
        if contains(location, path.lower()) and not any(
            contains(location, e) and contains(e, path.lower()) for e in spared
        ):
            return f"{path} holds credentials or loopd's own configuration"
    return None
