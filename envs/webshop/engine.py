"""WebShop's page state machine: one engine behind both the agent's text view and the web site.

Pages: ``search`` (the instruction and a search box) -> ``results`` (10 products per page,
``< Prev`` / ``Next >``) -> ``item`` (options, ``Description`` / ``Features`` / ``Reviews`` tabs,
``Buy Now``) -> ``done`` (the score). ``Back to Search`` works from every page but ``done``.
Actions are WebShop's: ``search[keywords]`` (on the search page) and ``click[text]`` where
``text`` is a button, a product's asin or an option value on the current page (case-insensitive).

A page is a list of ``Element`` s. ``Page.text()`` is WebShop's "simple" text observation (the
visible strings joined by `` [SEP] ``); ``seed_gym.envs.webshop.html`` renders the same elements
as HTML; ``Page.actions()`` lists what can be done on the page.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from seed_gym.envs.webshop.catalog import Catalog
from seed_gym.envs.webshop.records import Goal
from seed_gym.envs.webshop.reward import OPTION_RULES, Score, score_purchase

PRODUCT_WINDOW = 10
END_BUTTON = "Buy Now"
NEXT_PAGE = "Next >"
PREV_PAGE = "< Prev"
BACK_TO_SEARCH = "Back to Search"
SUB_PAGES = ("Description", "Features", "Reviews")
SEARCH_ACTION = "search[<query>]"
"""How the search box appears in ``admissible_actions`` (replace ``<query>`` with keywords)."""

_ACTION = re.compile(r"^(search|click)\[(.*)\]$", re.IGNORECASE | re.DOTALL)
MAX_QUERY_CHARS = 500


@dataclass(frozen=True)
class Element:
    """One visible piece of a page. ``kind``: heading, text, button, link (a product asin),
    option (a value of option ``group``), search (the search box), score."""

    kind: str
    text: str
    group: str | None = None
    selected: bool = False

    @property
    def clickable(self) -> bool:
        return self.kind in ("button", "link", "option")

    @property
    def action(self) -> str | None:
        if self.kind == "search":
            return SEARCH_ACTION
        return f"click[{self.text.lower()}]" if self.clickable else None


@dataclass(frozen=True)
class Page:
    name: str  # search | results | item | description | features | reviews | done
    elements: tuple[Element, ...]

    def text(self) -> str:
        """WebShop's simple observation: every visible string, joined by " [SEP] "."""
        return " [SEP] ".join(e.text for e in self.elements if e.text)

    def actions(self) -> list[str]:
        seen: dict[str, None] = {}
        for e in self.elements:
            if e.action is not None:
                seen.setdefault(e.action, None)
        return list(seen)

    def clickables(self) -> dict[str, Element]:
        """Lowercased click text -> element (a later element with the same text wins, as in
        WebShop's ``text_to_clickable``)."""
        return {e.text.lower(): e for e in self.elements if e.clickable}


@dataclass
class Session:
    """One shopper's state; plain data, so it copies and pickles."""

    goal: Goal
    page: str = "search"
    keywords: str = ""
    results: list[str] = field(default_factory=list)  # asins, best first (at most 50)
    page_no: int = 1
    asin: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    score: Score | None = None
    visited: list[str] = field(default_factory=list)  # asins opened, in order

    @property
    def done(self) -> bool:
        return self.page == "done"


@dataclass(frozen=True)
class Outcome:
    valid: bool
    done: bool = False
    score: Score | None = None
    error: str | None = None


def parse_action(action: str) -> tuple[str, str] | None:
    """``"click[Buy Now]"`` -> ("click", "Buy Now"); None when not of that form."""
    m = _ACTION.match(action.strip())
    if m is None:
        return None
    return m.group(1).lower(), m.group(2).strip()


