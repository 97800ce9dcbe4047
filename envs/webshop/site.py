"""The WebShop site: the engine's pages as HTML, for people in a browser (``seed-gym serve webshop``).

Every page is rendered from the same ``Page`` the agent reads as text, so a person and an agent
see the same products, buttons and scores. Each clickable element is a submit button whose value
is the agent action it performs (``click[buy now]``), the search box submits ``search[...]``;
the server applies it with ``Engine.act`` and redirects back to the session's page.

Routes: ``GET /`` starts a session (``?task_id=...`` for a given goal, else a random goal of the
split) and redirects to ``/session/<id>``; ``GET /session/<id>`` shows the current page;
``POST /session/<id>`` performs ``action`` (or searches ``query``); ``GET /session/<id>/text``
returns the agent's text view of the same page. Sessions live in memory and expire: one unused
for ``session_ttl`` seconds is dropped, and beyond ``max_sessions`` the least recently used go
first (they never expired before, ~626 bytes each, so a long-running site grew without bound).
"""

from __future__ import annotations

import html
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

from seed_gym.envs.webshop.engine import Element, Engine, Page, Session
from seed_gym.envs.webshop.env import WebShopEnv

STYLE = """
body { font-family: system-ui, sans-serif; margin: 0; background: #f4f5f7; color: #1d1f23; }
main { max-width: 960px; margin: 2rem auto; background: #fff; padding: 1.5rem 2rem; border-radius: 8px;
       box-shadow: 0 1px 4px rgba(0,0,0,.1); }
#instruction-text { background: #fff8e1; border-left: 4px solid #f0a500; padding: .6rem 1rem; margin-bottom: 1rem; }
button { font: inherit; cursor: pointer; }
.btn { background: #2a6fdb; color: #fff; border: 0; border-radius: 4px; padding: .4rem .9rem; margin: .2rem .3rem .2rem 0; }
.btn.buy { background: #f0a500; color: #1d1f23; font-weight: 600; padding: .6rem 1.4rem; }
.product-link { background: none; border: 0; color: #2a6fdb; text-decoration: underline; padding: 0; font-weight: 600; }
.result { border-top: 1px solid #e3e5e8; padding: .6rem 0; }
.result .price, .item .price { color: #b12704; }
.option { border: 1px solid #aab; background: #fff; border-radius: 14px; padding: .2rem .8rem; margin: .2rem; }
.option.selected { background: #1d1f23; color: #fff; border-color: #1d1f23; }
.search-box input { width: 70%; padding: .5rem; font-size: 1.05rem; }
#reward pre { font-size: 2rem; margin: .5rem 0; }
"""


def _esc(text: str) -> str:
    return html.escape(text, quote=True)


def _button(e: Element, css: str = "btn") -> str:
    selected = " selected" if e.selected else ""
    pressed = f' aria-pressed="{str(e.selected).lower()}"' if e.kind == "option" else ""
    return (
        f'<button type="submit" class="{css}{selected}" name="action" value="{_esc(e.action or "")}"{pressed}>'
        f"{_esc(e.text)}</button>"
    )


def render_page(page: Page, session_id: str) -> str:
    """The full HTML document for ``page``."""
    els = list(page.elements)
    body: list[str] = []
    i = 0
    while i < len(els):
        e = els[i]
        nxt = els[i + 1] if i + 1 < len(els) else None
        if e.kind == "heading" and e.text == "Instruction:" and nxt is not None:
            body.append(
                f'<div id="instruction-text"><h4>Instruction:<br>{_esc(nxt.text)}</h4></div>'
            )
            i += 2
            continue
        if e.kind == "search":
            body.append(
                '<div class="search-box"><input id="search_input" type="text" name="query" '
                'placeholder="Search..." autofocus>'
                '<button type="submit" class="btn" id="search-button" name="action" value="search">'
                "Search</button></div>"
            )
        elif e.kind == "link":  # asin, title, price
            title = els[i + 1].text if i + 1 < len(els) else ""
            price = els[i + 2].text if i + 2 < len(els) else ""
            body.append(
                f'<div class="result">{_button(e, "product-link")}'
                f'<div class="title">{_esc(title)}</div><div class="price">{_esc(price)}</div></div>'
            )
            i += 3
            continue
        elif e.kind == "option":
            body.append(_button(e, "option"))
        elif e.kind == "button":
            css = "btn buy" if e.text == "Buy Now" else "btn"
            body.append(_button(e, css))
        elif e.kind == "score":
            body[-1:] = [
                f'<div id="reward"><h3>{_esc(els[i - 1].text)}</h3><pre id="score">{_esc(e.text)}</pre></div>'
            ]
        elif e.kind == "heading":
            tag = "h1" if e.text in ("WebShop", "Thank you for shopping with us!") else "h3"
            if (
                page.name == "item"
                and e.text not in ("WebShop",)
                and i + 1 < len(els)
                and els[i + 1].kind == "option"
            ):
                tag = "h4"  # an option name
            body.append(f'<{tag} class="{page.name}-heading">{_esc(e.text)}</{tag}>')
        else:
            css = "price" if e.text.startswith("Price:") else "text"
            body.append(f'<p class="{css}">{_esc(e.text)}</p>')
        i += 1
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>WebShop - {_esc(page.name)}</title><style>{STYLE}</style></head><body>"
        f'<main class="{page.name}" data-page="{page.name}">'
        f'<form method="post" action="/session/{_esc(session_id)}" id="page-form">'
        + "\n".join(body)
        + "</form></main></body></html>"
    )


