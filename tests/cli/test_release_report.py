"""The release's picture and report.html (issue 18), without a browser (see tests/cli/test_release_report_browser.py).

* bounds are printed rounded up (``format_upper``: never below the value, at most one unit in the
  last shown digit above it);
* report.html is self-contained (every src/href a data: URI or an in-page anchor, no script, no
  stylesheet link, no CSS url(), a Content-Security-Policy of default-src 'none'), escapes every
  name it shows, holds no local path and no dataset label, states the certificate's epsilon, and
  its ``privgp account`` command recomputes that epsilon bit for bit;
* ``privgp verify`` accepts a release's certificate.json and refuses tampered ones;
* the picture: 2-D colour field / vote map / 1-D lines, for any mechanism that supplies fields;
* every mechanism of ``privgp release`` provides what the shared picture, report and verify use.
"""
from __future__ import annotations

import base64
import json
import math
import re
import shlex
import struct
from html import unescape
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from privgp.cli.main import main
from privgp.cli.release_figure import PictureContext, ReleasedField, ResponseDisplay, colour_span, draw, format_upper
from privgp.mechanisms.release import ResponseMap
from privgp.models.domain import Box

# -- printing bounds ---------------------------------------------------------------------------

@given(st.floats(min_value=1e-12, max_value=1e12, allow_nan=False), st.integers(min_value=1, max_value=6))
def test_format_upper_never_prints_below_the_bound_and_is_tight(x, digits):
    text = format_upper(x, digits)
    shown = float(text)
    assert shown >= x
    step = 10.0 ** (math.floor(math.log10(x)) - digits + 1)
    assert shown - x <= step * (1 + 1e-9)
    assert len(text.replace(".", "").replace("-", "").lstrip("0").split("e")[0]) <= digits


@given(st.floats(min_value=1e-12, max_value=1e12, allow_nan=False), st.integers(min_value=1, max_value=6))
def test_format_lower_never_prints_above_what_remains_and_is_tight(x, digits):
    """Red team round 12: the remaining epsilon was printed with .4g, rounded to nearest (1.99996 left showed 2)."""
    from privgp.formatting import format_lower

    shown = float(format_lower(x, digits))
    assert shown <= x
    assert x - shown <= 10.0 ** (math.floor(math.log10(x)) - digits + 1) * (1 + 1e-9)


def test_format_upper_examples_and_refusals():
    assert format_upper(4.999963863115479) == "5"
    assert format_upper(2.1234) == "2.13"
    assert format_upper(0.0027751681283571554) == "0.00278"
    assert format_upper(7.642, 4) == "7.642" and format_upper(7.6421, 4) == "7.643"
    assert format_upper(math.inf) == "inf" and format_upper(0.0) == "0"
    with pytest.raises(ValueError):
        format_upper(math.nan)


# -- report.html ------------------------------------------------------------------------------

class Refs(HTMLParser):
    """Every tag and every attribute that makes a browser fetch or follow something."""

    def __init__(self):
        super().__init__()
        self.tags: list[str] = []
        self.refs: list[tuple[str, str, str]] = []
        self.csp: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        a = dict(attrs)
        for name in ("src", "href", "srcset", "action", "poster", "data", "background", "formaction"):
            if name in a:
                self.refs.append((tag, name, a[name] or ""))
        if tag == "meta" and (a.get("http-equiv") or "").lower() == "content-security-policy":
            self.csp.append(a.get("content") or "")


def release(tmp_path: Path, capsys, *args) -> Path:
    out = tmp_path / "rel"
    if "--mechanism" not in args:   # these tests are of the posterior-sample report (auto: tests/cli/test_release_auto.py)
        args = ("--mechanism", "posterior-sample", *args)
    code = main(["release", "--out", str(out), "--ledger", str(tmp_path / "ledger.sqlite"), "--seed", "5",
                 "--allow-noisy", *args])
    assert code == 0, capsys.readouterr().err
    capsys.readouterr()
    return out


