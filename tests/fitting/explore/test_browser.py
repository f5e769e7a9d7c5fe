"""The explorer in a real browser: Debian's chromium driven through chromium-driver (Selenium),
offline. Starts the server, opens each tab, moves a slider, checks that frames keep arriving, the
step counter advances and the structure label updates, that bad input shows its message in the page,
and that the console shows no error. Saves the screenshots docs/explore.md uses.

Run with ``python -m pytest -m browser tests/fitting/explore/test_browser.py`` (needs
``pip install '.[explore,browser,test]'`` and ``apt-get install chromium chromium-driver``);
``EMBDYN_SCREENSHOTS=folder`` keeps the screenshots there.
"""

import os
import shutil
import threading
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

CHROMIUM = os.environ.get("EMBDYN_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = os.environ.get("EMBDYN_CHROMEDRIVER") or shutil.which("chromedriver") or "/usr/bin/chromedriver"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    import particles as pt

    folder = tmp_path_factory.mktemp("browser")
    pt.preset("circles").replace(steps=3000, record_every=30).run(seed=5).save(folder / "circles_seed5.npz")
    table = pt.sweep({"lam": [0.0, 3.0], "wd": [0.1, 0.3]}, seeds=2, base=pt.preset("circles").replace(p=7, steps=300))
    table.to_csv(folder / "sweep.csv")
    (folder / "damaged.npz").write_bytes((folder / "circles_seed5.npz").read_bytes()[:300])
    return folder


@pytest.fixture(scope="module")
def server(files):
    import uvicorn

    from fitting.explore import make_app

    root = Path(__file__).parents[3]
    survival = root / "fitting" / "survival" / "data" / "survival_mlp_seed0.npz"  # shipped: signals every step, d = 128
    axial = root / "docs" / "figures" / "phase_axial" / "sweep.csv"  # a committed 6 x 5 sweep, 20 seeds a cell
    app = make_app([files / "circles_seed5.npz", survival], [axial, files / "sweep.csv"])
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", ws="websockets-sansio",
                            lifespan="off")
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.time() + 30
    while not srv.started:
        assert time.time() < deadline and thread.is_alive(), "the server did not start"
        time.sleep(0.05)
    port = srv.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}/"
    srv.should_exit = True
    thread.join(10)


