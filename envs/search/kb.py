"""A generated knowledge base of fictional entities: one passage per entity and questions whose
answers are spelled out verbatim in the passages.

Countries, cities, organisations and people get syllable-built names (no memorized answers), and
attributes drawn from a seeded generator. Questions come in three styles:

* ``single`` (dataset ``synth_single``): one fact of one entity ("Where was X born?").
* ``bridge`` (``synth_bridge``): two hops through an intermediate entity ("In which country was X
  born?" = X's birth city, then that city's country), as in HotpotQA's bridge questions.
* ``comparison`` (``synth_comparison``): two entities compared on a number ("Who was born first,
  X or Y?"), as in HotpotQA's comparison questions; never tied.

Every answer string appears in a supporting passage; ``supporting_ids`` lists those passages in hop
order and ``oracle_queries`` the searches (entity names) that retrieve them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from seed_gym.envs.search.corpus import Passage
from seed_gym.envs.search.questions import QAItem

_ONSETS = [
    "b",
    "br",
    "c",
    "d",
    "dr",
    "f",
    "g",
    "gr",
    "h",
    "k",
    "l",
    "m",
    "n",
    "p",
    "r",
    "s",
    "st",
    "t",
    "th",
    "v",
    "z",
]
_VOWELS = ["a", "e", "i", "o", "u", "ae", "ei", "ou"]
_CODAS = ["", "", "", "n", "r", "l", "s", "th", "m", "nd", "rk", "sk"]
OCCUPATIONS = [
    "botanist", "cartographer", "composer", "astronomer", "sculptor", "architect", "chemist",
    "historian", "poet", "engineer", "painter", "physician", "mathematician", "novelist",
    "geologist", "violinist", "philosopher", "shipbuilder", "economist", "linguist",
]  # fmt: skip
ORG_KINDS = [
    "University", "Observatory", "Museum", "Orchestra", "Trading Company", "Academy", "Library",
    "Shipyard", "Conservatory", "Institute",
]  # fmt: skip
LANG_SUFFIX = ["ic", "ish", "ese", "ian"]


@dataclass
class _Entity:
    id: str
    name: str
    kind: str
    attrs: dict


class _Names:
    """Unique pronounceable names from one seeded generator."""

    def __init__(self, rng: np.random.Generator):
        self.rng, self.used = rng, set()

    def word(self, syllables: int) -> str:
        while True:
            parts = []
            for _ in range(syllables):
                parts.append(self.rng.choice(_ONSETS) + self.rng.choice(_VOWELS))
            w = ("".join(parts) + self.rng.choice(_CODAS)).capitalize()
            if w not in self.used and len(w) >= 4:
                self.used.add(w)
                return w


def generate_kb(
    seed: int = 0,
    *,
    n_countries: int = 16,
    n_cities: int = 120,
    n_orgs: int = 120,
    n_people: int = 400,
    n_comparisons: int = 400,
) -> tuple[list[Passage], list[QAItem]]:
    """The passages and every question of the knowledge base, deterministic in ``seed``."""
    rng = np.random.default_rng(seed)
    names = _Names(rng)
    rivers = [f"{names.word(2)} River" for _ in range(40)]

    countries = []
    for i in range(n_countries):
        base = names.word(2)
        countries.append(
            _Entity(
                f"kb-country-{i}",
                base,
                "country",
                {"language": base[:-1] + str(rng.choice(LANG_SUFFIX))},
            )
        )
    cities = []
    for i in range(n_cities):
        country = (
            countries[i % n_countries]
            if i < n_countries
            else countries[int(rng.integers(n_countries))]
        )
        cities.append(
            _Entity(
                f"kb-city-{i}",
                names.word(int(rng.integers(2, 4))),
                "city",
                {
                    "country": country,
                    "founded": int(rng.integers(600, 1900)),
                    "population": int(rng.integers(8, 3000)) * 1000,
                    "river": rivers[int(rng.integers(len(rivers)))],
                    "capital": i < n_countries,
                },
            )
        )
    for c, city in zip(countries, cities[: len(countries)], strict=True):
        c.attrs["capital"] = city
    people = []
    for i in range(n_people):
        people.append(
            _Entity(
                f"kb-person-{i}",
                f"{names.word(2)} {names.word(int(rng.integers(2, 4)))}",
                "person",
                {
                    "she": bool(rng.integers(2)),
                    "born": int(rng.integers(1650, 1960)),
                    "city": cities[int(rng.integers(n_cities))],
                    "occupation": str(rng.choice(OCCUPATIONS)),
                },
            )
        )
    orgs = []
    for i in range(n_orgs):
        founder = people[i]  # the first n_orgs people each found one organisation
        orgs.append(
            _Entity(
                f"kb-org-{i}",
                f"{names.word(2)} {rng.choice(ORG_KINDS)}",
                "org",
                {
                    "founded": founder.attrs["born"] + int(rng.integers(25, 60)),
                    "city": cities[int(rng.integers(n_cities))],
                    "founder": founder,
                },
            )
        )
    for p in people:
        p.attrs["employer"] = orgs[int(rng.integers(n_orgs))]

    passages = [_passage(e) for e in countries + cities + orgs + people]
    questions = _single(countries, cities, orgs, people, rng)
    questions += _bridge(cities, orgs, people, rng)
    questions += _comparison(cities, orgs, people, rng, n_comparisons)
    return passages, questions


def _article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


def _passage(e: _Entity) -> Passage:
    a = e.attrs
    if e.kind == "country":
        text = (
            f"{e.name} is a country whose capital and seat of government is {a['capital'].name}. "
            f"Its official language is {a['language']}."
        )
    elif e.kind == "city":
        text = (
            f"{e.name} is a city in {a['country'].name}, on the banks of the {a['river']}. "
            f"It was founded in {a['founded']} and has a population of {a['population']:,}."
        )
        if a["capital"]:
            text += f" It is the capital of {a['country'].name}."
    elif e.kind == "org":
        text = (
            f"The {e.name} is headquartered in {a['city'].name}. It was founded in {a['founded']} "
            f"by {a['founder'].name}."
        )
    else:
        pro = "She" if a["she"] else "He"
        text = (
            f"{e.name} is {_article(a['occupation'])} {a['occupation']} who was born in {a['city'].name} in {a['born']}. "
            f"{pro} worked for the {a['employer'].name}."
        )
    return Passage(e.id, e.name, text)


def _q(style: str, n: int, question: str, answer: str, hops: list[_Entity], **meta) -> QAItem:
    return QAItem(
        id=f"synth_{style}-{n:05d}",
        question=question,
        golden_answers=(answer,),
        data_source=f"synth_{style}",
        supporting_ids=tuple(h.id for h in hops),
        oracle_queries=tuple(h.name for h in hops),
        style=style,
        meta=meta,
    )


def _pick(rng: np.random.Generator, variants: list[str]) -> str:
    return variants[int(rng.integers(len(variants)))]


def _single(countries, cities, orgs, people, rng) -> list[QAItem]:
    out: list[QAItem] = []

    def add(template: list[str], entity: _Entity, answer: str, relation: str) -> None:
        q = _pick(rng, template).format(x=entity.name)
        out.append(_q("single", len(out), q, answer, [entity], relation=relation))

    for c in countries:
        add(
            ["What is the capital of {x}?", "Which city is the capital of {x}?"],
            c,
            c.attrs["capital"].name,
            "capital",
        )
        add(["What is the official language of {x}?"], c, c.attrs["language"], "language")
    for c in cities:
        add(
            ["In which country is {x}?", "{x} is a city in which country?"],
            c,
            c.attrs["country"].name,
            "country",
        )
        add(
            ["In what year was {x} founded?", "When was the city of {x} founded?"],
            c,
            str(c.attrs["founded"]),
            "founded",
        )
        add(
            ["Which river flows through {x}?", "On which river does {x} lie?"],
            c,
            c.attrs["river"],
            "river",
        )
    for o in orgs:
        add(
            ["Where is the {x} headquartered?", "In which city is the {x} based?"],
            o,
            o.attrs["city"].name,
            "city",
        )
        add(
            ["In what year was the {x} founded?", "When was the {x} established?"],
            o,
            str(o.attrs["founded"]),
            "founded",
        )
        add(
            ["Who founded the {x}?", "Who was the founder of the {x}?"],
            o,
            o.attrs["founder"].name,
            "founder",
        )
    for p in people:
        add(
            ["Where was {x} born?", "In which city was {x} born?"],
            p,
            p.attrs["city"].name,
            "birthplace",
        )
        add(["In what year was {x} born?", "When was {x} born?"], p, str(p.attrs["born"]), "born")
        add(
            ["What is the occupation of {x}?", "What does {x} do for a living?"],
            p,
            p.attrs["occupation"],
            "occupation",
        )
        add(
            ["Which organisation did {x} work for?", "Who employed {x}?"],
            p,
            "the " + p.attrs["employer"].name,
            "employer",
        )
    return out


def _bridge(cities, orgs, people, rng) -> list[QAItem]:
    out: list[QAItem] = []

    def add(
        template: list[str], first: _Entity, bridge: _Entity, answer: str, relation: str
    ) -> None:
        q = _pick(rng, template).format(x=first.name)
        out.append(_q("bridge", len(out), q, answer, [first, bridge], relation=relation))

    for p in people:
        city, org = p.attrs["city"], p.attrs["employer"]
        add(
            ["In which country was {x} born?", "{x} was born in which country?"],
            p,
            city,
            city.attrs["country"].name,
            "birth_country",
        )
        add(
            ["Which river flows through the birthplace of {x}?", "On which river lies the city where {x} was born?"],
            p, city, city.attrs["river"], "birth_river",
        )  # fmt: skip
        add(
            ["In which city is the organisation that {x} worked for headquartered?", "Where is the employer of {x} based?"],
            p, org, org.attrs["city"].name, "employer_city",
        )  # fmt: skip
    for o in orgs:
        f = o.attrs["founder"]
        add(
            [
                "Where was the founder of the {x} born?",
                "In which city was the person who founded the {x} born?",
            ],
            o,
            f,
            f.attrs["city"].name,
            "founder_birthplace",
        )
    for c in (c for c in cities if not c.attrs["capital"]):
        k = c.attrs["country"]
        add(
            [
                "What is the capital of the country in which {x} lies?",
                "{x} is in a country; what is its capital?",
            ],
            c,
            k,
            k.attrs["capital"].name,
            "country_capital",
        )
    return out


def _comparison(cities, orgs, people, rng, n: int) -> list[QAItem]:
    out: list[QAItem] = []
    kinds = [
        (people, "born", ["Who was born first, {a} or {b}?", "Who is older, {a} or {b}?"], min),
        (orgs, "founded", ["Which was founded earlier, the {a} or the {b}?"], min),
        (cities, "population", ["Which city has the larger population, {a} or {b}?"], max),
        (cities, "founded", ["Which city was founded first, {a} or {b}?"], min),
    ]
    while len(out) < n:
        pool, attr, template, best = kinds[len(out) % len(kinds)]
        i, j = rng.choice(len(pool), size=2, replace=False)
        a, b = pool[int(i)], pool[int(j)]
        if a.attrs[attr] == b.attrs[attr]:
            continue
        winner = best((a, b), key=lambda e: e.attrs[attr])
        answer = ("the " + winner.name) if pool is orgs else winner.name
        q = _pick(rng, template).format(a=a.name, b=b.name)
        out.append(
            _q("comparison", len(out), q, answer, [a, b], relation=f"{attr}_{best.__name__}")
        )
    return out