class Engine:
    """Pages and transitions over one catalog. Stateless itself: all state is in ``Session``."""

    def __init__(self, catalog: Catalog, option_rule: str = "goal.py"):
        if option_rule not in OPTION_RULES:
            raise ValueError(f"unknown option_rule {option_rule!r}; choose one of {OPTION_RULES}")
        self.catalog = catalog
        self.option_rule = option_rule

    # --- views --------------------------------------------------------------------------------
    def _instruction(self, s: Session) -> list[Element]:
        return [Element("heading", "Instruction:"), Element("text", s.goal.instruction)]

    def view(self, s: Session) -> Page:
        back = Element("button", BACK_TO_SEARCH)
        prev = Element("button", PREV_PAGE)
        if s.page == "search":
            els = [
                Element("heading", "WebShop"),
                *self._instruction(s),
                Element("search", "Search"),
            ]
        elif s.page == "results":
            total = len(s.results)
            els = [
                *self._instruction(s),
                back,
                Element("heading", f"Page {s.page_no} (Total results: {total})"),
            ]
            if s.page_no > 1:
                els.append(prev)
            if s.page_no * PRODUCT_WINDOW < total:
                els.append(Element("button", NEXT_PAGE))
            for asin in self._window(s):
                p = self.catalog.by_asin[asin]
                els += [
                    Element("link", asin),
                    Element("text", p.title),
                    Element("text", p.price_tag),
                ]
        elif s.page == "item":
            p = self.catalog.by_asin[s.asin]
            els = [*self._instruction(s), back, prev]
            for name, values in p.options.items():
                els.append(Element("heading", name))
                els += [
                    Element("option", v, group=name, selected=s.options.get(name) == v)
                    for v in values
                ]
            els += [
                Element("heading", p.title),
                Element("text", f"Price: {p.price_tag}"),
                Element("text", f"Rating: {p.rating}"),
                *(Element("button", name) for name in SUB_PAGES),
                Element("button", END_BUTTON),
            ]
        elif s.page in ("description", "features", "reviews"):
            p = self.catalog.by_asin[s.asin]
            els = [*self._instruction(s), back, prev]
            if s.page == "description":
                els.append(Element("text", p.description))
            elif s.page == "features":
                els += [Element("text", b) for b in p.bullet_points]
            else:
                for r in p.reviews:
                    els += [
                        Element("heading", f'"{r["title"]}"'),
                        Element("text", str(r["score"])),
                        Element("text", r["body"]),
                    ]
        elif s.page == "done":
            score = s.score.score if s.score is not None else 0.0
            els = [
                Element("heading", "Thank you for shopping with us!"),
                Element("heading", "Your score (min 0.0, max 1.0)"),
                Element("score", f"{score:.4g}"),
            ]
        else:  # pragma: no cover - sessions only hold the pages above
            raise ValueError(f"unknown page {s.page!r}")
        return Page(s.page, tuple(els))

    def _window(self, s: Session) -> list[str]:
        return s.results[(s.page_no - 1) * PRODUCT_WINDOW : s.page_no * PRODUCT_WINDOW]

    # --- transitions --------------------------------------------------------------------------
    def act(self, s: Session, action: str) -> Outcome:
        """Apply ``action`` to ``s`` in place. Invalid actions leave ``s`` unchanged."""
        if s.done:
            return Outcome(False, done=True, error="the episode is over")
        parsed = parse_action(action)
        if parsed is None:
            return Outcome(False, error="expected search[...] or click[...]")
        verb, arg = parsed
        if verb == "search":
            if s.page != "search":
                return Outcome(
                    False, error="there is no search box on this page; click[back to search] first"
                )
            if not arg or arg.lower() == "<query>":
                return Outcome(False, error="empty search")
            self.search(s, arg[:MAX_QUERY_CHARS])
            return Outcome(True)
        target = self.view(s).clickables().get(arg.lower())
        if target is None:
            return Outcome(False, error=f"nothing called {arg[:60]!r} to click on this page")
        return self._click(s, target)

    def search(self, s: Session, keywords: str) -> None:
        s.keywords = keywords.lower()
        s.results = [p.asin for p in self.catalog.search(s.keywords)]
        s.page, s.page_no, s.asin, s.options = "results", 1, None, {}

    def _click(self, s: Session, e: Element) -> Outcome:
        text = e.text
        if text == BACK_TO_SEARCH:
            s.page, s.keywords, s.results, s.page_no, s.asin, s.options = (
                "search",
                "",
                [],
                1,
                None,
                {},
            )
        elif text == NEXT_PAGE:
            s.page_no += 1
        elif text == PREV_PAGE:
            if s.page == "results":
                s.page_no -= 1
            elif s.page == "item":
                s.page, s.asin, s.options = "results", None, {}
            else:
                s.page = "item"
        elif e.kind == "link":
            s.page, s.asin, s.options = "item", text, {}
            s.visited.append(text)
        elif e.kind == "option":
            assert e.group is not None
            s.options[e.group] = text
        elif text in SUB_PAGES:
            s.page = text.lower()
        elif text == END_BUTTON:
            product = self.catalog.by_asin[s.asin]
            s.score = score_purchase(
                product, s.goal, product.price, dict(s.options), option_rule=self.option_rule
            )
            s.page = "done"
            return Outcome(True, done=True, score=s.score)
        return Outcome(True)

    # --- the privileged expert ----------------------------------------------------------------
    def oracle_action(self, s: Session) -> str:
        """Search the target's title, open the target, choose the goal's options, buy."""
        goal = s.goal
        target = self.catalog.by_asin.get(goal.asin)
        if s.page == "search":
            return f"search[{target.title if target else goal.query}]"
        if s.page == "results":
            if goal.asin in self._window(s):
                return f"click[{goal.asin.lower()}]"
            if goal.asin in s.results:
                pos = s.results.index(goal.asin) // PRODUCT_WINDOW + 1
                return (
                    f"click[{NEXT_PAGE.lower()}]"
                    if pos > s.page_no
                    else f"click[{PREV_PAGE.lower()}]"
                )
            window = self._window(s)
            if window:  # the target is not among the results: the best-ranked product will do
                return f"click[{window[0].lower()}]"
            return f"click[{BACK_TO_SEARCH.lower()}]"
        if s.page == "item":
            product = self.catalog.by_asin[s.asin]
            wanted = (
                goal.options.items()
                if isinstance(goal.options, dict)
                else [(None, v) for v in goal.options]
            )
            for name, value in wanted:
                for opt_name, values in product.options.items():
                    if (
                        (name is None or name == opt_name)
                        and value in values
                        and s.options.get(opt_name) != value
                    ):
                        return f"click[{value}]"
            return f"click[{END_BUTTON.lower()}]"
        if s.page in ("description", "features", "reviews"):
            return f"click[{PREV_PAGE.lower()}]"
        return f"click[{END_BUTTON.lower()}]"
