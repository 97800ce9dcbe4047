"""End to end: ``seed-gym serve webshop`` in a subprocess, driven by headless Chromium (selenium)
through search -> results -> item -> option -> buy, then the score page."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
from conftest import headless_chromium

pytestmark = pytest.mark.browser


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    port = _free_port()
    env = dict(os.environ)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "seed_gym.cli",
            "serve",
            "webshop",
            "--port",
            str(port),
            "--split",
            "seen",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_until_up(base, proc)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def _wait_until_up(base: str, proc: subprocess.Popen, timeout: float = 120.0) -> None:
    # any HTTP answer (even 404) means the server is up
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(
                f"seed-gym serve exited with {proc.returncode}: {proc.stdout.read()}"
            )
        try:
            urllib.request.urlopen(base + "/favicon.ico", timeout=2)
            return
        except urllib.error.HTTPError:
            return
        except OSError:
            time.sleep(0.3)
    raise TimeoutError(f"{base} did not answer within {timeout} s")


@pytest.fixture(scope="module")
def browser():
    with headless_chromium() as driver:
        driver.set_page_load_timeout(60)
        yield driver


def _goal():
    import seed_gym

    env = seed_gym.make("seed_gym/WebShop-v0", split="seen")
    raw = env.unwrapped
    for task_id in raw.task_ids:  # the first goal that asks for options
        raw.reset(seed=0, options={"task_id": task_id})
        info = raw.privileged_info()
        if info["options"]:
            break
    env.close()
    return task_id, info


def _page(browser) -> str:
    from selenium.webdriver.common.by import By

    return browser.find_element(By.CSS_SELECTOR, "main").get_attribute("data-page")


def _click(browser, element, expect_page: str) -> None:
    """Click a submit button and wait for the next page (a POST, a redirect, a new document)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    element.click()
    wait = WebDriverWait(browser, 30)
    wait.until(ec.staleness_of(element))
    wait.until(
        ec.presence_of_element_located((By.CSS_SELECTOR, f'main[data-page="{expect_page}"]'))
    )


def test_shop_in_a_browser(server, browser):
    from selenium.webdriver.common.by import By

    task_id, goal = _goal()
    browser.get(f"{server}/?task_id={task_id}")
    assert _page(browser) == "search"
    assert goal["instruction"] in browser.find_element(By.ID, "instruction-text").text

    box = browser.find_element(By.ID, "search_input")
    box.send_keys(goal["target_title"])
    _click(browser, browser.find_element(By.ID, "search-button"), "results")

    asin = goal["target_asin"]
    links = browser.find_elements(By.CSS_SELECTOR, "button.product-link")
    assert asin in [link.text for link in links], "the target is on the first results page"
    _click(browser, next(link for link in links if link.text == asin), "item")
    assert goal["target_title"] in browser.page_source

    for value in goal["options"].values():
        option = next(
            o for o in browser.find_elements(By.CSS_SELECTOR, "button.option") if o.text == value
        )
        _click(browser, option, "item")
        selected = [
            o.text for o in browser.find_elements(By.CSS_SELECTOR, "button.option.selected")
        ]
        assert value in selected

    _click(browser, browser.find_element(By.CSS_SELECTOR, "button.buy"), "done")
    assert "Your score" in browser.find_element(By.ID, "reward").text
    assert float(browser.find_element(By.ID, "score").text) == 1.0


def test_a_wrong_purchase_scores_below_one(server, browser):
    from selenium.webdriver.common.by import By

    task_id, goal = _goal()
    browser.get(f"{server}/?task_id={task_id}")
    browser.find_element(By.ID, "search_input").send_keys(goal["target_title"])
    _click(browser, browser.find_element(By.ID, "search-button"), "results")
    _click(browser, browser.find_element(By.CSS_SELECTOR, "button.product-link"), "item")
    # buy without choosing any option: the goal's options are missed
    _click(browser, browser.find_element(By.CSS_SELECTOR, "button.buy"), "done")
    score = float(browser.find_element(By.ID, "score").text)
    assert 0.0 <= score < 1.0
