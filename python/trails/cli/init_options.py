"""What ``trails init`` reads from its ``NAME=VALUE`` options and records beside a context's
parts: a remote part's resilience policy (``--resilience``) and the scopes' security levels
(``--security-level``, ``--digest-level``)."""

from __future__ import annotations

import json
from pathlib import Path

from trails.cli._common import context
from trails.config import AuditConfig, PartConfig, Scalar, Setting, read_config, write_config
from trails.errors import ConfigurationError, TrailsError
from trails.resilience import Resilience

__all__ = ["NO_REMOTE", "audit_with", "pairs", "record_policy", "remote", "resilience_option",
           "with_policy"]


def pairs(given: list[str], option: str = "--map-metadata",
          form: str = "KEY=PREDICATE") -> dict[str, str]:
    """``--map-metadata KEY=PREDICATE`` (or another ``option``'s) pairs as a mapping."""
    mapping = {}
    for pair in given:
        key, sep, predicate = pair.partition("=")
        if not sep or not key or not predicate:
            raise ConfigurationError(f"{option} needs {form}, got {pair!r}")
        mapping[key] = predicate
    return mapping


# The backends that reach another server, and so take a resilience policy.
_REMOTE = ("sparql", "pgvector", "openai")
NO_REMOTE = ("--resilience applies to a remote part: --graph sparql, --vectors qdrant "
             "--qdrant-url, --vectors pgvector or --model openai:MODEL")


def resilience_option(given: list[str]) -> dict[str, Scalar]:
    """``--resilience NAME=VALUE`` pairs as a policy's settings, each value read as JSON
    (``5``, ``0.5``, ``false``, ``null``), checked as :class:`Resilience` checks them."""
    policy: dict[str, Scalar] = {}
    for name, text in pairs(given, "--resilience", "NAME=VALUE").items():
        try:
            value = json.loads(text)
        except ValueError:
            value = text  # a word: Resilience names what it expected instead
        if isinstance(value, (list, dict)):
            raise ConfigurationError(f"--resilience {name}= takes a number, true, false or "
                                     f"null, got {text!r}")
        policy[name] = value
    try:
        Resilience.from_settings(policy)
    except TrailsError as exc:
        raise ConfigurationError(f"--resilience: {exc}") from exc
    return policy


def remote(part: PartConfig | None) -> bool:
    return part is not None and (part.backend in _REMOTE or (
        part.backend == "qdrant" and part.settings.get("url") is not None))


def with_policy(part: PartConfig | None, policy: dict[str, Scalar]) -> PartConfig | None:
    """``part`` with the resilience policy in its settings, when it is remote."""
    if not policy or not remote(part) or part is None:
        return part
    return part.model_copy(update={"settings": {
        **part.settings, "resilience": {**_policy_of(part.settings), **policy}}})


def record_policy(db: Path, policy: dict[str, Scalar]) -> None:
    """Record ``policy`` on each remote part of an existing context (beside what it holds)."""
    with context(db):  # held open: no other process writes trails.json meanwhile
        config = read_config(db)
        if config is None:  # pragma: no cover - has_context checked the file exists
            return
        parts = {name: getattr(config, name) for name in ("graph", "vectors", "embedder")}
        if not any(remote(part) for part in parts.values()):
            raise ConfigurationError(f"{db} has no remote part: {NO_REMOTE}")
        write_config(db, config.model_copy(update={
            name: with_policy(part, policy) for name, part in parts.items()}))


def _policy_of(settings: dict[str, Setting]) -> dict[str, Scalar]:
    """The resilience settings a part records (none: the backend's defaults)."""
    found = settings.get("resilience")
    return dict(found) if isinstance(found, dict) else {}


def audit_with(audit: AuditConfig, levels: dict[str, str],
                digest_levels: list[str]) -> AuditConfig:
    """``audit`` with more scopes' security levels and digest levels."""
    try:
        return AuditConfig.model_validate({
            **audit.model_dump(), "levels": {**audit.levels, **levels},
            "digest_levels": sorted({*audit.digest_levels, *digest_levels})})
    except ValueError as exc:
        raise ConfigurationError(
            "--security-level SCOPE=LEVEL and --digest-level LEVEL take names of 1-128 "
            "letters, digits, '_', '.' or '-', starting with a letter or digit; got "
            f"{[*levels.items(), *digest_levels]}") from exc
