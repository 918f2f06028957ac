"""Profiles are data: sdk/profiles/<name>.toml says what a build may contain."""
from __future__ import annotations

try:  # Python 3.11+; tomli is the same parser for 3.10 (a dependency there only)
    import tomllib
except ModuleNotFoundError:  # pragma: no cover
    import tomli as tomllib  # type: ignore[no-redef]
from dataclasses import dataclass
from typing import Any

from .errors import UsageError
from .paths import PACKAGE_DIR

PROFILES_DIR = PACKAGE_DIR / "profiles"


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    precisions: tuple[str, ...]
    default_precision: str
    allow_control_flow: bool
    allow_dynamic_shapes: bool
    stdio_in_model: bool

    def summary(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "precisions": list(self.precisions),
            "default_precision": self.default_precision,
        }


def _load(name: str) -> Profile:
    data = tomllib.loads((PROFILES_DIR / f"{name}.toml").read_text())
    return Profile(
        name=data["name"],
        description=data["description"],
        precisions=tuple(data["precisions"]),
        default_precision=data["default_precision"],
        allow_control_flow=data.get("allow_control_flow", False),
        allow_dynamic_shapes=data.get("allow_dynamic_shapes", False),
        stdio_in_model=data.get("stdio_in_model", False),
    )


def all_profiles() -> dict[str, Profile]:
    return {p.stem: _load(p.stem) for p in sorted(PROFILES_DIR.glob("*.toml"))}


def get_profile(name: str) -> Profile:
    profiles = all_profiles()
    if name not in profiles:
        raise UsageError(f"unknown profile '{name}' (known: {', '.join(sorted(profiles))})")
    return profiles[name]
