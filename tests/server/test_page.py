"""The learner page in a real browser: headless Chromium (Debian's ``chromium`` and ``chromium-driver``) and selenium.

One uvicorn server on 127.0.0.1 (``create_app`` over the sample course, with an
API key) and one browser serve every test of this module. The browser's
microphone is Chromium's fake capture device, fed from an espeak-ng recording
of the phrase; the voice façade records what the page sent and what it was
answered. Each test ends by checking the browser's console for errors.
Screenshots of each screen go to a folder under pytest's temporary directory
(or to ``LEARNLOOP_SCREENSHOTS``).
Without chromium or chromedriver every test fails (never skips), saying what to install.
"""

from __future__ import annotations

import os
import secrets
import shutil
import threading
import time
import wave
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from io import BytesIO
from pathlib import Path
from typing import Any

import httpx
import pytest
from httpserve import uvicorn_thread
from selenium import webdriver
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys as Key
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import Select, WebDriverWait

from learnloop import Engine
from learnloop._http import ApiResponse
from learnloop.server import Keys, create_app, load_sample_course
from learnloop.voice import VoiceApi
from learnloop.voice.synthesis import synthesize

KEY = "k-page-" + secrets.token_urlsafe(12)
OTHER_KEY = "k-other-" + secrets.token_urlsafe(12)  # an application without the sample course
PHRASE = "the quick brown fox"
SAID = "the quick brown socks"  # what the learner reads: the first sound of "fox" replaced
REASONS = {
    "knowledge_retention",
    "observed_knowledge_gap",
    "predicted_knowledge_gap",
    "content_progression",
    "assessment",
    "exploration",
}
BANDS = [(90, "excellent", "excellent, native-like"), (80, "good", "good, intelligible")]
BANDS += [(60, "acceptable", "acceptable, room for improvement"), (0, "retry", "retry")]
MISSING = (
    "the browser tests need Debian's headless Chromium and its driver: "
    "apt-get install chromium chromium-driver (./scripts/system-deps installs them)"
)


def band(score: int) -> tuple[str, str]:
    return next((name, text) for low, name, text in BANDS if score >= low)


