"""``seed-gym serve webshop``: serve an env's site in the browser.

Only WebShop has a site: the same engine the agent env runs, as HTML pages. Open the printed URL,
read the instruction, search, open a product, pick its options and buy; the last page shows the
score WebShop's reward gives the purchase.
"""

from __future__ import annotations

import argparse

SITES = ("webshop",)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="seed-gym serve", description=__doc__.splitlines()[0])
    p.add_argument("site", choices=SITES, help="which site to serve")
    p.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=3000, help="port (default 3000)")
    p.add_argument(
        "--split", default="seen", choices=["train", "seen", "unseen"], help="goals to draw from"
    )
    p.add_argument(
        "--num-products", type=int, default=1000, help="generated catalog size (default 1000)"
    )
    p.add_argument("--catalog-seed", type=int, default=0, help="generated catalog seed (default 0)")
    p.add_argument(
        "--data-dir", default=None, help="folder with the original WebShop files instead"
    )
    p.add_argument("--human-goals", action="store_true", help="goals from items_human_ins.json")
    p.add_argument("--seed", type=int, default=0, help="seed of the random goal draw")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from seed_gym.envs.webshop.site import create_app

    app = create_app(
        {
            "num_products": args.num_products,
            "catalog_seed": args.catalog_seed,
            "data_dir": args.data_dir,
            "human_goals": args.human_goals,
        },
        split=args.split,
        seed=args.seed,
    )
    print(
        f"WebShop ({args.split} goals) at http://{args.host}:{args.port}/  (Ctrl-C stops)",
        flush=True,
    )
    app.run(host=args.host, port=args.port, threaded=True, use_reloader=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
