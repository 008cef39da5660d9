"""Issue 20 in a real browser: a headless Chromium (Debian's `chromium` and `chromium-driver`, driven by Selenium)
opens the report of a recorded run, and follows `kernelevolve serve` while a scripted search is still writing the
run. Screenshots of both pages go to the test's tmp folder; with KERNELEVOLVE_SCREENSHOTS=DIR they are copied
there too (`KERNELEVOLVE_SCREENSHOTS=docs/images` refreshes the README's)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kernelevolve.report.html import write_run_report
from kernelevolve.search import session
from kernelevolve.search.session import Limits, RunSpec
from kernelevolve.store.store import Store
from tests.doubles import kernel
from tests.recorded_run import PROBLEM, CasesEvaluator, record

webdriver = pytest.importorskip("selenium.webdriver", reason="needs selenium (the dev extra)")
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

CHROMIUM = shutil.which("chromium")
CHROMEDRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(
    not (CHROMIUM and CHROMEDRIVER),
    reason="needs a headless Chromium, Debian's chromium and chromium-driver packages: "
    "apt-get install chromium chromium-driver",
)
WAIT_S = 20


@pytest.fixture(scope="module")
def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1400,1900",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=webdriver.ChromeService(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def console_errors(driver) -> list[str]:
    """What the page logged as an error (uncaught exceptions, failed loads, console.error) since last asked."""
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def wait(driver, what, timeout: float = WAIT_S):
    return WebDriverWait(driver, timeout, poll_frequency=0.05).until(lambda d: what(d))


# The graph's marker traces as drawn: each trace element's d3 datum names its trace (an empty trace draws no
# element, so positions in the DOM are not indices into gd.data). The best's star and the selection ring are left out.
NODE_TRACES = """
const drawn = [...document.querySelectorAll('#graph .scatterlayer .trace')].map((e) => [e, e.__data__[0].trace]);
const nodes = drawn.filter(([, t]) => t.mode.startsWith('markers') && !['best', 'selected'].includes(t.name));
"""


def graph_points(driver) -> int:
    """Nodes drawn in the search graph."""
    return driver.execute_script(
        NODE_TRACES + "return nodes.reduce((n, [e]) => n + e.querySelectorAll('path.point').length, 0);"
    )


def click_node(driver, step: int) -> None:
    """A real mouse click on the node's marker in the graph (plotly turns it into plotly_click)."""
    point = driver.execute_script(
        NODE_TRACES
        + """for (const [e, t] of nodes) {
          const i = (t.customdata || []).indexOf(arguments[0]);
          if (i >= 0) return e.querySelectorAll('path.point')[i];
        }
        return null;""",
        step,
    )
    assert point is not None, f"node {step} is not drawn"
    ActionChains(driver).move_to_element(point).click().perform()
    wait(driver, lambda d: d.find_element(By.ID, "node-title").text.startswith(f"node {step} "))


def screenshot(driver, tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    driver.save_screenshot(str(path))
    if os.environ.get("KERNELEVOLVE_SCREENSHOTS"):
        folder = Path(os.environ["KERNELEVOLVE_SCREENSHOTS"])
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, folder / name)
    return path


def test_the_report_draws_its_charts_and_graph_and_a_click_shows_the_node(browser, tmp_path):
    store, run_id = record(tmp_path / "runs")
    run = store.get_run(run_id)
    out = write_run_report(store, run, tmp_path / "report.html")
    browser.get(out.as_uri())
    nodes = store.nodes(run_id)
    wait(browser, lambda d: graph_points(d) == len(nodes))
    for chart in ("fitness-steps", "fitness-time"):
        traces = browser.find_elements(By.CSS_SELECTOR, f"#{chart} .scatterlayer .trace")
        drawn = sum(len(t.find_elements(By.CSS_SELECTOR, "path.point")) for t in traces)
        assert drawn == len(nodes)  # every node, failed ones at 0
    assert browser.find_elements(By.CSS_SELECTOR, "#cases-speedup .barlayer .trace")
    assert browser.find_elements(By.CSS_SELECTOR, "#cases-time .barlayer .trace")
    assert browser.find_elements(By.CSS_SELECTOR, "#llm-funnel .funnellayer .trace")
    assert "scripted:m" in browser.find_element(By.ID, "llm-table").text

    debug = next(n for n in nodes if n.operator == "llm" and not store.node(n.parents[0].parent_id).correct)
    click_node(browser, debug.step)
    panel = browser.find_element(By.ID, "node")
    assert "debug" in browser.find_element(By.ID, "node-title").text
    source = panel.find_element(By.CSS_SELECTOR, "pre.source")
    assert source.is_displayed() and source.get_attribute("textContent") == store.source(debug.id)
    call = store.llm_call_of(debug.id)
    prompt = panel.find_element(By.CSS_SELECTOR, "pre.prompt")
    assert prompt.is_displayed() and prompt.get_attribute("textContent") == store.path(call["prompt_path"]).read_text()
    answer = panel.find_element(By.CSS_SELECTOR, "pre.answer").get_attribute("textContent")
    assert answer == store.path(call["response_path"]).read_text()
    assert "documents retrieved" in panel.text and "+# debugged" in panel.get_attribute("textContent")
    browser.find_element(By.CSS_SELECTOR, '#color-by button[data-by="status"]').click()  # recolour: by status
    wait(browser, lambda d: "compile_error" in d.find_element(By.ID, "fitness-steps").text)
    browser.find_element(By.CSS_SELECTOR, '#color-by button[data-by="kind"]').click()  # and back, by operator
    wait(browser, lambda d: "crossover" in d.find_element(By.ID, "fitness-steps").text)
    assert console_errors(browser) == []
    browser.execute_script("window.scrollTo(0, 0)")
    assert screenshot(browser, tmp_path, "report.png").stat().st_size > 50_000


