"""Official ALFWorld games as a drop-in: ``$ALFWORLD_DATA`` or ``ALFWorldEnv(data_dir=...)``.

Point either at the folder ``alfworld-download`` fills (it holds ``json_2.1.1/``) or at
``json_2.1.1`` itself; ``train`` / ``seen`` / ``unseen`` then serve ``train`` / ``valid_seen`` /
``valid_unseen``. Without either, the env uses the generated suite (``build.py``).

``import alfworld`` sets ``$ALFWORLD_DATA`` to ``~/.cache/alfworld`` when it is unset, so the
user's own value is captured when this module is imported (if alfworld is not imported yet), and
alfworld's default folder counts only if it really holds games.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from seed_gym.envs.alfworld.engine import Game
from seed_gym.envs.alfworld.layout import SPLIT_DIRS, find_json_root, scan_split

ENV_VAR = "ALFWORLD_DATA"
_USER_VALUE = os.environ.get(ENV_VAR)
_ALFWORLD_DEFAULT = Path("~/.cache/alfworld").expanduser()


def data_dir_from_env() -> Path | None:
    """``$ALFWORLD_DATA`` as the user set it, or None."""
    value = _USER_VALUE if _USER_VALUE is not None else os.environ.get(ENV_VAR)
    if not value:
        return None
    path = Path(value).expanduser()
    if path == _ALFWORLD_DEFAULT and not (path / "json_2.1.1").is_dir():
        return None  # alfworld's import sets this default; nothing was ever downloaded there
    return path


def resolve_data_dir(data_dir: str | Path | None) -> Path | None:
    """The ``json_2.1.1`` folder to play from (explicit argument first, then ``$ALFWORLD_DATA``),
    or None for the generated suite. A folder that holds no games is an error, not a fallback."""
    chosen = Path(data_dir).expanduser() if data_dir is not None else data_dir_from_env()
    if chosen is None:
        return None
    return find_json_root(chosen)


_INDEX: dict[tuple[str, str], list[Game]] = {}


def real_split(json_root: Path, split: str) -> list[Game]:
    """The playable games of ``split`` (memoised per process; reading every game's ``solvable``
    flag of the full train split takes seconds)."""
    key = (str(Path(json_root).resolve()), split)
    if key not in _INDEX:
        games = scan_split(Path(json_root), split)
        if not games:
            raise FileNotFoundError(
                f"no playable ALFWorld games in {Path(json_root) / SPLIT_DIRS[split]} "
                f'(need <task>/<trial>/game.tw-pddl with "solvable": true and traj_data.json)'
            )
        _INDEX[key] = games
    return _INDEX[key]


def source_info(json_root: Path) -> dict:
    """Manifest metadata of a real data folder (``manifest.json`` of a generated suite if any)."""
    manifest = Path(json_root).parent / "manifest.json"
    if manifest.exists():
        try:
            data = json.loads(manifest.read_text())
            return {
                "source": "generated",
                "generator": data.get("generator"),
                "root": str(json_root),
            }
        except (OSError, json.JSONDecodeError):
            pass
    digest = hashlib.sha256(str(Path(json_root).resolve()).encode()).hexdigest()[:12]
    return {"source": "json_2.1.1", "root": str(json_root), "root_id": digest}
