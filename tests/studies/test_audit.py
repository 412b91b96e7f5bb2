"""``interp audit``: the data formats users bring (against hand-built files), the report (parsed as
HTML: every image embedded, every section that ran present, every summary number on the page), a
killed run resuming to the same summary, a real headless browser, and one-line errors."""

from __future__ import annotations

import base64
import csv
import io
import json
import os
import shutil
import signal
import subprocess
import time
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from interp.cli import main
from interp.datasets.formats import extract_choice, read_pope, read_vlmevalkit_tsv
from interp.errors import DataFormatError
from interp.studies.audit import show
from interp.testing import INTERP, OFFLINE_ENV, one_error_line

ROOT = Path(__file__).resolve().parents[2]


def png_base64(seed: int, size: int = 24) -> str:
    rng = np.random.default_rng(seed)
    image = Image.fromarray(rng.integers(0, 256, (size, size, 3), dtype=np.uint8), "RGB")
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def write_tsv(path: Path, rows: list[dict]) -> Path:
    cols = ["index", "image", "question", "hint", "A", "B", "C", "D", "answer", "category"]
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, cols, delimiter="\t")
        w.writeheader()
        for r in rows:
            w.writerow({c: r.get(c, "") for c in cols})
    return path


def test_vlmevalkit_tsv_rows_become_multiple_choice_samples(tmp_path):
    rows = [
        {
            "index": 7,
            "image": png_base64(0),
            "question": "What is shown?",
            "hint": "A drawing.",
            "A": "cat",
            "B": "dog",
            "C": "bird",
            "answer": "B",
            "category": "animals",
        },
        {"index": 8, "image": png_base64(1), "question": "Is it red?", "answer": "yes"},
    ]
    samples = read_vlmevalkit_tsv(write_tsv(tmp_path / "bench.tsv", rows))
    mc, open_q = samples
    assert mc.id == "7" and mc.answer == "B" and mc.meta["answer_text"] == "dog"
    assert mc.meta["options"] == {"A": "cat", "B": "dog", "C": "bird"}
    assert mc.meta["category"] == "animals"
    for line in ("Hint: A drawing.", "Question: What is shown?", "A. cat", "B. dog", "C. bird"):
        assert line in mc.question.splitlines()
    assert "D." not in mc.question
    raw = Image.open(io.BytesIO(base64.b64decode(rows[0]["image"]))).convert("RGB")
    assert np.array_equal(np.asarray(mc.load_images()[0]), np.asarray(raw))
    assert open_q.question == "Is it red?" and open_q.answer == "yes"


@pytest.mark.parametrize(
    "row, message",
    [
        ({"image": "not-base64!", "question": "q"}, r"bench\.tsv:3: the 'image' column"),
        ({"image": png_base64(2), "question": ""}, r"bench\.tsv:3: empty 'question'"),
        (
            {"image": png_base64(2), "question": "q", "A": "x", "B": "y", "answer": "C"},
            r"bench\.tsv:3: answer 'C' is not one of the options",
        ),
    ],
)
def test_malformed_tsv_rows_name_their_row(tmp_path, row, message):
    good = {"image": png_base64(0), "question": "fine"}
    with pytest.raises(DataFormatError, match=message):
        read_vlmevalkit_tsv(write_tsv(tmp_path / "bench.tsv", [good, row]))


@pytest.mark.parametrize(
    "answer, expected",
    [
        ("B", "B"),
        ("(B)", "B"),
        ("B. dog", "B"),
        ("b", None),
        ("It is a dog.", "B"),
        ("a cat or a dog", None),
        ("Z", None),
    ],
)
def test_choices_are_read_from_letters_or_option_text(answer, expected):
    assert extract_choice(answer, {"A": "cat", "B": "dog", "C": "bird"}) == expected