@pytest.fixture(scope="module")
def browser():
    os.environ.setdefault("SE_OFFLINE", "true")  # Selenium Manager must not look for a driver online
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1500,1000",
                "--disable-gpu", "--force-device-scale-factor=1"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    folder = Path(os.environ.get("EMBDYN_SCREENSHOTS") or tmp_path_factory.mktemp("shots"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def wait_for(predicate, what, timeout=30.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def text(driver, element_id):
    return driver.find_element("id", element_id).text


def severe(driver):
    return [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def wait_for_version(driver, element_id, version, what):
    """Until the frame counter ``element_id`` carries a control version above ``version``."""
    wait_for(lambda: int(driver.find_element("id", element_id).get_attribute("data-version")) > version, what)


def toggle_and_shoot(driver, checkbox_id, path, settle):
    """Tick a view's checkbox, let frames draw, check the console is clean, save the screenshot."""
    driver.find_element("id", checkbox_id).click()
    time.sleep(settle)
    assert not severe(driver), severe(driver)
    driver.save_screenshot(str(path))


def test_explorer_in_chromium(files, server, browser, shots):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select

    d = browser
    d.get(server)
    wait_for(lambda: d.find_element("tag name", "body").get_attribute("data-ready") == "1", "the page to load")
    wait_for(lambda: d.find_element("tag name", "body").get_attribute("data-session"), "the live session")

    # runs were given on the command line: the page opens on the Run tab (issue 50), the Live tab a click away
    assert d.find_element("tag name", "body").get_attribute("data-tab") == "run"
    d.find_element("id", "tab-button-live").click()

    # --- Live: a circle forms while frames keep arriving ---------------------------------------------------
    Select(d.find_element("id", "ctl-preset")).select_by_visible_text("circles")
    wait_for(lambda: d.find_element("id", "ctl-lam").get_attribute("value") == "3", "the circles preset")
    box = d.find_element("id", "ctl-steps_per_frame")
    box.send_keys(Keys.CONTROL, "a")
    box.send_keys("25", Keys.ENTER)
    wait_for(lambda: d.find_element("id", "ctl-steps_per_frame").get_attribute("value") == "25", "steps per frame")
    d.find_element("id", "btn-play").click()
    wait_for(lambda: int(text(d, "live-step") or 0) > 0, "a first frame")
    frames0, step0 = int(text(d, "live-frames")), int(text(d, "live-step"))
    time.sleep(2.0)
    frames1, step1 = int(text(d, "live-frames")), int(text(d, "live-step"))
    assert frames1 - frames0 >= 5, f"only {frames1 - frames0} frames in two seconds"  # rates: the benchmark
    assert step1 > step0
    wait_for(lambda: text(d, "live-structure") == "circle", "the structure label to reach 'circle'", 60)
    # back to the seed's initial state: the label follows the frames (the circle forms again)
    d.find_element("id", "btn-pause").click()
    d.find_element("id", "btn-reset").click()
    wait_for(lambda: text(d, "live-step") == "0", "the reset frame")
    start_label = text(d, "live-structure")
    assert start_label not in ("circle", "–", ""), start_label
    d.find_element("id", "btn-play").click()
    wait_for(lambda: text(d, "live-structure") == "circle", "the circle to form again", 60)
    assert int(text(d, "live-step")) > 0 and int(text(d, "live-fps")) > 0

    # move a slider with the mouse: the value reaches the server and the frames carry the new version
    version = int(d.find_element("id", "live-step").get_attribute("data-version"))
    slider = d.find_element("id", "slider-lam")
    ActionChains(d).click_and_hold(slider).move_by_offset(-slider.size["width"] // 3, 0).release().perform()
    wait_for(lambda: float(d.find_element("id", "ctl-lam").get_attribute("value")) != 3.0, "lam to change")
    wait_for_version(d, "live-step", version, "a frame under the new lam")
    toggle_and_shoot(d, "show-pairs", shots / "explore_live.png", 0.5)

    # --- Run: scrub, fit a window ------------------------------------------------------------------------
    d.find_element("id", "tab-button-run").click()
    wait_for(lambda: d.find_element("tag name", "body").get_attribute("data-run-paint"), "the run's first paint")
    label = text(d, "run-step-label")
    assert label == "step 3000"
    step_slider = d.find_element("id", "run-step")
    step_slider.click()
    for _ in range(5):
        step_slider.send_keys(Keys.ARROW_LEFT)
    wait_for(lambda: text(d, "run-step-label") != label, "the scrubbed step")
    ActionChains(d).click_and_hold(step_slider).move_by_offset(-step_slider.size["width"] // 4, 0).release().perform()
    wait_for(lambda: text(d, "run-step-label") not in (label, "step 2995"), "a dragged step")
    wait_for(lambda: "computing" not in (d.execute_script("return state.run.metricsNote") or ""), "the metrics")
    assert not severe(d), severe(d)
    Select(d.find_element("id", "run-select")).select_by_index(1)  # the shipped survival run, d = 128
    wait_for(lambda: "survival" in text(d, "run-info"), "the survival run")
    wait_for(lambda: "principal component" in (d.execute_script("return state.runView && state.runView.axisNames[0]")
                                               or ""), "the PCA view")
    for element_id, value in (("fit-start", "0"), ("fit-stop", "1000")):
        box = d.find_element("id", element_id)
        box.send_keys(Keys.CONTROL, "a")
        box.send_keys(value)
    d.find_element("id", "btn-fit").click()
    wait_for(lambda: "LinearODE" in text(d, "fit-result"), "the fit")
    assert "steps 0-1000" in text(d, "fit-result")
    wait_for(lambda: "computing" not in (d.execute_script("return state.run.metricsNote") or ""), "the metrics", 60)
    step_slider.send_keys(Keys.HOME)
    for _ in range(3):
        step_slider.send_keys(Keys.PAGE_UP)
    wait_for(lambda: text(d, "run-step-label") not in ("step 3000", ""), "a step inside the run")
    assert not severe(d), severe(d)
    d.save_screenshot(str(shots / "explore_run.png"))

    # --- Phase: a cell's runs, and its setting live ---------------------------------------------------------
    d.find_element("id", "tab-button-phase").click()
    cells = wait_for(lambda: d.find_elements("css selector", "#phase-grid td.cell[data-x]"), "the phase grid")
    target = [c for c in cells if c.get_attribute("data-x") == "3" and c.get_attribute("data-y") == "0.3"][0]
    target.click()
    wait_for(lambda: "lam = 3, wd = 0.3" in text(d, "phase-cell"), "the cell's runs")
    assert len(d.find_elements("css selector", "#phase-cell table tr")) == 21  # header and 20 seeds
    assert not severe(d), severe(d)
    d.save_screenshot(str(shots / "explore_phase.png"))
    d.find_element("id", "btn-run-live").click()
    wait_for(lambda: d.find_element("tag name", "body").get_attribute("data-tab") == "live", "the Live tab")
    wait_for(lambda: d.find_element("id", "ctl-wd").get_attribute("value") == "0.3", "the cell's wd live")
    assert d.find_element("id", "ctl-lam").get_attribute("value") == "3"

    # --- bad input: the server's message in the page, the run goes on -------------------------------------
    box = d.find_element("id", "ctl-dt")
    box.send_keys(Keys.CONTROL, "a")
    box.send_keys("fast", Keys.ENTER)
    wait_for(lambda: "dt must be" in text(d, "error"), "the error for dt")
    assert "(0, 0.5]" in text(d, "error")
    wait_for(lambda: d.find_element("id", "ctl-dt").get_attribute("value") != "fast", "dt back to its value")
    before = int(text(d, "live-frames"))
    wait_for(lambda: int(text(d, "live-frames")) > before + 5, "frames after the bad value")
    d.find_element("id", "tab-button-run").click()
    d.find_element("id", "run-file").send_keys(str(files / "damaged.npz"))
    wait_for(lambda: "trajectory field" in text(d, "error") or "npz" in text(d, "error"), "the file's error")
    logs = severe(d)
    assert all("422" in e["message"] for e in logs), logs  # only the two refused requests



def test_network_tab_in_chromium(server, browser, shots):
    """The Network tab (issue 52): the network trains on the server, frames arrive, the accuracy rises, a
    weight-decay change reaches the run, the particle panel starts from the network's embedding under the
    preset's law and then the fitted one and compares the structures, and the console stays clean."""
    if os.environ.get("EMBDYN_REQUIRE_TORCH"):  # CI's browser step: never skip
        import torch  # noqa: F401
    else:
        pytest.importorskip("torch")
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select

    d = browser
    d.get(server)
    wait_for(lambda: d.find_element("tag name", "body").get_attribute("data-ready") == "1", "the page to load")
    d.find_element("id", "tab-button-network").click()
    wait_for(lambda: d.find_element("tag name", "body").get_attribute("data-network-session"), "the network session")
    d.find_element("id", "net-play").click()
    wait_for(lambda: int(text(d, "net-step-count") or 0) > 0, "a first training frame")
    first_acc = float(text(d, "net-train-acc"))
    frames0 = int(d.execute_script("return net.frames"))
    time.sleep(2.0)
    frames1 = int(d.execute_script("return net.frames"))
    assert frames1 - frames0 >= 5, f"only {frames1 - frames0} frames in two seconds"  # rates: the benchmark
    wait_for(lambda: float(text(d, "net-train-acc")) > max(first_acc, 0.5), "the training accuracy to rise", 60)
    version = int(d.find_element("id", "net-step-count").get_attribute("data-version"))
    box = d.find_element("id", "net-weight_decay")
    box.send_keys(Keys.CONTROL, "a")
    box.send_keys("1", Keys.ENTER)
    wait_for_version(d, "net-step-count", version, "a frame under the new weight decay")
    toggle_and_shoot(d, "net-show-pairs", shots / "explore_network.png", 1.0)
    # the particle panel: from the network's embedding under the preset's law, then under the fitted one
    body = d.find_element("tag name", "body")
    d.find_element("id", "hand-start").click()
    wait_for(lambda: (body.get_attribute("data-handover") or "").startswith("preset:"), "the preset hand-over")
    wait_for(lambda: text(d, "part-origin").startswith("constant-attention step"), "a particle frame from the network")
    wait_for(lambda: int(text(d, "part-step") or 0) > 0, "the particle panel to run")
    Select(d.find_element("id", "hand-law")).select_by_value("fitted")
    d.find_element("id", "hand-start").click()
    wait_for(lambda: (body.get_attribute("data-handover") or "").startswith("fitted:"), "the fitted hand-over", 60)
    summary = text(d, "hand-law-summary")
    assert "R²" in summary and "chance" in summary, summary
    wait_for(lambda: body.get_attribute("data-agree") in ("yes", "no"), "the structures compared")
    assert text(d, "hand-agree").startswith("agree" if body.get_attribute("data-agree") == "yes" else "differ")
    d.set_window_size(1500, 1900)
    try:
        time.sleep(1.0)
        assert not severe(d), severe(d)
        d.save_screenshot(str(shots / "explore_handover.png"))
    finally:
        d.set_window_size(1500, 1000)
    d.find_element("id", "part-pause").click()
    # another model is another session, trained from its own defaults
    session = body.get_attribute("data-network-session")
    Select(d.find_element("id", "net-model")).select_by_visible_text("survival-mlp")
    wait_for(lambda: body.get_attribute("data-network-model") == "survival-mlp"
             and body.get_attribute("data-network-session") != session, "the survival MLP's session")
    assert d.find_element("id", "net-hidden").get_attribute("value") == "100"
    d.find_element("id", "net-play").click()
    wait_for(lambda: int(text(d, "net-step-count") or 0) > 0, "a survival-MLP training frame")
    assert not severe(d), severe(d)
    d.find_element("id", "net-pause").click()