def check_self_contained(text: str) -> Refs:
    p = Refs()
    p.feed(text)
    assert "script" not in p.tags and "link" not in p.tags and "iframe" not in p.tags and "object" not in p.tags
    for tag, name, val in p.refs:
        assert val.startswith("data:image/png;base64,") or val.startswith("#"), (tag, name, val[:60])
    style = text[text.index("<style>"): text.index("</style>")]
    assert "url(" not in style and "@import" not in style and "@font-face" not in style
    assert p.csp and "default-src 'none'" in p.csp[0] and "img-src data:" in p.csp[0]
    assert re.search(r'<meta name="viewport" content="width=device-width, initial-scale=1">', text)
    return p


def test_default_report_is_self_contained_public_and_states_the_certificate(tmp_path, capsys):
    out = release(tmp_path, capsys, "--grid", "31")
    text = (out / "report.html").read_text(encoding="utf-8")
    doc = json.loads((out / "certificate.json").read_text())
    cert = doc["certificate"]
    p = check_self_contained(text)
    imgs = [v for tag, name, v in p.refs if tag == "img"]
    assert len(imgs) == 1
    png = base64.b64decode(imgs[0].split(",", 1)[1])
    assert png == (out / "excursion.png").read_bytes()
    w, h = struct.unpack(">II", png[16:24])
    assert re.search(rf'<img id="release-figure" src="data:[^"]+" width="{w}" height="{h}"', text)
    # the certificate's numbers: rounded up for reading, exact in the statement and the data attribute
    assert f'data-epsilon="{cert["epsilon"]!r}">{format_upper(cert["epsilon"])}<' in text
    assert f'data-delta="{cert["delta"]!r}">{format_upper(cert["delta"])}<' in text
    assert f"\u03b5 = {cert['epsilon']!r}" in text
    # what the issue asks the page to say
    for needle in ("211 house sales", "n = 211", "What the guarantee means", "The exact statement",
                   "Lemma B.1", "Assumptions", "How the settings were chosen", "calibrated: the smallest r",
                   "Privacy budget of this data set", "privgp verify certificate.json", "privgp account --n 211",
                   "Demonstration only", "sale price ($1,000)", "$40k",
                   # format 7: the forecast's assumption and what it misses (audit 18c: clustered records)
                   "the records spread over the domain", "Where the private records cluster, or more or less of the "
                   "domain lies above the threshold than in the simulated fields, the map can be better or worse "
                   "than forecast"):
        assert needle in unescape(text), needle
    for a in cert["assumptions"]:
        assert a in unescape(text)
    # publishable: no local path, no ledger location
    for secret in (str(tmp_path), "ledger.sqlite", "/root", "/home"):
        assert secret not in text
    assert doc["outputs"][-1] == "report.html"


