"""The API reference at ``/docs``: Swagger UI over the three OpenAPI documents, from files shipped in the package.

The page must load nothing from elsewhere and keep a strict Content-Security-Policy (no inline script, no
eval); a headless Chromium (as in ``test_page.py``) checks that it renders every operation of the three
documents without a console error (a policy violation is one).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import httpx
import pytest
from httpserve import uvicorn_thread
from selenium import webdriver
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from learnloop import Engine
from learnloop.server import create_app, openapi

DOCUMENTS = {"v1": "v1", "v2": "v2", "voice": "voice"}  # section id -> OpenAPI document name
METHODS = {"get", "put", "post", "delete", "patch", "head", "options"}
MISSING = "the browser test needs Debian's headless Chromium and its driver: apt-get install chromium chromium-driver"


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    engine = Engine()
    with uvicorn_thread(create_app(engine)) as url:
        yield url
    engine.close()


class Links(HTMLParser):
    """The addresses a page's elements reference (src, href)."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, str]] = []
        self.inline_scripts = 0
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = dict(attrs)
        for name in ("src", "href"):
            if named.get(name) is not None:
                self.found.append((tag, str(named[name])))
        self._in_script = tag == "script"
        if tag == "script" and "src" not in named:
            self.inline_scripts += 1
        assert not any(name.startswith("on") for name in named), (tag, attrs)  # no inline event handlers

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False


def operations(name: str) -> list[tuple[str, str]]:
    doc = openapi.document(name)
    return sorted((method, path) for path, item in doc["paths"].items() for method in item if method in METHODS)


def test_docs_references_only_assets_of_its_own_server_and_each_is_served(base_url: str) -> None:
    page = httpx.get(base_url + "/docs")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    links = Links()
    links.feed(page.text)
    assert links.inline_scripts == 0
    scripts = [address for tag, address in links.found if tag == "script"]
    assert "static/swagger-ui/swagger-ui-bundle.js" in scripts and "static/docs.js" in scripts
    for tag, address in links.found:
        if address.startswith(("#", "data:")):
            continue
        assert not urlsplit(address).scheme and not address.startswith("//"), (tag, address)
        answer = httpx.get(urljoin(base_url + "/docs", address))
        assert answer.status_code == 200, (tag, address)
    # the licence of the shipped Swagger UI is served with it
    assert "Apache License" in httpx.get(base_url + "/static/swagger-ui/LICENSE").text


def test_docs_has_a_strict_content_security_policy(base_url: str) -> None:
    policy = httpx.get(base_url + "/docs").headers["content-security-policy"]
    directives = {part.split()[0]: part.split()[1:] for part in policy.split(";") if part.strip()}
    assert directives["default-src"] == ["'none'"] and directives["script-src"] == ["'self'"]
    assert directives["object-src"] == ["'none'"] and directives["frame-ancestors"] == ["'none'"]
    for name, sources in directives.items():
        for source in sources:
            # only this server: no other host, scheme or wildcard, no eval
            assert source in ("'self'", "'none'", "data:"), (name, source)
    head = httpx.head(base_url + "/docs")
    assert head.status_code == 200 and head.headers["content-security-policy"] == policy


def test_docs_is_left_out_on_request() -> None:
    engine = Engine()
    with uvicorn_thread(create_app(engine, docs=False, page=False)) as url:
        assert httpx.get(url + "/docs").status_code == 404
    with uvicorn_thread(create_app(engine, page=False)) as url:  # its files come with it
        assert httpx.get(url + "/docs").status_code == 200
        assert httpx.get(url + "/static/docs.js").status_code == 200
    engine.close()


@pytest.fixture(scope="module")
def driver() -> Iterator[WebDriver]:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    chromedriver = shutil.which("chromedriver")
    if chromium is None or chromedriver is None:
        pytest.fail(f"{MISSING} (found chromium: {chromium}, chromedriver: {chromedriver})", pytrace=False)
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"):
        options.add_argument(argument)
    options.add_argument("--window-size=1200,1500")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    try:
        chrome = webdriver.Chrome(options=options, service=Service(executable_path=chromedriver))
    except WebDriverException as exc:
        pytest.fail(f"{MISSING}; starting {chromium} with {chromedriver} failed: {exc.msg}", pytrace=False)
    yield chrome
    chrome.quit()


def test_docs_renders_every_operation_of_the_three_documents_in_a_browser(
    base_url: str, driver: WebDriver, screens: Path
) -> None:
    # policy violations are reported to the page as events: count them from the start
    driver.execute_cdp_cmd(
        "Page.addScriptToEvaluateOnNewDocument",
        {
            "source": "window.__violations = []; document.addEventListener('securitypolicyviolation',"
            " (e) => window.__violations.push(e.violatedDirective + ' ' + e.blockedURI));"
        },
    )
    driver.get(base_url + "/docs")
    expected = {section: operations(name) for section, name in DOCUMENTS.items()}

    def shown(d: WebDriver) -> dict[str, list[tuple[str, str]]]:
        out = {}
        for section in DOCUMENTS:
            blocks = d.find_elements(By.CSS_SELECTOR, f"#{section} .opblock")
            out[section] = sorted(
                (
                    b.find_element(By.CSS_SELECTOR, ".opblock-summary-method").text.lower(),
                    b.find_element(By.CSS_SELECTOR, ".opblock-summary-path").get_attribute("data-path"),
                )
                for b in blocks
            )
        return out

    WebDriverWait(driver, 30, poll_frequency=0.1).until(lambda d: shown(d) == expected)
    for section, name in DOCUMENTS.items():
        title = driver.find_element(By.CSS_SELECTOR, f"#{section} .info .title").text
        assert openapi.document(name)["info"]["title"] in title
    urls = driver.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert urls and all(url.startswith(base_url + "/") for url in urls), urls
    assert driver.execute_script("return window.__violations") == []
    errors = [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
    assert errors == [], f"the browser console reported errors: {errors}"
    driver.save_screenshot(str(screens / "docs.png"))


@pytest.fixture(scope="module")
def screens(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the screenshot goes: under pytest's temporary directory, or LEARNLOOP_SCREENSHOTS."""
    chosen = os.environ.get("LEARNLOOP_SCREENSHOTS")
    folder = Path(chosen) if chosen else tmp_path_factory.mktemp("docs-screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder
