"""The chat page in a real browser: Debian's headless Chromium driven by selenium (chromedriver
from Debian's chromium-driver) loads GET /, sends a question with lazy prefill, sees the answer
stream in with its TTFT / % computed / tokens/s line, asks a follow-up (served from the
cache) and a third question on full prefill,
saves a screenshot (docs/images/server_page.png when LAZYLLM_SCREENSHOT is set, else the
temporary folder), then stops an answer mid-stream and starts a new chat during another."""
import json
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


def slots_free(srv, timeout_s=3.0):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if json.loads(srv.request("GET", "/health")[1])["slots_busy"] == 0:
            return
        time.sleep(0.05)
    raise AssertionError(f"a slot is still busy {timeout_s} s after the page closed its stream")


def streaming_text(drv, n, min_chars=20, timeout_s=30):
    """The n-th answer's text once it has min_chars and is still streaming."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        msgs = drv.find_elements(By.CSS_SELECTOR, ".msg.assistant")
        if len(msgs) >= n and len(msgs[n - 1].find_element(By.CLASS_NAME, "text").text) >= min_chars:
            assert msgs[n - 1].get_attribute("data-done") is None, "the answer ended too soon"
            return msgs[n - 1]
        time.sleep(0.05)
    raise AssertionError("no streaming text")


def stop_and_new_chat(drv, srv):
    """Stop keeps the text so far in the chat (the next turn carries it) and frees the slot; New
    chat during a stream drops it, frees the slot, and nothing of it comes back."""
    drv.execute_script("document.getElementById('maxtok').value = 400")
    drv.find_element(By.ID, "clear").click()
    ask(drv, "Write a long story about a lighthouse keeper.", "full")
    streaming_text(drv, 1)
    drv.find_element(By.ID, "stop").click()
    a = wait_answer(drv, 1, timeout_s=10)
    assert a.get_attribute("data-done") == "stopped", a.get_attribute("data-done")
    assert a.find_element(By.CLASS_NAME, "text").text and "stopped" in a.text, a.text
    slots_free(srv)
    assert not drv.find_element(By.ID, "stop").is_displayed()
    n_msgs = drv.execute_script("return messages.length")
    assert n_msgs == 2, n_msgs  # the question and the stopped answer
    ask(drv, "Write a long poem about the sea.", "full")
    streaming_text(drv, 2)
    drv.find_element(By.ID, "clear").click()
    slots_free(srv)
    time.sleep(0.5)
    assert not drv.find_elements(By.CSS_SELECTOR, ".msg"), "the old chat's answer came back"
    assert drv.execute_script("return messages.length") == 0
    drv.execute_script("document.getElementById('maxtok').value = 16")
    ask(drv, "What is the capital of France?", "full")
    a = wait_answer(drv, 1)
    assert a.get_attribute("data-done") == "1" and len(drv.find_elements(By.CSS_SELECTOR, ".msg")) == 2
    print(f"        stop and new chat mid-stream: {a.find_element(By.CLASS_NAME, 'text').text!r}")


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
        stop_and_new_chat(drv, srv)
    finally:
        drv.quit()


def run(lazyllm, checks):
    with Server(lazyllm, "--ctx-size", "4096", "--parallel", "2", log_name="browser") as srv:
        checks.run("chat page in headless Chromium", page, srv)
