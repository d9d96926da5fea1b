"""API keys: who may call the service, which scopes each key may read and what it may do.

Keys live in a TOML (or JSON) file named by ``--keys``, ``TRAILS_API_KEYS_FILE``, or given
inline in ``TRAILS_API_KEYS``; never in ``trails.json``, which travels with the data. A file
holds the SHA-256 of each secret (``trails keys add`` writes one), so reading it does not give
the keys away; a plain ``secret`` is accepted for development::

    [[key]]
    label = "analyst"                     # recorded in the audit trail as the caller
    sha256 = "9f86d081884c7d65..."        # or: secret = "..."
    scopes = ["public", "finance"]        # or ["*"]: every scope, and unscoped queries
    rights = ["read"]                     # read: retrieve, SPARQL; write: ingest, delete

A request never reads a scope its key does not grant: :meth:`ApiKey.confine` turns what the
request asks for into the scopes it runs with, or refuses.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from trails.errors import AuthenticationError, ConfigurationError, PermissionDeniedError
from trails.scopes import check_scope

__all__ = ["ALL_SCOPES", "ApiKey", "KeyRing", "Right", "checked_keys_path", "digest", "new_secret"]

Right = Literal["read", "write"]
RIGHTS: tuple[Right, ...] = ("read", "write")
ALL_SCOPES = "*"
KEYS_FILE_ENV, KEYS_ENV = "TRAILS_API_KEYS_FILE", "TRAILS_API_KEYS"


def digest(secret: str) -> str:
    """The SHA-256 of a secret, as the keys file stores it."""
    return hashlib.sha256(secret.encode()).hexdigest()


def new_secret() -> str:
    """A fresh secret: 32 random bytes, URL-safe, prefixed so that it is easy to spot in logs."""
    return "trails_" + secrets.token_urlsafe(32)


@dataclass(frozen=True)
class ApiKey:
    """One key: its label, the SHA-256 of its secret, its scopes (None: every scope) and rights."""

    label: str
    sha256: str
    scopes: frozenset[str] | None
    rights: frozenset[Right]

    def can(self, right: Right) -> bool:
        return right in self.rights

    def require(self, right: Right) -> None:
        """Raises PermissionDeniedError unless the key has ``right``."""
        if right not in self.rights:
            raise PermissionDeniedError(
                f"the API key {self.label!r} may not {_ACTIONS[right]}: it grants "
                f"{_listed(sorted(self.rights))}. Ask for a key with rights = [\"{right}\"]")

    def confine(self, requested: Sequence[str] | None) -> list[str] | None:
        """The scopes a request runs with: what it asked for, checked against what the key
        grants. No scopes asked for means every scope the key grants (None, unscoped, only
        for a key with every scope).

        Raises:
            PermissionDeniedError: the request names a scope the key does not grant.
        """
        if self.scopes is None:
            return None if requested is None else list(requested)
        if requested is None:
            return sorted(self.scopes)
        refused = [scope for scope in requested if scope not in self.scopes]
        if refused:
            raise PermissionDeniedError(
                f"the API key {self.label!r} does not grant the scope(s) {_listed(refused)}; "
                f"it grants {_listed(sorted(self.scopes))}. Ask only for those, or for a key "
                "that grants the others")
        return list(requested)

    def describe(self) -> dict[str, Any]:
        """What the key may do, without its secret (for ``GET /whoami`` and logs)."""
        return {"label": self.label, "rights": sorted(self.rights),
                "scopes": None if self.scopes is None else sorted(self.scopes)}


_ACTIONS = {"read": "read (retrieve, SPARQL)", "write": "write (ingest, delete)"}


class KeyRing:
    """The keys a service accepts, looked up by secret in constant time per key."""

    def __init__(self, keys: Iterable[ApiKey], *, source: str = "the keys given") -> None:
        self.keys = tuple(keys)
        self.source = source
        labels = [key.label for key in self.keys]
        doubled = sorted({label for label in labels if labels.count(label) > 1})
        if doubled:
            raise ConfigurationError(
                f"{source}: the label(s) {_listed(doubled)} name more than one key; give each "
                "key its own label, since the audit trail names callers by it")

    def __len__(self) -> int:
        return len(self.keys)

    def with_key(self, key: ApiKey) -> KeyRing:
        return KeyRing((*self.keys, key), source=self.source)

    def authenticate(self, secret: str | None) -> ApiKey:
        """The key whose secret this is.

        Raises:
            AuthenticationError: no secret, or one no key has.
        """
        if not secret:
            raise AuthenticationError(
                "this service needs an API key: send it as 'Authorization: Bearer <key>' "
                "(or 'X-API-Key: <key>')")
        presented = digest(secret)
        found = None
        for key in self.keys:  # no early exit: every key is compared, matched or not
            if hmac.compare_digest(key.sha256, presented):
                found = key
        if found is None:
            # Never the keys file's path: a caller with a wrong key learns nothing of the host.
            raise AuthenticationError(
                "the API key sent is not one this service accepts; check it, or ask whoever "
                "runs the service to add one with 'trails keys add'")
        return found

    @classmethod
    def load(cls, path: str | os.PathLike[str] | None = None,
             environ: Mapping[str, str] | None = None) -> KeyRing | None:
        """The keys from ``path``, else ``TRAILS_API_KEYS_FILE``, else ``TRAILS_API_KEYS``
        (inline TOML or JSON); None when none of them is given.

        Raises:
            ConfigurationError: the file is missing, does not parse, or a key is malformed.
        """
        env = os.environ if environ is None else environ
        if path is None and env.get(KEYS_FILE_ENV):
            path = env[KEYS_FILE_ENV]
        if path is not None:
            file = checked_keys_path(path)
            try:
                text = file.read_text(encoding="utf-8")
            except OSError as exc:
                raise ConfigurationError(
                    f"cannot read the API keys file {file}: {exc.strerror or exc}. Create it "
                    "with 'trails keys add LABEL --keys FILE'") from exc
            return cls.parse(text, source=str(file))
        if env.get(KEYS_ENV, "").strip():
            return cls.parse(env[KEYS_ENV], source=KEYS_ENV)
        return None

    @classmethod
    def parse(cls, text: str, *, source: str) -> KeyRing:
        """Keys from TOML (``[[key]]`` tables) or JSON (``{"key": [...]}`` or a bare list).

        Raises:
            ConfigurationError: the text does not parse, or a key is malformed.
        """
        data: Any
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as toml_error:
            try:  # TOML's "[[key]]" also starts with "[", so JSON is only the second guess
                data = json.loads(text)
            except ValueError:
                raise ConfigurationError(
                    f"{source} is neither TOML nor JSON: {toml_error}. See docs/service.md "
                    "for the format") from toml_error
        entries = data if isinstance(data, list) else (
            data.get("key", []) if isinstance(data, dict) else None)
        if not isinstance(entries, list) or not entries:
            raise ConfigurationError(
                f"{source} holds no keys: write one [[key]] table per key (label, sha256, "
                "scopes, rights); see docs/service.md")
        return cls((_key(entry, f"{source}, key {n}") for n, entry in enumerate(entries, 1)),
                   source=source)


def _key(entry: Any, where: str) -> ApiKey:
    if not isinstance(entry, dict):
        raise ConfigurationError(f"{where}: a key is a table of label, sha256, scopes, rights")
    unknown = sorted(set(entry) - {"label", "sha256", "secret", "scopes", "rights"})
    if unknown:
        raise ConfigurationError(
            f"{where}: unknown field(s) {_listed(unknown)}; a key has label, sha256 (or "
            "secret), scopes and rights")
    label = entry.get("label")
    if not isinstance(label, str) or not label.strip():
        raise ConfigurationError(f"{where}: 'label' must name the key (it is the audit caller)")
    where = f"{where} ({label!r})"
    if ("sha256" in entry) == ("secret" in entry):
        raise ConfigurationError(f"{where}: give exactly one of 'sha256' and 'secret'")
    if "secret" in entry:
        secret = entry["secret"]
        if not isinstance(secret, str) or len(secret) < 16:
            raise ConfigurationError(f"{where}: a secret needs at least 16 characters")
        sha = digest(secret)
    else:
        sha = str(entry["sha256"]).lower()
        if len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha):
            raise ConfigurationError(f"{where}: 'sha256' must be 64 hexadecimal digits")
    scopes = entry.get("scopes")
    if not isinstance(scopes, list) or not scopes or not all(isinstance(s, str) for s in scopes):
        raise ConfigurationError(
            f"{where}: 'scopes' must list the scopes the key may read, or [\"*\"] for all")
    granted: frozenset[str] | None
    if ALL_SCOPES in scopes:
        granted = None
    else:
        try:
            granted = frozenset(check_scope(s) for s in scopes)
        except ValueError as exc:
            raise ConfigurationError(f"{where}: {exc}") from exc
    rights = entry.get("rights", ["read"])
    if (not isinstance(rights, list) or not rights
            or any(right not in RIGHTS for right in rights)):
        raise ConfigurationError(f"{where}: 'rights' lists \"read\" and/or \"write\"")
    return ApiKey(label.strip(), sha, granted, frozenset(rights))


def checked_keys_path(path: str | os.PathLike[str]) -> Path:
    """``path`` as a keys file's path.

    Raises:
        ConfigurationError: it names a folder.
    """
    file = Path(path)
    if file.is_dir():
        raise ConfigurationError(f"the API keys file {file} is a folder: name the file in it "
                                 "that holds the keys (keys.toml)")
    return file


def _listed(names: Sequence[str]) -> str:
    return ", ".join(repr(n) for n in names) if names else "nothing"
