"""Make the real textworld PDDL engine fast without changing a byte of what it says.

Profiling the engine on ALFWorld games shows three pure functions doing almost all the work:

- ``fast_downward.pddl2sas`` translates the PDDL problem to SAS. ``PddlEnv`` calls it twice in
  ``load`` and twice more in every ``reset`` (~0.3-0.7 s each), although the problem never changes.
- ``textworld.envs.pddl.textgen._parse_and_convert`` re-parses, with a TatSu grammar, the same few
  dozen text templates ("go to [{r.name | ...}]") for every admissible command of every step.
- ``textworld.logic.Rule.parse_conjunctive_query`` re-parses the same conditions the same way.

``accelerated()`` swaps memoised versions of those three in while the engine runs and restores the
originals afterwards, so a bare textworld env in the same process stays bare (the benchmark relies
on that). Memoisation is transparent: the translator is deterministic, the template parser's result
is deep-copied on every hit (the engine mutates the symbols it gets), and parsed conditions are
only read. ``tests/test_alfworld_engine.py`` checks that observations and admissible commands are
identical with and without acceleration.

Translations can also live on disk (``TranslationCache(folder)``): the suite build stores them
per game, so the first reset of a game in a fresh worker is fast too.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import pickle
import sys
import threading
import zlib
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import Any


class _LRU(OrderedDict):
    def __init__(self, maxsize: int):
        super().__init__()
        self.maxsize = maxsize

    def get_or(self, key, make):
        if key in self:
            self.move_to_end(key)
            return self[key]
        value = make()
        self[key] = value
        if len(self) > self.maxsize:
            self.popitem(last=False)
        return value


def translation_key(domain: str, problem: str, optimize: bool) -> str:
    h = hashlib.sha256()
    for part in (domain, "\x00", problem, "\x00", str(bool(optimize))):
        h.update(part.encode())
    return h.hexdigest()


class TranslationCache:
    """PDDL -> (task, SAS) translations, in memory (LRU) and optionally on disk."""

    def __init__(self, folder: Path | None = None, maxsize: int = 64, share_replan: bool = True):
        self.folder = Path(folder) if folder is not None else None
        self._memory = _LRU(maxsize)
        # PddlState translates every problem twice: once plainly (the game) and once optimised
        # for the planner's replanning. The plain SAS describes the same task, so unless the
        # planner expert is in use we hand it out for both and halve the translation work.
        self.share_replan = share_replan

    def _path(self, key: str) -> Path | None:
        return None if self.folder is None else self.folder / key[:2] / f"{key}.pkl.z"

    def translate(self, domain: str, problem: str, verbose: bool = False, optimize: bool = False):
        if optimize and self.share_replan:
            optimize = False
        key = translation_key(domain, problem, optimize)
        return self._memory.get_or(
            key, lambda: self._load_or_translate(key, domain, problem, optimize)
        )

    def _load_or_translate(self, key: str, domain: str, problem: str, optimize: bool):
        path = self._path(key)
        if path is not None and path.exists():
            try:
                return pickle.loads(zlib.decompress(path.read_bytes()))
            except Exception:  # noqa: BLE001 - a damaged cache entry is rebuilt, never trusted
                path.unlink(missing_ok=True)
        result = raw_translate(domain, problem, optimize)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_bytes(
                zlib.compress(pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL), 1)
            )
            tmp.replace(path)
        return result


def raw_translate(domain: str, problem: str, optimize: bool):
    """fast-downward's translator, with ``sys.argv`` restored (it overwrites it) and
    ``SystemExit`` (its answer to a malformed problem) turned into ``ValueError``."""
    import fast_downward

    argv = list(sys.argv)
    try:
        return fast_downward.pddl2sas(domain, problem, optimize=optimize)
    except SystemExit as e:
        raise ValueError(f"the PDDL translator rejected the problem (exit {e.code})") from None
    finally:
        sys.argv = argv


class _FastDownwardProxy:
    """Stands in for the ``fast_downward`` module inside ``textworld.envs.pddl.logic``."""

    def __init__(self, module, cache: TranslationCache):
        self._module = module
        self._cache = cache

    def pddl2sas(self, domain, problem, verbose=False, optimize=False):
        return self._cache.translate(domain, problem, verbose=verbose, optimize=optimize)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._module, name)


_TEMPLATES = _LRU(4096)
_QUERIES = _LRU(4096)
_DEFAULT_CACHE = TranslationCache()
# The swap is process-global, and textworld's translator swaps sys.stdout itself: engines in
# several threads take turns (an RLock, so nested use in one thread is fine).
_LOCK = threading.RLock()


@contextlib.contextmanager
def accelerated(cache: TranslationCache | None = None) -> Iterator[None]:
    """Run the textworld PDDL engine with memoised translation and template parsing."""
    from textworld.envs.pddl import logic as pddl_logic
    from textworld.envs.pddl import textgen
    from textworld.logic import Rule

    cache = cache or _DEFAULT_CACHE
    with _LOCK:
        orig_parse = textgen._parse_and_convert
        orig_query = Rule.__dict__["parse_conjunctive_query"]
        orig_fd = pddl_logic.fast_downward

        def parse_and_convert(text, rule_name="symbols", trace=False, **kw):
            key = (text, rule_name, tuple(sorted(kw.items())))
            parsed = _TEMPLATES.get_or(
                key, lambda: orig_parse(text, rule_name=rule_name, trace=trace, **kw)
            )
            return copy.deepcopy(parsed)

        def parse_conjunctive_query(cls, expr):
            return _QUERIES.get_or(expr, lambda: orig_query.__func__(cls, expr))

        textgen._parse_and_convert = parse_and_convert
        Rule.parse_conjunctive_query = classmethod(parse_conjunctive_query)
        pddl_logic.fast_downward = _FastDownwardProxy(orig_fd, cache)
        try:
            yield
        finally:
            textgen._parse_and_convert = orig_parse
            Rule.parse_conjunctive_query = orig_query
            pddl_logic.fast_downward = orig_fd
