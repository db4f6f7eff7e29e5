"""The chat page in a real browser: Debian's headless Chromium driven by selenium (chromedriver
from Debian's chromium-driver) loads GET /, sends a question with lazy prefill, sees the answer
stream in with its TTFT / % computed / tokens/s line, asks a follow-up (served from the
cache) and a third question on full prefill, and
saves a screenshot (docs/images/server_page.png when LAZYLLM_SCREENSHOT is set, else the
temporary folder)."""
import os
import shutil
import tempfile
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

from server_harness import Server


def browser():
    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=1100,800", "--no-proxy-server", "--disable-extensions",
              "--disable-background-networking", "--disable-component-update", "--disable-sync"):
        opts.add_argument(a)
    service = Service(executable_path=shutil.which("chromedriver") or "/usr/bin/chromedriver")
    return webdriver.Chrome(options=opts, service=service)


def wait_answer(drv, n, timeout_s=60):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        done = drv.find_elements(By.CSS_SELECTOR, ".msg.assistant[data-done]")
        if len(done) >= n:
            return done[n - 1]
        time.sleep(0.1)
    raise AssertionError("no answer within the time limit")


def ask(drv, text, policy):
    drv.find_element(By.ID, "pfull" if policy == "full" else "plazy").click()
    q = drv.find_element(By.ID, "q")
    q.send_keys(text)
    drv.find_element(By.ID, "send").click()


def page(srv):
    drv = browser()
    try:
        drv.set_page_load_timeout(30)
        drv.get(srv.base + "/")
        assert drv.title == "lazyllm serve", drv.title
        # Over the safe preset's floor of 3072 tokens, so that "lazy" (that preset) prunes it.
        doc = " ".join(f"Station {i} reported {10 + i % 7} degrees and light wind." for i in range(240))
        ask(drv, doc + " The capital of France is Paris. What is the capital of France?", "lazy")
        a1 = wait_answer(drv, 1)
        assert a1.get_attribute("data-done") == "1", a1.text
        text = a1.find_element(By.CLASS_NAME, "text").text
        stats = a1.find_element(By.CLASS_NAME, "stats").text
        assert "Paris" in text, text
        assert "lazy prefill" in stats and "TTFT" in stats and "% computed" in stats and "tokens/s" in stats, stats
        assert "100.0% computed" not in stats, stats  # the document was pruned
        ask(drv, "And the capital of Italy?", "lazy")  # the next turn: served from the cache
        a2 = wait_answer(drv, 2)
        stats2 = a2.find_element(By.CLASS_NAME, "stats").text
        assert a2.get_attribute("data-done") == "1" and "cached 0 of" not in stats2, stats2
        ask(drv, "Thank you!", "full")
        a3 = wait_answer(drv, 3)
        stats3 = a3.find_element(By.CLASS_NAME, "stats").text
        assert a3.get_attribute("data-done") == "1" and "full prefill" in stats3, stats3
        for a in (a1, a2, a3):
            print(f"        {a.find_element(By.CLASS_NAME, 'text').text!r} [{a.find_element(By.CLASS_NAME, 'stats').text}]")
        drv.find_element(By.ID, "clear").click()  # a short chat: under the preset's floor
        ask(drv, "What is the capital of France?", "lazy")
        a4 = wait_answer(drv, 1)
        stats4 = a4.find_element(By.CLASS_NAME, "stats").text
        assert "100.0% computed" in stats4 and "under the floor of 3072 tokens" in stats4, stats4
        print(f"        {a4.find_element(By.CLASS_NAME, 'text').text!r} [{stats4}]")
        out = os.environ.get("LAZYLLM_SCREENSHOT") or os.path.join(tempfile.gettempdir(), "lazyllm_server_page.png")
        drv.save_screenshot(out)
        print(f"        screenshot: {out}")
    finally:
        drv.quit()


def run(lazyllm, checks):
    with Server(lazyllm, "--ctx-size", "4096", "--parallel", "2", log_name="browser") as srv:
        checks.run("chat page in headless Chromium", page, srv)