def test_pope_files_take_the_setting_from_their_name(tmp_path):
    (tmp_path / "img").mkdir()
    Image.new("RGB", (16, 16)).save(tmp_path / "img" / "a.jpg")
    rows = [
        {
            "question_id": 1,
            "image": "a.jpg",
            "text": "Is there a dog in the image?",
            "label": "yes",
        },
        {"question_id": 2, "image": "a.jpg", "text": "Is there a cat in the image?", "label": "no"},
    ]
    path = tmp_path / "coco_pope_adversarial.json"
    path.write_text("\n".join(json.dumps(r) for r in rows))
    samples = read_pope(path, tmp_path / "img")
    assert [s.answer for s in samples] == ["yes", "no"]
    assert [s.meta["pope_negative"] for s in samples] == [None, "adversarial"]
    assert samples[1].question == "Is there a cat in the image?"
    path.write_text(json.dumps(rows[0]) + "\n" + json.dumps({**rows[1], "label": "maybe"}))
    with pytest.raises(DataFormatError, match=r"adversarial\.json:2: label must be 'yes' or 'no'"):
        read_pope(path, tmp_path / "img")


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.images: list[str] = []
        self.sections: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "img":
            self.images.append(a.get("src", ""))
        if tag == "section":
            self.sections.append(a.get("id", ""))

    def handle_data(self, data):
        self.text.append(data)


def _numbers(tree):
    if isinstance(tree, dict):
        for v in tree.values():
            yield from _numbers(v)
    elif isinstance(tree, (int, float)) and not isinstance(tree, bool):
        yield tree


@pytest.fixture(scope="module")
def audited(tmp_path_factory):
    out = tmp_path_factory.mktemp("audit") / "run"
    args = [
        "audit",
        "--model",
        "demo",
        "--data",
        "demo",
        "--n",
        "36",
        "--seeds",
        "0",
        "--out",
        str(out),
        "--no-progress",
    ]
    assert main(args) == 0
    return out


def test_the_report_embeds_everything_and_shows_every_number(audited):
    summary = json.loads((audited / "summary.json").read_text())
    html = (audited / "report.html").read_text()
    page = _Page()
    page.feed(html)
    page.close()
    ran = [k for k, v in summary["studies"].items() if v["ran"]]
    assert sorted(ran) == [
        "ablation",
        "attribute",
        "coe",
        "conflict",
        "decoding",
        "drives",
        "flow",
        "recall",
    ]
    assert page.sections == [
        "coe",
        "flow",
        "recall",
        "drives",
        "ablation",
        "decoding",
        "conflict",
        "attribute",
    ]
    assert page.images and all(src.startswith("data:image/png;base64,") for src in page.images)
    for src in page.images:  # each embedded figure decodes as a PNG
        Image.open(io.BytesIO(base64.b64decode(src.split(",", 1)[1]))).verify()
    text = " ".join(page.text)
    for value in _numbers(summary["studies"]):
        assert show(value) in text, value
    # the coe section names the VIP rule it used (the default) and marks it in its rule table
    assert "rule 'changepoint'" in text and "Eq. 9, the paper's rule," in text
    assert "The VIP under each automatic rule (used here: 'changepoint'" in text
    assert "http://" not in html and "https://" not in html  # nothing fetched from a network
    assert summary["fingerprints"]["model"] and summary["versions"]["vlm-interp"]
    assert summary["command"].startswith("interp audit --model demo --data demo")