class SessionStore:
    """Sessions by id, least recently used first; expired ones are dropped as others arrive.
    Not thread-safe by itself: the app holds its lock around every call."""

    def __init__(self, max_sessions: int, ttl: float, clock: Callable[[], float]):
        if max_sessions < 1 or ttl <= 0:
            raise ValueError("max_sessions must be >= 1 and session_ttl > 0")
        self.max_sessions, self.ttl, self.clock = max_sessions, ttl, clock
        self._items: OrderedDict[str, tuple[Session, float]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._items)

    def _expire(self, now: float) -> None:
        while self._items:
            oldest, (_, used) = next(iter(self._items.items()))
            if now - used <= self.ttl and len(self._items) <= self.max_sessions:
                break
            del self._items[oldest]

    def add(self, session_id: str, session: Session) -> None:
        now = self.clock()
        self._items[session_id] = (session, now)
        self._expire(now)

    def get(self, session_id: str) -> Session | None:
        now = self.clock()
        self._expire(now)
        item = self._items.get(session_id)
        if item is None:
            return None
        self._items[session_id] = (item[0], now)
        self._items.move_to_end(session_id)
        return item[0]


def create_app(
    env_kwargs: dict[str, Any] | None = None,
    split: str = "seen",
    seed: int = 0,
    *,
    max_sessions: int = 10_000,
    session_ttl: float = 3600.0,
    clock: Callable[[], float] = time.monotonic,
):
    """A Flask app serving the WebShop site over the catalog ``env_kwargs`` selects (the
    ``WebShopEnv`` keyword arguments ``num_products``, ``catalog_seed``, ``data_dir`` ...).
    At most ``max_sessions`` sessions are kept; one idle for ``session_ttl`` seconds expires."""
    try:
        from flask import Flask, Response, abort, redirect, request
    except ImportError as e:  # pragma: no cover - depends on the install
        raise ImportError("the WebShop site needs Flask: pip install 'seed-gym[webshop]'") from e
    env = WebShopEnv(split=split, **(env_kwargs or {}))
    engine: Engine = env.engine
    catalog = env.catalog
    task_ids = env.task_ids
    rng = np.random.default_rng(seed)
    sessions = SessionStore(max_sessions, session_ttl, clock)
    lock = threading.Lock()

    app = Flask("seed_gym_webshop")

    def _session(session_id: str) -> Session:
        s = sessions.get(session_id)
        if s is None:
            abort(404, description="no such session (or it expired); start one at /")
        return s

    @app.get("/")
    def index():
        task_id = request.args.get("task_id")
        with lock:
            if task_id is None:
                task_id = task_ids[int(rng.integers(len(task_ids)))]
            if task_id not in catalog.goals_by_id:
                abort(404, description=f"no goal {task_id!r}")
            session_id = secrets.token_hex(8)
            sessions.add(session_id, Session(goal=catalog.goals_by_id[task_id]))
        return redirect(f"/session/{session_id}")

    @app.get("/session/<session_id>")
    def show(session_id: str):
        with lock:
            page = engine.view(_session(session_id))
        return Response(render_page(page, session_id), mimetype="text/html")

    @app.get("/session/<session_id>/text")
    def text(session_id: str):
        with lock:
            s = _session(session_id)
            page = engine.view(s)
            return {"observation": page.text(), "admissible_actions": page.actions(), "page": page.name,
                    "score": s.score.to_dict() if s.score else None}  # fmt: skip

    @app.post("/session/<session_id>")
    def act(session_id: str):
        action = request.form.get("action", "")
        if action == "search":
            action = f"search[{request.form.get('query', '')}]"
        with lock:
            engine.act(_session(session_id), action)
        return redirect(f"/session/{session_id}", code=303)

    app.config["SEED_GYM_SESSIONS"] = sessions  # for tests and monitoring
    return app
