"""``seed-gym serve webshop``: serve an env's site in the browser.

Only WebShop has a site: the same engine the agent env runs, as HTML pages. Open the printed URL,
read the instruction, search, open a product, pick its options and buy; the last page shows the
score WebShop's reward gives the purchase.
"""

from __future__ import annotations

import argparse

from seed_gym.envs.webshop.site import create_app
from seed_gym.registration import ENV_ERRORS
from seed_gym.usage import OneLineParser, usage_error

SITES = ("webshop",)


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="seed-gym serve", description=__doc__.splitlines()[0])
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
    prog = "seed-gym serve"
    args = build_parser().parse_args(argv)
    if args.num_products is not None and args.num_products < 1:
        usage_error(prog, f"--num-products must be >= 1, not {args.num_products}")
    if not 0 <= args.port <= 65535:
        usage_error(prog, f"--port must be in 0..65535, not {args.port}")
    try:
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
    except ENV_ERRORS as e:
        usage_error(prog, f"cannot serve the WebShop site: {e}")
    print(
        f"WebShop ({args.split} goals) at http://{args.host}:{args.port}/  (Ctrl-C stops)",
        flush=True,
    )
    try:
        app.run(host=args.host, port=args.port, threaded=True, use_reloader=False)
    except OSError as e:  # the port is taken, or the host is not an interface of this machine
        usage_error(prog, f"cannot listen on {args.host}:{args.port}: {e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