@dataclass
class RecordingVoice:
    """The voice façade, keeping each request it was handed and what it answered."""

    api: VoiceApi
    calls: list[tuple[str, dict[str, Any], dict[str, bytes], ApiResponse]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def handle(
        self,
        method: str,
        path: str,
        *,
        form: Mapping[str, Any] | None = None,
        files: Mapping[str, bytes] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> ApiResponse:
        answer = self.api.handle(method, path, form=form, files=files, headers=headers)
        with self.lock:
            self.calls.append((path, dict(form or {}), dict(files or {}), answer))
        return answer


@dataclass
class Served:
    base_url: str
    voice: RecordingVoice
    engine: Engine

    def v2(self, endpoint: str, body: dict[str, Any], key: str = KEY) -> Any:
        r = httpx.post(f"{self.base_url}/v2/{endpoint}", json=body, headers={"X-API-KEY": key}, timeout=30)
        assert r.status_code == 200, r.text
        return r.json()["data"]


@pytest.fixture(scope="module")
def server() -> Iterator[Served]:
    engine = Engine(seed=11)
    load_sample_course(engine, ["demo"])
    voice = RecordingVoice(VoiceApi(api_keys={KEY: "demo"}))
    voice.api.scorer.score(synthesize("hello"), "hello")  # load the models before the page waits on them
    app = create_app(engine, keys=Keys(api_keys={KEY: "demo", OTHER_KEY: "other"}), voice=voice)
    with uvicorn_thread(app) as base_url:
        yield Served(base_url, voice, engine)
    engine.close()


@pytest.fixture(scope="module")
def speech(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, float]:
    """The learner's reading by espeak-ng: the fake microphone's input, and its length in seconds."""
    audio = synthesize(SAID)
    path = tmp_path_factory.mktemp("microphone") / "phrase.wav"
    path.write_bytes(audio)
    with wave.open(BytesIO(audio)) as w:
        return path, w.getnframes() / w.getframerate()


@pytest.fixture(scope="module")
def screens(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the screenshots go: ``page-screenshots*`` under pytest's temporary directory, or LEARNLOOP_SCREENSHOTS."""
    chosen = os.environ.get("LEARNLOOP_SCREENSHOTS")
    folder = Path(chosen) if chosen else tmp_path_factory.mktemp("page-screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    print(f"screenshots of the learner page: {folder}")
    return folder


class Browser:
    """Headless Chromium, started on first use (a missing browser fails the test that asks for it)."""

    def __init__(self, microphone: Path) -> None:
        self.microphone = microphone
        self._driver: WebDriver | None = None

    @property
    def driver(self) -> WebDriver:
        if self._driver is None:
            chromium = shutil.which("chromium") or shutil.which("chromium-browser")
            chromedriver = shutil.which("chromedriver")
            if chromium is None or chromedriver is None:
                pytest.fail(f"{MISSING} (found chromium: {chromium}, chromedriver: {chromedriver})", pytrace=False)
            options = webdriver.ChromeOptions()
            options.binary_location = chromium
            for argument in (
                "--headless=new",
                "--no-sandbox",  # the tests may run as root
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--disable-extensions",
                "--no-first-run",
                "--window-size=1200,1500",
                "--use-fake-ui-for-media-stream",
                "--use-fake-device-for-media-stream",
                f"--use-file-for-fake-audio-capture={self.microphone}%noloop",
            ):
                options.add_argument(argument)
            options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
            try:
                self._driver = webdriver.Chrome(options=options, service=Service(executable_path=chromedriver))
            except WebDriverException as exc:
                pytest.fail(f"{MISSING}; starting {chromium} with {chromedriver} failed: {exc.msg}", pytrace=False)
        return self._driver

    def quit(self) -> None:
        if self._driver is not None:
            self._driver.quit()


@pytest.fixture(scope="module")
def browser(speech: tuple[Path, float]) -> Iterator[Browser]:
    chrome = Browser(speech[0])
    yield chrome
    chrome.quit()


# ---- helpers ---------------------------------------------------------------------------------
def wait(driver: WebDriver, condition: Any, timeout: float = 20) -> Any:
    return WebDriverWait(driver, timeout, poll_frequency=0.05).until(lambda d: condition(d))


def find(driver: WebDriver, css: str) -> WebElement:
    return driver.find_element(By.CSS_SELECTOR, css)


def idle(driver: WebDriver) -> bool:
    return find(driver, "body").get_attribute("data-busy") == "0"


def open_page(driver: WebDriver, server: Served, user: str) -> None:
    driver.get("about:blank")  # a fresh page: only the fragment differs from the last address
    driver.get(f"{server.base_url}/#key={KEY}&user={user}")
    wait(driver, lambda d: idle(d) and len(d.find_elements(By.CSS_SELECTOR, "#graph g.node")) == 16)
    assert "key=" not in driver.current_url  # the key leaves the address bar
    assert find(driver, "#catalog").get_attribute("value") == "sample-course"
    assert find(driver, "#error").get_attribute("hidden") is not None


def status(driver: WebDriver, list_id: str) -> dict[str, str]:
    terms = driver.find_elements(By.CSS_SELECTOR, f"#{list_id} dt")
    values = driver.find_elements(By.CSS_SELECTOR, f"#{list_id} dd")
    return {t.text: v.text for t, v in zip(terms, values)}


def set_number(driver: WebDriver, field_id: str, value: str) -> None:
    box = find(driver, f"#{field_id}")
    box.clear()
    if value:
        box.send_keys(value)


def shown_mastery(driver: WebDriver) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for node in driver.find_elements(By.CSS_SELECTOR, "#graph g.node"):
        value = node.get_attribute("data-proficiency")
        out[str(node.get_attribute("data-topic"))] = float(value) if value else None
    return out


def api_mastery(server: Served, user: str) -> dict[str, float | None]:
    catalog = server.v2("query-catalog", {"catalog_id": "sample-course"})
    topics = [t["topic_id"] for t in catalog["topics"]]
    filters = [{"include_topic_ids": [t]} for t in topics]
    body = {"user_id": user, "catalog_id": "sample-course", "filter_list": filters}
    statuses = server.v2("user-status", body)["user_status_list"]
    return {t: s["proficiency"] for t, s in zip(topics, statuses)}


def no_console_errors(driver: WebDriver) -> None:
    errors = [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
    assert errors == [], f"the browser console reported errors: {errors}"


def recommendation(driver: WebDriver) -> dict[str, str]:
    return {
        "item": str(find(driver, "#recommendation").get_attribute("data-item")),
        "name": find(driver, "#item-name").text,
        "keyword": find(driver, "#reason-keyword").text,
        "description": find(driver, "#reason-description").text,
    }


def answered(driver: WebDriver, count: int) -> None:
    """Wait until the page shows the session status after ``count`` interactions."""
    wait(driver, lambda d: idle(d) and find(d, "#session").get_attribute("data-interactions") == str(count))


def start(driver: WebDriver, mode: str, max_count: int) -> None:
    find(driver, f"input[name=mode][value={mode}]").click()
    set_number(driver, "max-count", str(max_count))
    find(driver, "#start").click()
    answered(driver, 0)


# ---- the tests -------------------------------------------------------------------------------
def test_a_learn_session_is_played_by_clicking_until_the_session_says_stop(
    server: Served, browser: Browser, screens: Path
) -> None:
    driver = browser.driver
    user = "page-learner"
    open_page(driver, server, user)
    before = shown_mastery(driver)
    assert before == api_mastery(server, user)
    driver.save_screenshot(str(screens / "1-course.png"))
    start(driver, "learn", 8)
    seen = []
    for step in range(20):
        session = find(driver, "#session")
        if session.get_attribute("data-stop") == "true":
            break
        assert status(driver, "session-status")["Stop session"] == "no"
        rec = recommendation(driver)
        assert rec["keyword"] in REASONS and rec["description"] and rec["name"]
        seen.append(rec)
        current = driver.find_elements(By.CSS_SELECTOR, "#graph g.node.current")
        assert [g.get_attribute("data-topic") for g in current] == [rec["item"].rsplit("-", 1)[0]]
        buttons = {b.text: b for b in driver.find_elements(By.CSS_SELECTOR, "#answers button")}
        if rec["item"].endswith("-theory"):
            assert set(buttons) == {"I read it", "Skip"}
            buttons["I read it"].click()
        else:
            assert set(buttons) == {"I got it right", "I got it wrong", "Skip"}
            buttons["I got it wrong" if step % 3 == 2 else "I got it right"].click()
        answered(driver, step + 1)
        if step == 3:
            driver.save_screenshot(str(screens / "2-learn-session.png"))
    else:
        pytest.fail("the learn session never stopped")
    assert len(seen) == 8
    assert seen[0]["item"] == "ch1-t1-theory" and seen[0]["keyword"] == "content_progression"
    shown = status(driver, "session-status")
    assert shown["Stop session"] == "yes" and shown["Interactions"] == "8"
    assert shown["Stopping conditions met"] == "max_interaction_count"
    assert find(driver, "#recommendation").get_attribute("hidden") is not None
    stopped = find(driver, "#stopped")
    assert stopped.is_displayed() and "max_interaction_count" in stopped.text
    assert "planned number of interactions" in stopped.text
    assert driver.switch_to.active_element == find(driver, "#again")
    # the graph shows what the API now says about each topic, and it has changed where the learner practised
    after = shown_mastery(driver)
    assert after == api_mastery(server, user)
    assert after["ch1-t1"] != before["ch1-t1"]
    assert find(driver, "#user-status").text.count("Progress") == 1
    assert float(status(driver, "user-status")["Progress"].rstrip(" %")) > 0
    driver.save_screenshot(str(screens / "3-learn-stopped.png"))
    no_console_errors(driver)


def test_an_assess_session_is_played_with_the_keyboard(server: Served, browser: Browser, screens: Path) -> None:
    driver = browser.driver
    open_page(driver, server, "page-candidate")
    find(driver, "input[name=mode][value=assess]").click()
    set_number(driver, "max-count", "6")
    find(driver, "#start").send_keys(Key.ENTER)
    session = find(driver, "#session")
    answered(driver, 0)
    for step in range(10):
        if session.get_attribute("data-stop") == "true":
            break
        rec = recommendation(driver)
        assert rec["keyword"] == "assessment" and rec["description"]
        focused = driver.switch_to.active_element
        assert focused.text == "I got it right"  # each new item puts the focus on its first answer
        if step % 2:
            focused.send_keys(Key.TAB)
            assert driver.switch_to.active_element.text == "I got it wrong"
        driver.switch_to.active_element.send_keys(Key.SPACE if step % 3 else Key.ENTER)
        answered(driver, step + 1)
    else:
        pytest.fail("the assess session never stopped")
    assert step == 6
    shown = status(driver, "session-status")
    assert shown["Stop session"] == "yes" and shown["Stopping conditions met"] == "max_interaction_count"
    assert "max_interaction_count" in find(driver, "#stop-reason").text
    assert api_mastery(server, "page-candidate") == shown_mastery(driver)
    driver.save_screenshot(str(screens / "4-assess-stopped.png"))
    no_console_errors(driver)


def test_the_pronunciation_exercise_shows_what_the_voice_api_answered_for_the_recording(
    server: Served, browser: Browser, screens: Path, speech: tuple[Path, float]
) -> None:
    driver = browser.driver
    open_page(driver, server, "page-speaker")
    server.voice.calls.clear()
    assert find(driver, "#phrase").get_attribute("value") == PHRASE
    record = find(driver, "#record")
    record.click()
    wait(driver, lambda d: find(d, "#voice").get_attribute("data-state") == "recording")
    assert record.text == "Stop"
    time.sleep(speech[1] + 0.7)
    record.click()
    wait(driver, lambda d: find(d, "#voice").get_attribute("data-state") in ("scored", "error"), timeout=60)
    assert find(driver, "#error").get_attribute("hidden") is not None, find(driver, "#error").text
    assert record.text == "Record"

    # what the page sent: a WebM recording of the phrase, with the documented fields
    ((path, form, files, answer),) = server.voice.calls
    assert path == "/api/v1/score" and answer.status == 200
    assert form == {
        "dialect": ["en-us"],
        "user_id": ["page-speaker"],
        "target_phrase": [PHRASE],
        "audio_format": ["webm"],
    }
    assert files["audio"][:4] == b"\x1a\x45\xdf\xa3"  # the EBML header of a WebM file
    # the API gives that recording the same scores again
    again = server.voice.api.handle("POST", "/api/v1/score", form=form, files=files, headers={"X-API-KEY": KEY})
    assert again.body == answer.body
    result = answer.body
    assert isinstance(result, dict)
    assert [w["word"] for w in result["word_scores"]] == PHRASE.split()
    missed = [p for w in result["word_scores"] for p in w["phoneme_scores"] if p["sounds_like"] != p["phoneme"]]
    assert missed, "the recording's replaced sound went unnoticed: the page's sounds_like would not be tested"

    # what the page shows: exactly those scores, each with its band in words
    assert find(driver, "#overall-score").text == str(result["overall_score"])
    assert find(driver, "#overall-band").text == band(result["overall_score"])[1]
    words = driver.find_elements(By.CSS_SELECTOR, "#words > li.word")
    assert len(words) == len(result["word_scores"])
    for shown, word in zip(words, result["word_scores"]):
        name, text = band(word["score"])
        assert shown.find_element(By.CSS_SELECTOR, ".word-text").text == word["word"]
        assert shown.find_element(By.CSS_SELECTOR, ".word-score").text == str(word["score"])
        assert shown.find_element(By.CSS_SELECTOR, ".word-band").text == text
        assert f"band-{name}" in str(shown.get_attribute("class")).split()
        assert bool(shown.find_elements(By.CSS_SELECTOR, ".unmatched")) == (not word["is_matched"])
        phonemes = shown.find_elements(By.CSS_SELECTOR, "li.phoneme")
        assert len(phonemes) == len(word["phoneme_scores"])
        for chip, phone in zip(phonemes, word["phoneme_scores"]):
            name, text = band(phone["score"])
            assert (
                chip.find_element(By.CSS_SELECTOR, ".ph-label").text == f"/{phone['phoneme_ipa']}/ {phone['phoneme']}"
            )
            assert chip.find_element(By.CSS_SELECTOR, ".ph-score").text == str(phone["score"])
            assert chip.find_element(By.CSS_SELECTOR, ".ph-band").text == text.split(",")[0]
            assert f"band-{name}" in str(chip.get_attribute("class")).split()
            heard = chip.find_elements(By.CSS_SELECTOR, ".sounds-like")
            if phone["sounds_like"] == phone["phoneme"]:
                assert heard == []
            elif phone["sounds_like"] == "#":
                assert [h.text for h in heard] == ["nothing heard"]
            else:
                expected = f"sounds like /{phone['sounds_like_ipa']}/ {phone['sounds_like']}"
                assert [h.text for h in heard] == [expected]
    assert len(driver.find_elements(By.CSS_SELECTOR, "#words .sounds-like")) == len(missed)
    find(driver, "#voice").screenshot(str(screens / "5-pronunciation.png"))
    no_console_errors(driver)


def test_the_page_loads_only_from_its_own_server(server: Served, browser: Browser) -> None:
    driver = browser.driver
    open_page(driver, server, "page-visitor")
    origin = server.base_url
    urls = driver.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert urls and all(url.startswith(origin + "/") for url in urls), urls
    page = httpx.get(origin + "/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert page.headers["content-security-policy"].startswith("default-src 'self'")
    for asset in ("/static/page.js", "/static/page.css"):
        assert httpx.get(origin + asset).status_code == 200
    no_console_errors(driver)


# ---- which course, which learner ---------------------------------------------------------------
def course(catalog_id: str) -> dict[str, Any]:
    """A one-topic catalog over an item of the sample course."""
    topic = {"topic_id": "t", "display_name": "T", "item_refs": [{"item_id": "ch1-t1-theory"}]}
    return {"catalog_id": catalog_id, "display_name": catalog_id, "topics": [topic]}


def load(driver: WebDriver, server: Served, fragment: str, topics: int) -> None:
    driver.get("about:blank")
    driver.get(f"{server.base_url}/#{fragment}")
    wait(driver, lambda d: idle(d) and len(d.find_elements(By.CSS_SELECTOR, "#graph g.node")) == topics)
    assert find(driver, "#error").get_attribute("hidden") is not None, find(driver, "#error").text


def forget(driver: WebDriver, server: Served) -> None:
    """The browser forgets what the page kept in it (its local storage)."""
    driver.execute_cdp_cmd("Storage.clearDataForOrigin", {"origin": server.base_url, "storageTypes": "local_storage"})


def chosen(driver: WebDriver) -> str:
    return str(find(driver, "#catalog").get_attribute("value"))


def test_the_page_keeps_the_course_chosen_and_otherwise_shows_the_sample_course(
    server: Served, browser: Browser
) -> None:
    driver = browser.driver
    forget(driver, server)  # a browser that has never opened the page
    # a course made a moment ago, first by id (as a v1 view made now would be): the sample course stays the default
    items = server.v2("query-item-database", {})["items"]
    server.v2("upsert-items", {"items": [i for i in items if i["item_id"] == "ch1-t1-theory"]})
    server.v2("upsert-catalog", course("a-course-made-now"))
    load(driver, server, f"key={KEY}&user=page-chooser", 16)
    options = [o.get_attribute("value") for o in driver.find_elements(By.CSS_SELECTOR, "#catalog option")]
    assert options == ["a-course-made-now", "sample-course"]
    assert chosen(driver) == "sample-course"
    # the learner's choice is kept across visits
    Select(find(driver, "#catalog")).select_by_value("a-course-made-now")
    wait(driver, lambda d: idle(d) and len(d.find_elements(By.CSS_SELECTOR, "#graph g.node")) == 1)
    load(driver, server, f"key={KEY}", 1)
    assert chosen(driver) == "a-course-made-now"
    # the address can name one
    load(driver, server, f"key={KEY}&catalog=sample-course", 16)
    assert chosen(driver) == "sample-course"
    load(driver, server, f"key={KEY}", 16)
    assert chosen(driver) == "sample-course"
    no_console_errors(driver)


def test_without_the_sample_course_a_course_made_later_does_not_take_over(server: Served, browser: Browser) -> None:
    driver = browser.driver
    forget(driver, server)
    items = server.v2("query-item-database", {})["items"]
    theory = [i for i in items if i["item_id"] == "ch1-t1-theory"]
    server.v2("upsert-items", {"items": theory}, key=OTHER_KEY)
    server.v2("upsert-catalog", course("m-course"), key=OTHER_KEY)
    load(driver, server, f"key={OTHER_KEY}&user=page-other", 1)
    assert chosen(driver) == "m-course"
    server.v2("upsert-catalog", course("b-course-made-later"), key=OTHER_KEY)
    load(driver, server, f"key={OTHER_KEY}", 1)
    assert chosen(driver) == "m-course"
    # a browser new to the page: the first by id, whatever order the API lists them in
    forget(driver, server)
    load(driver, server, f"key={OTHER_KEY}", 1)
    assert chosen(driver) == "b-course-made-later"
    no_console_errors(driver)


def test_the_learner_id_is_in_view_and_can_be_changed(server: Served, browser: Browser) -> None:
    driver = browser.driver
    open_page(driver, server, "page-first-learner")
    assert find(driver, "#connection").get_attribute("open") is None  # the connection settings stay folded
    field = find(driver, "#user-id")
    assert field.is_displayed() and field.get_attribute("value") == "page-first-learner"
    label = find(driver, "label[for=user-id]")
    assert label.is_displayed() and label.text == "Learner id"
    # another learner: typed in and confirmed with Enter
    field.clear()
    field.send_keys("page-second-learner", Key.ENTER)
    wait(
        driver,
        lambda d: (
            idle(d) and d.execute_script("return localStorage.getItem('learnloop-user')") == "page-second-learner"
        ),
    )
    assert shown_mastery(driver) == api_mastery(server, "page-second-learner")
    start(driver, "learn", 3)
    find(driver, "#answers button").click()
    answered(driver, 1)
    events = list(server.engine.store.keys("events", "demo", ("page-second-learner",)))
    assert len(events) == 1  # the session was the new learner's
    assert shown_mastery(driver) == api_mastery(server, "page-second-learner")
    # the change is kept: the next visit without #user= is the same learner's
    load(driver, server, f"key={KEY}", 16)
    assert find(driver, "#user-id").get_attribute("value") == "page-second-learner"
    # the button does it too, and puts away the other learner's session
    start(driver, "learn", 3)
    field = find(driver, "#user-id")
    field.clear()
    field.send_keys("page-third-learner")
    find(driver, "#change-user").click()
    wait(
        driver,
        lambda d: idle(d) and d.execute_script("return localStorage.getItem('learnloop-user')") == "page-third-learner",
    )
    assert not find(driver, "#session").is_displayed()
    assert shown_mastery(driver) == api_mastery(server, "page-third-learner")
    no_console_errors(driver)


def test_review_shows_what_is_due_and_serves_it_most_overdue_first(
    server: Served, browser: Browser, screens: Path
) -> None:
    driver = browser.driver
    user = "page-reviewer"
    month_ago = datetime.now(UTC) - timedelta(days=30)
    answers = [("ch1-t1-q1", 1), ("ch1-t1-q2", 1), ("ch1-t2-q1", 0), ("ch1-t2-q2", 1)]
    events = [
        {
            "type": "attempt",
            "item_id": item,
            "catalog_id": "sample-course",
            "timestamp": (month_ago + timedelta(minutes=k)).isoformat(),
            "score": score,
        }
        for k, (item, score) in enumerate(answers)
    ]
    server.v2("upsert-events", {"user_id": user, "events": events})
    due = server.v2("query-due-items", {"user_id": user, "catalog_id": "sample-course"})
    assert due["due_now"] == 4 and [d["item_id"] for d in due["items"]][:1] == ["ch1-t2-q1"]  # the lapse first
    open_page(driver, server, user)
    wait(driver, lambda d: find(d, "#review").is_displayed())
    assert status(driver, "due-status")["Due now"] == "4"
    listed = [li.get_attribute("data-item") for li in driver.find_elements(By.CSS_SELECTOR, "#due-list li")]
    assert listed == [d["item_id"] for d in due["items"]]
    assert "due since" in find(driver, "#due-list").text and "recall" in find(driver, "#due-list").text
    driver.save_screenshot(str(screens / "6-review-due.png"))
    start(driver, "review", 10)
    seen = []
    for step in range(6):
        if find(driver, "#session").get_attribute("data-stop") == "true" or find(driver, "#stopped").is_displayed():
            break
        rec = recommendation(driver)
        assert rec["keyword"] == "knowledge_retention" and "due since" in rec["description"]
        seen.append(rec["item"])
        find(driver, "#answers button").click()  # "I got it right"
        answered(driver, step + 1)
    else:
        pytest.fail("the review session never ran out of due items")
    # the lapsed topic first, then the other; one answer reviews its topic; nothing unseen
    assert seen == ["ch1-t2-q1", "ch1-t1-q1"]
    assert "nothing due" in find(driver, "#stop-reason").text
    shown = status(driver, "due-status")
    assert shown["Due now"] == "0" and shown["Next review"] != "nothing answered yet"
    driver.save_screenshot(str(screens / "7-review-nothing-due.png"))
    no_console_errors(driver)