def test_the_reports_account_command_recomputes_the_certified_epsilon_exactly(tmp_path, capsys):
    out = release(tmp_path, capsys, "--grid", "31", "--epsilon", "3", "--L", "2")
    text = (out / "report.html").read_text()
    cmd = shlex.split(unescape(re.search(r'<code id="account-command">(.*?)</code>', text).group(1)))
    assert cmd[:2] == ["privgp", "account"]
    assert main([*cmd[1:], "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    cert = json.loads((out / "certificate.json").read_text())["certificate"]
    assert got["epsilon"] == cert["epsilon"] and got["delta"] == cert["delta"]
    assert got["event"] == cert["event"]
    # red team 15: the page quoted the line rounded to nearest (below the certified epsilon, and not what the
    # command prints); it quotes the command's own first line, rounded up
    assert main(cmd[1:]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    quoted = re.search(r"Its first line starts with <code>(\(.*?\)-DP)</code>", unescape(text)).group(1)
    assert first.startswith(quoted) and float(quoted[1:].split(",")[0]) >= cert["epsilon"]


def test_names_are_escaped_and_no_dataset_label_or_path_is_published(tmp_path, capsys):
    rng = np.random.default_rng(1)
    csv = tmp_path / "secret-name.csv"
    nasty = 'no2<script>alert("x")</script>&amp;'
    rows = "\n".join(f"{a!r},{b!r},{c!r}" for a, b, c in zip(rng.uniform(0, 4, 30).tolist(), rng.uniform(0, 2, 30).tolist(),
                                                            rng.normal(size=30).tolist()))
    csv.write_text(f'lon,lat,"{nasty.replace(chr(34), chr(34) * 2)}"\n{rows}\n')
    out = release(tmp_path, capsys, "--data", str(csv), "--x-col", "lon", "--y-col", "lat", "--response-col", nasty,
                  "--box", "0", "4", "0", "2", "--threshold", "0.5", "--clip", "2", "--grid", "21",
                  "--dataset-id", "hospital-ward-7 <private label>")
    text = (out / "report.html").read_text()
    check_self_contained(text)
    assert "<script" not in text and nasty not in text
    assert "no2&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;amp;" in text
    assert "secret-name" not in text and "hospital-ward-7" not in text and str(tmp_path) not in text
    assert "30 private records of a CSV file supplied by the data holder" in text


def test_no_report_writes_none_and_lists_none(tmp_path, capsys):
    out = release(tmp_path, capsys, "--grid", "21", "--no-report")
    assert not (out / "report.html").exists()
    assert "report.html" not in json.loads((out / "certificate.json").read_text())["outputs"]


class Scripts(HTMLParser):
    """The <script> blocks of a page: (attributes, text)."""

    def __init__(self):
        super().__init__()
        self.blocks: list[tuple[dict, str]] = []
        self._open: dict | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "script":
            self._open = dict(attrs)
            self.blocks.append((self._open, ""))

    def handle_data(self, data):
        if self._open is not None:
            self.blocks[-1] = (self._open, self.blocks[-1][1] + data)

    def handle_endtag(self, tag):
        if tag == "script":
            self._open = None


def test_the_opt_in_map_is_one_script_pinned_by_the_csp_and_the_released_values(tmp_path, capsys):
    """--map: the page holds the released values (paths.npz to six significant digits) in a JSON block and
    ONE executable inline script, whose sha256 is the only script source the CSP allows; no src, no link;
    names inside the JSON cannot close the block. Without --map there is no script (above); with
    --no-report it is refused, and on 1-D data (no plane to explore; it was silently left out)."""
    import hashlib

    rng = np.random.default_rng(1)
    csv = tmp_path / "d.csv"
    nasty = 'p</script><script>alert(1)</script>&'
    rows = "\n".join(f"{a!r},{b!r},{c!r}" for a, b, c in zip(rng.uniform(0, 4, 30).tolist(), rng.uniform(0, 2, 30).tolist(),
                                                             rng.normal(size=30).tolist()))
    csv.write_text(f'lon,lat,"{nasty}"\n{rows}\n')
    out = release(tmp_path, capsys, "--data", str(csv), "--x-col", "lon", "--y-col", "lat", "--response-col", nasty,
                  "--box", "0", "4", "0", "2", "--threshold", "0.5", "--clip", "2", "--grid", "21", "--map")
    text = (out / "report.html").read_text()
    assert nasty not in text
    refs = Refs()
    refs.feed(text)
    assert not refs.refs or all(v.startswith(("data:image/png;base64,", "#")) for _, _, v in refs.refs)
    assert "link" not in refs.tags and "iframe" not in refs.tags
    blocks = Scripts()
    blocks.feed(text)
    assert [attrs for attrs, _ in blocks.blocks] == [{"type": "application/json", "id": "map-data"}, {}]
    code = blocks.blocks[1][1]
    pinned = "'sha256-" + base64.b64encode(hashlib.sha256(code.encode()).digest()).decode() + "'"
    csp = refs.csp[0]
    assert csp.startswith("default-src 'none'") and csp.endswith(f"; script-src {pinned}")
    assert csp.count("script-src") == 1 and "unsafe" not in csp.split("script-src")[1]
    data = json.loads(blocks.blocks[0][1])
    paths = np.load(out / "paths.npz")
    assert data["response"] == nasty and data["labels"] == ["lon", "lat"]
    assert data["x"] == [float(f"{v:.6g}") for v in paths["axis_lon"]]
    assert data["y"] == [float(f"{v:.6g}") for v in paths["axis_lat"]]
    assert len(data["layers"]) == 1
    assert data["layers"][0]["values"] == [float(f"{v:.6g}") for v in paths["paths"][0].reshape(-1)]
    assert data["centre"] == 0.5 and data["clip"] == 2 and data["log"] is False
    # refused with --no-report and on 1-D data (one line, exit 2, nothing written)
    code = main(["release", "--mechanism", "posterior-sample", "--out", str(tmp_path / "none"), "--no-report", "--map",
                 "--ledger", str(tmp_path / "l2.sqlite")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "--map" in err[0] and not (tmp_path / "none").exists()
    assert not (tmp_path / "l2.sqlite").exists()
    csv1 = tmp_path / "d1.csv"
    csv1.write_text("t,v\n" + "\n".join(f"{a!r},{b!r}" for a, b in zip(rng.uniform(0, 1, 20).tolist(),
                                                                      rng.normal(size=20).tolist())) + "\n")
    code = main(["release", "--data", str(csv1), "--x-col", "t", "--response-col", "v", "--box", "0", "1", "--threshold",
                 "0", "--clip", "1", "--map", "--out", str(tmp_path / "one"), "--ledger", str(tmp_path / "l3.sqlite")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "--map must be used with 2-D data" in err[0]
    assert not (tmp_path / "one").exists() and not (tmp_path / "l3.sqlite").exists()


def test_one_dimensional_report_and_picture(tmp_path, capsys):
    rng = np.random.default_rng(2)
    csv = tmp_path / "d1.csv"
    t, v = rng.uniform(0, 1, 25), rng.normal(size=25)
    csv.write_text("t,v\n" + "\n".join(f"{a!r},{b!r}" for a, b in zip(t.tolist(), v.tolist())) + "\n")
    out = release(tmp_path, capsys, "--data", str(csv), "--x-col", "t", "--response-col", "v", "--box", "0", "1",
                  "--threshold", "0", "--clip", "1", "--r", "3", "--sigma", "2", "--L", "3", "--lengthscale", "0.3")
    text = (out / "report.html").read_text()
    check_self_contained(text)
    assert "Lemma B.7" in unescape(text) and "3 posterior sample paths" in unescape(text)
    png = (out / "excursion.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", png[16:24])[0] >= 600


# -- privgp verify ----------------------------------------------------------------------------

def test_verify_accepts_a_release_and_refuses_tampering(tmp_path, capsys):
    out = release(tmp_path, capsys, "--grid", "21")
    path = out / "certificate.json"
    assert main(["verify", str(path)]) == 0
    assert "VERIFIED" in capsys.readouterr().out
    assert main(["verify", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["verified"] is True
    doc = json.loads(path.read_text())

    def tampered(edit) -> int:
        d = json.loads(json.dumps(doc))
        edit(d)
        p = tmp_path / "tampered.json"
        p.write_text(json.dumps(d))
        code = main(["verify", str(p)])
        captured = capsys.readouterr()
        assert code == 1 and "NOT VERIFIED" in captured.out, captured
        return code

    tampered(lambda d: d["certificate"].__setitem__("epsilon", d["certificate"]["epsilon"] * 0.999))
    tampered(lambda d: d["certificate"]["public"].__setitem__("lengthscale", 2 * d["certificate"]["public"]["lengthscale"]))
    tampered(lambda d: d["certificate"]["event"].__setitem__("kappa", 0.5))
    tampered(lambda d: d["public_settings"].__setitem__("r", 2 * d["public_settings"]["r"]))
    tampered(lambda d: d["public_settings"].__setitem__("n", 100))
    # not a certificate: exit status 2, one line
    (tmp_path / "x.json").write_text("{not json")
    assert main(["verify", str(tmp_path / "x.json")]) == 2
    assert main(["verify", str(tmp_path / "missing.json")]) == 2
    (tmp_path / "y.json").write_text("{}")
    assert main(["verify", str(tmp_path / "y.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and all(line.startswith("privgp: error:") for line in err)


# -- the picture ------------------------------------------------------------------------------

BOX2 = Box((0.0, 0.0), (4.0, 2.0))


def ctx(domain=BOX2, transform="log") -> PictureContext:
    rm = ResponseMap(threshold=50.0 if transform == "log" else 0.0, clip=1.0, transform=transform)
    return PictureContext(domain=domain, axis_labels=("east", "north")[: domain.dim],
                          response=ResponseDisplay("price", "$1,000", "${:g}k"), response_map=rm, epsilon=2.0, delta=1e-3)


def field(K, shape, seed=0, scale=0.3):
    rng = np.random.default_rng(seed)
    axes = tuple(np.linspace(lo, hi, m) for lo, hi, m in zip(BOX2.lower, BOX2.upper, shape))
    return ReleasedField(axes=axes, values=scale * rng.standard_normal((K, *shape)), noun="path", plural="paths")


@pytest.mark.parametrize("K", [1, 4])
def test_two_dimensional_pictures(K):
    pic = draw(field(K, (41, 21)), ctx())
    assert pic.png[:8] == b"\x89PNG\r\n\x1a\n" and (pic.width, pic.height) == struct.unpack(">II", pic.png[16:24])
    assert 600 <= pic.width <= 1200 and 300 <= pic.height <= 1300
    if K == 1:
        assert "price > $50k" in pic.caption and "public domain [0, 4] x [0, 2]" in pic.caption
    else:
        assert "Vote map" in pic.caption and "fraction of the 4 released paths" in pic.caption
    assert "no data point" in pic.caption


def test_one_dimensional_picture_and_a_field_without_boundary(recwarn):
    one = Box((0.0,), (1.0,))
    f = ReleasedField(axes=(np.linspace(0, 1, 51),), values=np.full((2, 51), 0.4), noun="path", plural="paths",
                      band=(np.full(51, 0.2), np.full(51, 0.6)), band_label="mean \u00b1 2 sd")
    pic = draw(f, ctx(one, "identity"))
    assert pic.png[:8] == b"\x89PNG\r\n\x1a\n" and "Band: mean \u00b1 2 sd" in pic.caption
    # entirely above the threshold: no boundary to draw, and no warning about it
    flat = ReleasedField(axes=field(1, (21, 11)).axes, values=np.full((1, 21, 11), 0.3), noun="path", plural="paths")
    draw(flat, ctx())
    assert not [w for w in recwarn if "contour" in str(w.message).lower()]


def test_colour_span_is_centred_nice_and_capped():
    assert colour_span(np.array([0.03, -0.07])) == 0.1
    assert colour_span(np.array([0.5])) == 0.5 and colour_span(np.array([3.0])) == 1.0
    with pytest.raises(ValueError):
        ReleasedField(axes=(np.arange(3.0),), values=np.zeros((1, 4)), noun="a", plural="b")


# -- the mechanism interface ------------------------------------------------------------------

def test_every_registered_mechanism_is_a_whole_mechanism():
    """The registry finds every mechanism module; each class implements the whole interface (an abstract
    method left out could not be instantiated) and states its picture; names are the CLI's choices."""
    from privgp.mechanisms.interface import Mechanism, registry

    mechs = registry()
    assert {"posterior-sample", "sparse-gp", "functional", "grid", "auto", "discretised-gaussian",
            "posterior-sample-tuned"} <= set(mechs)
    for name, mech in mechs.items():
        assert isinstance(mech, Mechanism) and mech.name == name and mech.picture.endswith(".png")
        assert mech.help and all(o.help for o in mech.options)
        assert (mech.plan_type is None) == (name == "auto")


def test_the_exact_statement_names_the_profile_composition():
    """A certificate computed by the profile rule (no release of today's mechanisms has one: a composition
    with (epsilon, delta)-only parts) says so in the report's exact statement."""
    from types import SimpleNamespace

    from privgp.accounting import ApproxDpEvent, ZcdpEvent, certify, composition_rule
    from privgp.cli.release_report import _exact

    ev = ZcdpEvent(0.01) + ApproxDpEvent(0.1, 1e-6).times(5)
    text = SimpleNamespace(statement="s", references=())
    new = _exact(SimpleNamespace(certificate=certify(ev, 1e-4), text=text, n=10))
    with composition_rule("basic"):
        old = _exact(SimpleNamespace(certificate=certify(ev, 1e-4), text=text, n=10))
    assert "privacy profiles" in new and "<code>profile</code>" in new
    assert "privacy profiles" not in old and "R\u00e9nyi" in old


@pytest.mark.parametrize("upper", [(4.0, 2.0), (20.0, 1.0), (1.0, 20.0)])
def test_the_picture_layout_keeps_the_map_title_and_legend_apart(upper):
    """_fit places the map from one measurement of the text: inside the figure, the title above the map and the
    legend below it without overlap, the map a real share of the figure -- also for very wide or tall boxes."""
    from privgp.cli.release_figure import _draw_2d, _Figures

    box = Box((0.0, 0.0), upper)
    axes = tuple(np.linspace(lo, hi, m) for lo, hi, m in zip(box.lower, box.upper, (41, 21)))
    f = ReleasedField(axes=axes, values=0.3 * np.random.default_rng(1).standard_normal((1, 41, 21)), noun="path",
                      plural="paths")
    fig, _ = _draw_2d(_Figures, f, ctx(box))
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    ax.apply_aspect()
    mapbox, title = ax.get_window_extent(renderer), ax.title.get_window_extent(renderer)
    legend = fig.legends[0].get_window_extent(renderer)
    W, H = fig.bbox.width, fig.bbox.height
    decorated = ax.get_tightbbox(renderer, bbox_extra_artists=[])   # the map with its ticks and axis labels
    assert 0 <= legend.y0 and legend.y1 <= decorated.y0 and mapbox.y1 <= title.y0 and title.y1 <= H
    assert 0 <= mapbox.x0 and mapbox.x1 <= W
    assert max(mapbox.width / W, mapbox.height / H) > 0.35


def test_the_units_sentence_names_only_the_files_published():
    """A grid release publishes no paths.csv: its report's units sentence must not name one (usability walk-through)."""
    from privgp.cli.release_report import _units

    grid = _units(["field.npz", "field.csv", "excursion.png", "certificate.json"])
    assert "field.npz, field.csv" in grid and "paths" not in grid and "response's own units" in grid
    paths = _units(["paths.npz", "paths.csv", "excursion.png"])
    assert "paths.npz, paths.csv" in paths and "field" not in paths and "own units" not in paths
    assert "inducing" not in _units(["prediction.npz", "prediction.csv", "inducing.csv"])
    assert _units(["excursion.png"]) == ""


def test_a_report_of_format_5_verifies_in_part(tmp_path, capsys):
    """The README's release as committed at 636012a, whose report is in format 5 (before the forecast's note named
    its assumption): verify checks its epsilon, delta and figure, says it could not redo its words, and --strict
    fails on that alone."""
    import subprocess

    root = Path(__file__).resolve().parents[2]
    folder = "docs/runs/release-default"
    names = subprocess.run(["git", "ls-tree", "--name-only", f"636012a:{folder}"], cwd=root, capture_output=True,
                           text=True, check=True).stdout.split()
    for name in names:
        data = subprocess.run(["git", "show", f"636012a:{folder}/{name}"], cwd=root, capture_output=True,
                              check=True).stdout
        (tmp_path / name).write_bytes(data)
    assert 'name="privgp-report-format" content="5"' in (tmp_path / "report.html").read_text(encoding="utf-8")
    assert main(["verify", str(tmp_path / "certificate.json")]) == 0
    out = capsys.readouterr().out
    assert "report.html: checked in part (its stated epsilon and delta, its figure)" in out, out
    assert main(["verify", str(tmp_path / "certificate.json"), "--strict"]) == 1
    capsys.readouterr()