class GatedEvaluator(CasesEvaluator):
    """Each evaluation waits for the test to let it through, so nodes are committed while the page is open."""

    def __init__(self, gate: threading.Semaphore):
        super().__init__()
        self.gate = gate

    def evaluate(self, *args, **kw):
        if not self.gate.acquire(timeout=60):
            raise TimeoutError("the test never let this evaluation through")
        return super().evaluate(*args, **kw)


def start_serve(runs: Path) -> tuple[subprocess.Popen, str, list[str], threading.Thread]:
    """`kernelevolve serve` on a free port, its URL read from what it says, its stderr lines as they come."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "kernelevolve", "serve", "--runs-dir", str(runs), "--port", "0", "--refresh", "0.3"],
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []

    def read() -> None:
        for line in proc.stderr:
            lines.append(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = next((re.search(r" at (http://\S+/) ", line) for line in lines if "serving" in line), None)
        if found:
            return proc, found.group(1), lines, reader
        assert proc.poll() is None, f"serve exited: {''.join(lines)}"
        time.sleep(0.05)
    proc.kill()
    raise AssertionError(f"serve did not start: {''.join(lines)}")


def test_serve_shows_new_nodes_of_a_running_search_without_a_reload(browser, tmp_path):
    seed = tmp_path / "seed.py"
    seed.write_text(kernel(1))
    store = Store(tmp_path / "runs")
    opened = session.open_run(store, RunSpec(PROBLEM, seed, trials=1), Limits(budget=20))
    gate = threading.Semaphore(0)
    driver = session.build_driver(opened, [GatedEvaluator(gate)], warm_start=False, confirm_best=False, max_inflight=1)
    search = threading.Thread(target=lambda: session.finish(opened, driver.run_search()), daemon=True)
    proc, url, said, reader = start_serve(store.runs_dir)  # started while the run has no node yet
    try:
        gate.release(2)
        search.start()
        browser.get(f"{url}run/{opened.run.id}")
        wait(browser, lambda d: graph_points(d) == 2)
        browser.execute_script("window.kept = 'the same page'")
        gate.release(3)  # three more nodes committed while the page is open
        wait(browser, lambda d: graph_points(d) == 5)
        assert browser.execute_script("return window.kept") == "the same page"  # redrawn, not reloaded
        assert browser.find_element(By.ID, "cards").text.startswith("status\nrunning")
        assert browser.find_element(By.ID, "live").text.startswith("live: updated")
        click_node(browser, 5)  # its record comes from the server on request
        shown = browser.find_element(By.CSS_SELECTOR, "#node pre.source").get_attribute("textContent")
        assert shown == store.source(store.node_by_step(opened.run.id, 5).id)
        screenshot(browser, tmp_path, "serve.png")
        gate.release(100)
        search.join(30)
        assert not search.is_alive()
        wait(browser, lambda d: d.find_element(By.ID, "cards").text.startswith("status\ndone"))
        assert graph_points(browser) == len(store.nodes(opened.run.id)) == 8  # every setting of TILE: exhausted
        assert browser.execute_script("return window.kept") == "the same page"
        browser.get(url)
        wait(browser, lambda d: opened.run.id in d.find_element(By.ID, "runs-table").text)
        assert "done" in browser.find_element(By.ID, "runs-table").text
        assert console_errors(browser) == []
    finally:
        gate.release(100)
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
        reader.join(5)
    assert proc.returncode == 0 and said[-1] == "stopped\n" and "Traceback" not in "".join(said)  # Ctrl-C: a clean stop