def test_every_missing_number_has_its_reason_beside_it(audited, tmp_path, capsys):
    """A study that ran with a number it could not give (None: the terminal prints ``n/a``)
    says why in its reason, printed on the next line: in the audit above, and in the conflict
    study at ``make demo``'s size, whose probe is above chance at no layer (its first such
    layer is None)."""
    from interp.studies.audit.cli import terminal_lines

    out = tmp_path / "conflict"
    args = ["audit", "--model", "demo", "--data", "demo", "--studies", "conflict"]
    assert main([*args, "--out", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out.splitlines()
    conflict = json.loads((out / "summary.json").read_text())["studies"]["conflict"]
    assert conflict["numbers"]["probe_above_chance_from_layer"] is None
    at = next(i for i, line in enumerate(printed) if line.startswith("conflict: "))
    assert printed[at + 1].startswith("  note: ") and "no layer" in printed[at + 1]
    for summary in (audited / "summary.json", out / "summary.json"):
        studies = json.loads(summary.read_text())["studies"]
        for key, part in studies.items():
            if part["ran"] and None in part["numbers"].values():
                assert part.get("reason"), (key, part["numbers"])
        lines = terminal_lines(studies)
        for i, line in enumerate(lines):
            if " n/a" in line:
                assert lines[i + 1].startswith("  note: "), line


def test_a_study_without_its_data_is_skipped_with_a_reason(tmp_path):
    out = tmp_path / "run"
    data = tmp_path / "items.jsonl"
    from interp.datasets import demo_world
    from interp.samples import write_jsonl

    write_jsonl(demo_world("test", n=8, qtypes=["color"]), data)
    assert (
        main(["audit", "--model", "demo", "--data", str(data), "--out", str(out), "--no-progress"])
        == 0
    )
    summary = json.loads((out / "summary.json").read_text())
    assert summary["studies"]["coe"]["ran"]
    assert not summary["studies"]["decoding"]["ran"]
    assert "yes/no" in summary["studies"]["decoding"]["reason"]
    assert "Skipped" in (out / "report.html").read_text()


@pytest.mark.slow
def test_a_killed_audit_resumes_to_the_same_summary(tmp_path):
    args = [
        "audit",
        "--model",
        "demo",
        "--data",
        "demo",
        "--n",
        "24",
        "--studies",
        "coe,conflict",
        "--no-progress",
    ]
    clean = tmp_path / "clean"
    ref = subprocess.run(
        [*INTERP, *args, "--out", str(clean)],
        env=OFFLINE_ENV,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert ref.returncode == 0, ref.stderr
    out = tmp_path / "killed"
    proc = subprocess.Popen(
        [*INTERP, *args, "--out", str(out)],
        env=OFFLINE_ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 300
    while time.time() < deadline:  # kill once the first study has stored something
        if list((out / "store").rglob("*.safetensors")):
            break
        time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (out / "summary.json").exists()
    again = subprocess.run(
        [*INTERP, *args, "--out", str(out)],
        env=OFFLINE_ENV,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert again.returncode == 0, again.stderr
    a = json.loads((clean / "summary.json").read_text())
    b = json.loads((out / "summary.json").read_text())
    a["command"] = b["command"] = ""  # the output folder differs
    assert a == b


@pytest.mark.skipif(shutil.which("chromium") is None, reason="Chromium is not installed")
def test_the_report_renders_in_a_headless_browser(audited, tmp_path):
    shot = tmp_path / "report.png"
    run = subprocess.run(
        [
            "chromium",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=1200,1600",
            f"--screenshot={shot}",
            (audited / "report.html").as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert shot.stat().st_size > 10_000
    image = np.asarray(Image.open(shot).convert("L"))
    assert image.std() > 5  # not a blank page
    dom = subprocess.run(
        [
            "chromium",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--dump-dom",
            (audited / "report.html").as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    assert dom.returncode == 0 and 'id="conflict"' in dom.stdout


OVERFLOW_PROBE = """<script>
window.addEventListener("load", () => {
  const page = document.documentElement;
  const boxes = [...document.querySelectorAll(".table-box")];
  document.body.setAttribute("data-overflow", JSON.stringify({
    scroll: page.scrollWidth, client: page.clientWidth,
    scrolling_boxes: boxes.filter(b => b.scrollWidth > b.clientWidth).length}));
});
</script></body>"""


def _layout(page: Path, width: int, home: Path) -> dict:
    """The page's layout widths as headless Chromium lays it out ``width`` px wide."""
    import re

    dom = subprocess.run(
        [
            "chromium",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            f"--window-size={width},900",
            "--virtual-time-budget=5000",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "HOME": str(home)},
    )
    assert dom.returncode == 0, dom.stderr[-2000:]
    found = re.search(r'data-overflow="([^"]+)"', dom.stdout)
    assert found, dom.stdout[-2000:]
    return json.loads(found.group(1).replace("&quot;", '"'))


@pytest.mark.skipif(shutil.which("chromium") is None, reason="Chromium is not installed")
def test_the_report_does_not_overflow_the_page_at_1280px(audited, tmp_path):
    """Laid out by a real browser: no horizontal page scrolling at 1280 px, nor at 800 px, where
    the widest tables (the decoding tables; the S_PV table is written in value [low, high] cells
    since #46) scroll inside their own box."""
    page = tmp_path / "report.html"
    page.write_text((audited / "report.html").read_text().replace("</body>", OVERFLOW_PROBE))
    wide = _layout(page, 1280, tmp_path)
    assert wide["scroll"] <= wide["client"] <= 1280, wide
    narrow = _layout(page, 800, tmp_path)
    assert narrow["scroll"] <= narrow["client"] <= 800, narrow
    assert narrow["scrolling_boxes"] >= 1, narrow  # a table wider than the page is boxed


def test_an_audit_of_one_question_kind_still_writes_its_report(tmp_path):
    """Twelve coloured squares with one question: removing the image changes every answer, so
    the chain of embedding stops (one group is empty); next to a few yes/no questions the
    decoding study runs. The report and summary.json are written, the stopped study is a
    section saying why in words, and the exit status is 0."""
    from interp.datasets import demo_world
    from interp.samples import write_jsonl

    colours = {"red": (220, 30, 30), "green": (30, 180, 30), "blue": (30, 30, 220)}
    rows = []
    for i in range(12):
        name = list(colours)[i % 3]
        Image.new("RGB", (32, 32), colours[name]).save(tmp_path / f"sq{i}.png")
        rows.append(
            {"id": f"sq{i}", "image": f"sq{i}.png", "question": "what color is the square ?",
             "answer": name}
        )  # fmt: skip
    yes_no = write_jsonl(demo_world("test", n=8, seed=1, qtypes=["exist"]), tmp_path / "e.jsonl")
    data = tmp_path / "items.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows) + yes_no.read_text())
    out = tmp_path / "run"
    args = ["audit", "--model", "demo", "--data", str(data), "--out", str(out), "--no-progress"]
    assert main([*args, "--studies", "coe,decoding,recall"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    studies = summary["studies"]
    assert studies["decoding"]["status"] == "ran"
    assert studies["coe"]["status"] == "failed" and studies["coe"]["n"] == 12
    assert "removing the image changed all 12 answers" in studies["coe"]["reason"]
    assert "split=" not in studies["coe"]["reason"]  # no Python argument in the user's words
    assert (
        studies["recall"]["status"] == "skipped"
        and "visual-reference" in studies["recall"]["reason"]
    )
    html = (out / "report.html").read_text()
    page = _Page()
    page.feed(html)
    assert page.sections == ["decoding", "not-run"]
    assert "removing the image changed all 12 answers" in html


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--studies", "coe,nope"], r"--studies: unknown \['nope'\]"),
        (["--seeds", "x"], "--seeds takes comma-separated integers"),
        (["--images", "somewhere"], "--images is for POPE question files"),
    ],
)
def test_bad_options_are_one_line_before_the_model_loads(
    extra,
    message,
    tmp_path,
    capsys,
    no_model,
):
    out = tmp_path / "out"
    data = tmp_path / "items.jsonl"
    data.write_text(json.dumps({"question": "q", "answer": "a"}) + "\n")
    code = main(["audit", "--model", "demo", "--data", str(data), "--out", str(out), *extra])
    assert code == 2
    import re

    assert re.search(message, one_error_line(capsys.readouterr().err))
    assert not out.exists()


def test_data_no_study_can_use_and_malformed_rows_are_one_line(tmp_path, capsys, no_model):
    data = tmp_path / "items.jsonl"
    data.write_text(json.dumps({"question": "q", "answer": "a"}) + "\n")
    assert (
        main(["audit", "--model", "demo", "--data", str(data), "--out", str(tmp_path / "o")]) == 2
    )
    assert "no study can run" in one_error_line(capsys.readouterr().err)
    tsv = write_tsv(
        tmp_path / "b.tsv",
        [{"image": png_base64(0), "question": "q"}, {"image": "???", "question": "q"}],
    )
    assert main(["audit", "--model", "demo", "--data", str(tsv), "--out", str(tmp_path / "o")]) == 2
    assert "b.tsv:3" in one_error_line(capsys.readouterr().err)
    assert not (tmp_path / "o").exists()
