"""``report.html``: the one-page, self-contained report of a release, for publication.

:func:`render` turns a :class:`ReportInput` (public facts only) into one HTML string; it writes
nothing (the release command writes the file). The same page serves every mechanism of
``privgp release``: a mechanism contributes its own words as a :class:`MechanismReport` (what was
released, how, the exact theorem, how each hyperparameter was chosen, a ``privgp account`` command
that recomputes epsilon) and its picture as a :class:`~privgp.cli.release_figure.ReleasedField`.

What the page may contain: the released picture, n (public under replace-one DP), the public
settings, the certificate (event, lemmas, assumptions, RDP order and conversion), the ledger's
totals for this data set, the privgp version and how the randomness was drawn. What it never
contains: data values or any statistic of them beyond n, local paths (data file, ledger, output
folder), the ledger label or --dataset-id, the seed.

Self-contained: the figure is embedded as a ``data:image/png;base64`` URI; the CSS is inline; there
is no script, no web font, no external link target that the page loads; a Content-Security-Policy
(``default-src 'none'``) makes a browser refuse any fetch even if one were added. With ``privgp release
--map`` (opt-in) the page also holds the interactive map of :mod:`privgp.cli.release_map`: its values
and ONE inline script, which the CSP allows by its sha256 (``script-src``); it too loads nothing. Every dynamic
string is escaped with :func:`html.escape`. Responsive: a single column that fits a phone's width
(tables and code scroll or wrap inside their box) and reads as a page on a desktop.
"""
from __future__ import annotations

import base64
import html
import math
import shlex
from dataclasses import dataclass
from string import Template

from ..accounting import PrivacyCertificate
from ..formatting import exact_number, format_lower, format_short_of
from ..ledger import remaining_epsilon
from ..mechanisms.interface import MechanismReport, chosen_by  # noqa: F401 (re-exported: the vocabulary of report_text)
from ..mechanisms.release import default_delta
from ..models.domain import Box
from .release_figure import Picture, ResponseDisplay, format_upper
from .release_map import STYLE as MAP_STYLE
from .release_map import InteractiveMap

CONVERSIONS = {"improved": "Canonne, Kamath and Steinke (2020), Prop. 12 (also Balle et al. 2020)",
               "mironov": "Mironov (2017), Prop. 3"}
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"


@dataclass(frozen=True)
class LedgerTotals:
    """The data set's budget after this release (the ledger's numbers; no path, no label)."""

    budget_epsilon: float
    budget_delta: float
    spent_epsilon: float
    releases: int
    fingerprint: str


#: the layout of report.html, stated in it: ``privgp verify`` redoes a report word for word only in the layout the
#: installed privgp writes (raise it whenever the page's words or markup change)
REPORT_FORMAT = 7   # 3: the calculator's line quoted rounded up, as it prints it; 4: the mechanisms' exact
#                     statements give their bounds rounded up (the Laplace grid's pure epsilon, the grid's GDP mu, the
#                     sensitivity bounds, the tuned mechanism's per-run (epsilon, delta), the calibration's target);
#                     5 (red team 25): the domain, the threshold and the public settings' numbers exactly as given
#                     (not in 6 or 10 significant digits), the forecast's IoU never rounded up to the refusal line,
#                     Parquet and database sources not called a CSV file, long words in headings and captions broken;
#                     6 (feee9ff, 2026-11-29): the forecast's note says it simulates records spread over the domain and
#                     that clustered records can make the map worse; 7 (red team 19c: 6's words changed without a new
#                     number): on records unlike its fields the map can be better or worse than forecast (README's
#                     embedded sales at $50k, IoU 0.51 against 0.68; at $40k and epsilon 2, 0.64 against 0.50)


@dataclass(frozen=True)
class ReportInput:
    """Everything the report states; all of it public."""

    mechanism: str
    text: MechanismReport
    certificate: PrivacyCertificate
    public_settings: dict
    n: int
    data_description: str
    coordinates: tuple[str, ...]
    response: ResponseDisplay
    threshold_text: str
    domain: Box
    picture: Picture
    ledger: LedgerTotals
    randomness: dict
    files: tuple[str, ...]
    version: str
    #: the utility forecast (public simulation) made before the charge, or None
    forecast: dict | None = None
    #: the opt-in interactive map (``--map``), or None
    interactive_map: InteractiveMap | None = None


PAGE = Template("""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="$csp">
<meta name="generator" content="privgp $version">
<meta name="privgp-report-format" content="$report_format">
<title>$title</title>
<style>
:root { color-scheme: light; --ink: #1b1f24; --muted: #57606a; --line: #d0d7de; --soft: #f6f8fa; --accent: #0b5cad; }
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; text-size-adjust: 100%; }
body { margin: 0; color: var(--ink); background: #fff; line-height: 1.55;
       font: 16px/1.55 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 52rem; margin: 0 auto; padding: 1rem 1rem 3rem; }
h1 { font-size: 1.55rem; line-height: 1.25; margin: 0.6rem 0 0.4rem; overflow-wrap: anywhere; }
h2 { font-size: 1.2rem; margin: 2rem 0 0.5rem; padding-top: 0.6rem; border-top: 1px solid var(--line); }
h3 { font-size: 1rem; margin: 1.2rem 0 0.3rem; }
p, li { overflow-wrap: anywhere; }
.lede { font-size: 1.05rem; }
.badge { display: inline-block; margin: 0.2rem 0.4rem 0.2rem 0; padding: 0.2rem 0.6rem; border-radius: 1rem;
         background: #e7f0fb; color: #0a3d73; font-weight: 600; white-space: nowrap; }
.warn { border-left: 4px solid #c62828; background: #fdecea; padding: 0.6rem 0.9rem; margin: 1rem 0; }
.note { color: var(--muted); font-size: 0.93rem; }
figure { margin: 1rem 0; }
figure img { display: block; width: 100%; height: auto; border: 1px solid var(--line); }
figcaption { color: var(--muted); font-size: 0.93rem; margin-top: 0.4rem; overflow-wrap: anywhere; }
.table-wrap { overflow-x: auto; -webkit-overflow-scrolling: touch; }
table { border-collapse: collapse; width: 100%; font-size: 0.93rem; }
th, td { text-align: left; vertical-align: top; padding: 0.35rem 0.5rem; border-bottom: 1px solid var(--line); }
th { background: var(--soft); font-weight: 600; }
td.num, code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace; }
code { font-size: 0.9em; background: var(--soft); padding: 0.05rem 0.25rem; border-radius: 3px; overflow-wrap: anywhere; }
pre { background: var(--soft); border: 1px solid var(--line); padding: 0.7rem; font-size: 0.85rem;
      white-space: pre-wrap; overflow-wrap: anywhere; }
pre code { background: none; padding: 0; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 0.25rem 1rem; margin: 0.8rem 0; }
dl.facts dt { font-weight: 600; }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
@media (max-width: 34rem) {
  body { font-size: 15px; }
  main { padding: 0.6rem 0.75rem 2rem; }
  h1 { font-size: 1.3rem; }
  dl.facts { grid-template-columns: 1fr; }
  dl.facts dd { margin-bottom: 0.4rem; }
}
@media print { h2 { break-after: avoid; } figure { break-inside: avoid; } }
$extra_style
</style>
</head>
<body>
<main>
$body
</main>
</body>
</html>
""")


def e(x) -> str:
    """HTML-escape any value's text."""
    return html.escape(str(x), quote=True)


def num(x, digits: int = 10) -> str:
    """A public number written precisely (up to ``digits`` significant digits; inf as inf)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return str(x)
    if isinstance(x, int):
        return str(x)
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.{digits}g}"


#: readable names of common public settings (others are shown under their own key)
SETTING_NAMES = {"n": "n (number of records)", "dim": "dimension", "response_map": "response map",
                 "sensitivity": "\u0394_n lemma", "constants": "constants", "conversion": "R\u00e9nyi \u2192 (\u03b5, \u03b4) conversion",
                 "hyperparameters": "hyperparameters", "preprocessing": "preprocessing", "target_epsilon": "target \u03b5",
                 "delta": "\u03b4", "sigma": "\u03c3", "eta": "\u03b7"}


def setting_rows(settings: dict) -> list[tuple[str, str]]:
    """The public settings as (name, value) rows: boxes and response maps in words, numbers precise."""
    return [(SETTING_NAMES.get(key, key), value) for key, value in _setting_values(settings)]


def exact(x) -> str:
    """A public setting exactly as it is (the fewest digits that read back as it; :func:`num` for other values):
    the settings table states the settings, and 10 digits wrote 4 + 4 * 2^-25 as 4.000000119, below it."""
    if isinstance(x, float) and math.isfinite(x):
        return exact_number(x)
    return num(x)


def _setting_values(settings: dict) -> list[tuple[str, str]]:
    rows = []
    for key, val in settings.items():
        if key == "domain" and isinstance(val, dict) and "lower" in val:
            rows.append((key, Box(tuple(val["lower"]), tuple(val["upper"])).exact_text()))
        elif key == "response_map" and isinstance(val, dict):
            rows.append((key, f"{val.get('formula', '')} (threshold T = {exact(val.get('threshold'))}, "
                                         f"clipping bound B = {exact(val.get('clip'))})"))
        elif key == "grid" and isinstance(val, (list, tuple)):
            rows.append((key, " \u00d7 ".join(str(int(m)) for m in val) + " points"))
        elif isinstance(val, dict):
            rows.append((key, ", ".join(f"{k} = {exact(v)}" for k, v in val.items())))
        elif isinstance(val, (list, tuple)):
            rows.append((key, ", ".join(exact(v) for v in val)))
        else:
            rows.append((key, exact(val)))
    return rows


def _table(head: tuple[str, ...], rows, cls: tuple[str, ...] = ()) -> str:
    cls = cls or ("",) * len(head)
    th = "".join(f"<th scope=\"col\">{e(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(_td(v, c) for v, c in zip(row, cls)) + "</tr>" for row in rows)
    return f"<div class=\"table-wrap\"><table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table></div>"


def _td(value, cls: str) -> str:
    attr = f' class="{e(cls)}"' if cls else ""
    return f"<td{attr}>{e(value)}</td>"


def _ul(items) -> str:
    return "<ul>" + "".join(f"<li>{e(x)}</li>" for x in items) + "</ul>"


def _factor(epsilon: float) -> str:
    """e^epsilon rounded up, in words for the plain-language paragraph."""
    if not math.isfinite(epsilon) or epsilon > 700:
        return "an unbounded number of"
    return format_upper(math.exp(epsilon), 3)


#: privgp's stated scale for words about epsilon; words are used only when n * delta <= MAX_N_DELTA
STRENGTH_SCALE = ((1.0, "strong"), (5.0, "moderate"), (math.inf, "weak"))
MAX_N_DELTA = 0.01


def strength_words(epsilon: float, delta: float, n: int) -> str:
    """What (epsilon, delta) means in words, on privgp's stated scale (epsilon <= 1 strong, <= 5 moderate,
    above 5 weak), and only when n delta <= 0.01: with a larger n delta, the chance that some record is
    revealed outright is not negligible, and no word of strength applies."""
    nd = n * delta
    scale = ("(privgp's scale: \u03b5 \u2264 1 strong, \u03b5 \u2264 5 moderate, above 5 weak; used only when "
             "n \u00b7 \u03b4 \u2264 0.01)")
    if not nd <= MAX_N_DELTA:
        return (f"No word of strength applies: n \u00b7 \u03b4 = {format_upper(nd)} is above 0.01, so the chance that "
                f"the release reveals some record outright is not negligible {scale}.")
    word = next(w for lim, w in STRENGTH_SCALE if epsilon <= lim)
    what = {"strong": "an observer learns little about any single record, whatever they already know",
            "moderate": "an observer who already knows a great deal could become noticeably more confident about a "
                        "single record",
            "weak": "an observer who already knows a great deal could become much more confident about a single "
                    "record"}[word]
    return f"This is {word} protection {scale}: {what}."


def _pure_words(c: PrivacyCertificate) -> str:
    """For a pure epsilon-DP release (e.g. the Laplace grid): the bound needs no exception."""
    pure = c.event.pure_epsilon()
    if pure is None or not math.isfinite(pure):
        return ""
    return (f" This release is pure {format_upper(pure)}-DP: with \u03b5 = {format_upper(pure)} the bound holds "
            "with no exception at all (\u03b4 = 0); \u03b4 is stated only to compare it with other releases.")


def _plain_guarantee(r: ReportInput) -> str:
    c = r.certificate
    eps, dlt = format_upper(c.epsilon), format_upper(c.delta)
    strength = strength_words(float(c.epsilon), float(c.delta), r.n)
    strength += (f" \u03b4 is the probability that the guarantee may fail outright; privgp's default is "
                 f"min(10\u207b\u2076, 1/(10 n)) = {format_upper(default_delta(r.n))} for n = {r.n}, so that even "
                 "over all n records the chance stays small.")
    return (
        "<p>The picture and the files published with it were made with <strong>differential privacy</strong>. "
        "Differential privacy is a promise about the process that made the picture: had any one record been "
        "replaced by a different one, the same picture would have been about as likely to come out. So whatever "
        "anyone does with what was published, alone or together with other information, what it reveals about any "
        "single record is limited.</p>"
        f"<p>How limited is set by two numbers, <span class=\"badge\">\u03b5 = <span id=\"epsilon\" "
        f"data-epsilon=\"{e(repr(float(c.epsilon)))}\">{e(eps)}</span></span> and "
        f"<span class=\"badge\">\u03b4 = <span id=\"delta\" data-delta=\"{e(repr(float(c.delta)))}\">{e(dlt)}</span>"
        f"</span>: every possible result of the release is at most e<sup>\u03b5</sup> \u2248 {e(_factor(c.epsilon))} "
        f"times as likely with one record as with that record replaced, except for results of total probability at "
        f"most \u03b4.{e(_pure_words(c))} Smaller numbers mean stronger protection. {e(strength)}</p>"
        f"<p>The number of records, n = {r.n}, is public: it is part of what is released. The promise also "
        "depends on the settings listed below having been chosen without looking at the private records, and on "
        "the randomness being secret.</p>")


def _units(files) -> str:
    """The report's sentence on the units of the data files it names (only those published with it)."""
    data = [f for f in files if f.endswith((".csv", ".npz")) and f != "inducing.csv"]   # (inducing inputs: coordinates)
    if not data:
        return ""
    text = (f" Units: the values in {', '.join(data)} are on the model scale, (g(response) − g(threshold)) / clip with "
            "g the public transform, between −1 and 1 with the threshold at 0")
    if "field.csv" in data:
        text += "; field.csv also gives each value in the response's own units (meaningful inside the clipping range)"
    return text + "."


def _iou_text(f: dict) -> str:
    """The expected IoU as the command prints it: 2 decimals, never rounded up to the refusal line it is below
    (:meth:`privgp.tasks.forecast.Forecast.iou_text`; the report wrote 0.499 as 0.50 under "Mostly noise")."""
    return format_short_of(f["expected_iou"], f["noisy_below_iou"])


def _forecast(r: ReportInput) -> str:
    """How good the map is expected to be (the forecast made before the charge; public simulation)."""
    f = r.forecast
    if not f:
        return ""
    per = [(fam, f"{v['iou']:.2f}", f"{v['rmse']:.2f}") for fam, v in f["per_family"].items()]
    noisy = ("<div class=\"warn\" role=\"note\"><strong>Mostly noise.</strong> The forecast says this map is mostly "
             f"noise (expected IoU below {f['noisy_below_iou']:g}); it was released only because the data holder "
             "asked for it (--allow-noisy). Do not read its boundaries as findings.</div>"
             if f["expected_iou"] < f["noisy_below_iou"] else "")
    return (f"<section id=\"forecast\">\n<h2>How good is this map?</h2>\n{noisy}"
            f"<p>Forecast made before the release, by simulation on public synthetic data (no private data, no "
            f"privacy cost): {e(f['words'])}.</p>"
            f"<p>Expected IoU {_iou_text(f)} \u00b1 {f['expected_iou_se']:.2f} (standard error), expected RMSE "
            f"{f['expected_rmse']:.2f} on the clipped scale [\u22121, 1]. By kind of field:</p>"
            + _table(("synthetic field", "expected IoU", "expected RMSE"), per, ("", "num", "num"))
            + "<p class=\"note\">The forecast describes fields like the simulated ones with the same number of records "
              "and the same settings, the records spread over the domain; it is not computed from, and says nothing "
              "certain about, the private data. Where the private records cluster, or more or less of the domain "
              "lies above the threshold than in the simulated fields, the map can be better or worse than "
              "forecast; where the records are absent it is privacy noise, and the picture's hatching marks where "
              "that noise alone makes it unreliable.</p>"
              "\n</section>\n")


def _exact(r: ReportInput) -> str:
    c = r.certificate
    parts = [
        f"<p>{e(r.text.statement)}</p>",
        "<p>The release mechanism M satisfies (\u03b5, \u03b4)-differential privacy with "
        f"<code>\u03b5 = {e(repr(float(c.epsilon)))}</code> and <code>\u03b4 = {e(repr(float(c.delta)))}</code> for "
        f"replace-one neighbouring data sets of n = {r.n} records: for every two data sets D, D\u2032 of n records "
        "that differ in one record, and every set S of outputs, "
        "P[M(D) \u2208 S] \u2264 e<sup>\u03b5</sup> P[M(D\u2032) \u2208 S] + \u03b4.</p>",
    ]
    if c.method == "rdp":
        parts.append(f"<p>Derived from R\u00e9nyi differential privacy of order \u03b1 = {e(num(c.alpha, 8))} "
                     f"({'optimised' if c.alpha_optimised else 'given'}) with value {e(num(c.rdp, 8))}, converted to "
                     f"(\u03b5, \u03b4) by the rule of {e(CONVERSIONS.get(c.conversion, c.conversion))}.</p>")
    elif c.method == "exact-gdp":
        parts.append("<p>Computed from the exact Gaussian-DP privacy profile (no R\u00e9nyi conversion).</p>")
    elif c.method == "profile":
        parts.append("<p>Computed by composing the parts known only as (\u03b5, \u03b4)-DP exactly through their "
                     "privacy profiles (Kairouz, Oh and Viswanath 2015, Thm 2.1; Dong, Roth and Su 2022, Thm 3.2): "
                     f"the accountant's composition rule <code>{e(c.composition)}</code>, recorded in the certificate.</p>")
    parts.append("<h3>Proof ingredients</h3>" + _ul(c.lemmas))
    details = [(k, num(v, 8)) for k, v in c.details.items()]
    if details:
        parts.append(_table(("quantity", "value"), details, ("", "num")))
    parts.append("<h3>Assumptions</h3>" + _ul(c.assumptions))
    parts.append(f"<h3>Privacy event</h3><p><code>{e(c.event.describe())}</code></p>")
    if r.text.references:
        parts.append("<h3>References</h3>" + _ul(r.text.references))
    return "\n".join(parts)


def _ledger(r: ReportInput) -> str:
    c, led = r.certificate, r.ledger
    remaining = remaining_epsilon(led.budget_epsilon, led.spent_epsilon)
    return (
        f"<p>This release alone: \u03b5 = {e(format_upper(c.epsilon))} at \u03b4 = {e(format_upper(c.delta))}. "
        "The data holder's privacy ledger keeps one budget per data set and charges every release against it "
        "before anything is published; what it records for this data set, this release included:</p>"
        "<dl class=\"facts\">"
        f"<dt>budget</dt><dd>\u03b5 = {e(num(led.budget_epsilon, 6))} at \u03b4 = {e(format_upper(led.budget_delta))} "
        "(fixed at the data set's first release)</dd>"
        f"<dt>spent</dt><dd>\u03b5 = <span id=\"spent-epsilon\">{e(format_upper(led.spent_epsilon))}</span> over "
        f"{led.releases} release{'s' if led.releases != 1 else ''} (their combined guarantee, composed by the "
        "accountant at the budget's \u03b4)</dd>"
        f"<dt>remaining</dt><dd>\u03b5 = {e(format_lower(remaining, 4))}</dd>"
        f"<dt>data set</dt><dd><code>{e(led.fingerprint[:16])}</code> (a keyed fingerprint: it names the data set in "
        "the ledger and reveals nothing about it)</dd></dl>"
        "<p class=\"note\">Someone who sees several releases of the same data set is protected by the combined "
        "guarantee (the spent \u03b5), not by each release's own. The ledger records only releases made with it.</p>")


def _verify(r: ReportInput) -> str:
    out = ["<p>Everything needed to check the guarantee is in <code>certificate.json</code> (public settings, the "
           f"privacy event, the lemmas used). With privgp {e(r.version)} installed, in the folder holding the "
           "release:</p>",
           "<pre><code>privgp verify certificate.json</code></pre>",
           "<p>recomputes the guarantee from the recorded event and public settings and says whether it matches."]
    if r.text.account_command:
        cmd = shlex.join(("privgp", *r.text.account_command))
        out[-1] += (" The privacy calculator gives the same \u03b5 from the public settings alone (no file, no "
                    "data):</p>")
        out.append(f"<pre><code id=\"account-command\">{e(cmd)}</code></pre>")
        out.append(f"<p>Its first line starts with <code>({e(format_upper(r.certificate.epsilon, 6))}, "
                   f"{e(format_upper(r.certificate.delta, 6))})-DP</code> (six significant digits, rounded up); with "
                   "<code>--json</code> "
                   "it prints the exact numbers, equal to those in <code>certificate.json</code>.</p>")
    else:
        out[-1] += "</p>"
    out.append("<p>In Python: <code>PrivacyCertificate.from_dict(json.load(open(\"certificate.json\"))"
               "[\"certificate\"]).recompute()</code> (from <code>privgp.accounting</code>) rebuilds the same "
               "certificate.</p>")
    return "\n".join(out)


def _hyperparameters(r: ReportInput) -> str:
    if not r.text.hyperparameters:
        return ""
    return ("<p>Every setting below is public. The guarantee assumes none was chosen by looking at the private "
            "records; a setting marked <em>calibrated</em> was computed from public quantities only (n, the domain "
            "and the other settings) to meet the target.</p>"
            + _table(("setting", "value", "how it was chosen"), r.text.hyperparameters, ("", "num", "")))


def _randomness(r: ReportInput) -> tuple[str, str]:
    """(banner at the top or "", sentence for the footer)."""
    if "warning" in r.randomness:
        banner = (f"<div class=\"warn\" role=\"note\"><strong>Demonstration only.</strong> This release used a fixed "
                  f"random seed: {e(r.randomness['warning'])}</div>")
        return banner, "Randomness: a fixed seed (demonstration; the seed is not published)."
    return "", "Randomness: fresh entropy from the operating system."


def figure_uri(picture: Picture) -> str:
    return "data:image/png;base64," + base64.b64encode(picture.png).decode("ascii")


def render(r: ReportInput) -> str:
    """The report as one self-contained HTML page (a string; nothing is written)."""
    c = r.certificate
    title = f"Private release: where {r.threshold_text}"
    banner, rand = _randomness(r)
    warnings = "".join(f"<div class=\"warn\" role=\"note\"><strong>Warning.</strong> {e(w)}</div>" for w in c.warnings)
    pic = r.picture
    body = f"""
<header>
<p class="note">privgp release report \u00b7 mechanism <code>{e(r.mechanism)}</code></p>
<h1>{e(title)}</h1>
<p class="lede">{e(r.text.released)}</p>
<p><span class="badge">\u03b5 = {e(format_upper(c.epsilon))}</span>
<span class="badge">\u03b4 = {e(format_upper(c.delta))}</span>
<span class="badge">n = {r.n} records</span></p>
</header>
{banner}{warnings}
<figure>
<img id="release-figure" src="{figure_uri(pic)}" width="{pic.width}" height="{pic.height}" alt="{e(pic.alt)}">
<figcaption>{e(pic.caption)}</figcaption>
</figure>
{r.interactive_map.html if r.interactive_map else ""}

<section id="what">
<h2>What was released</h2>
<p>The release was computed from {e(r.data_description)}; coordinates
{e(", ".join(r.coordinates))}, response {e(r.response.axis_label())}, over the public domain {e(r.domain.exact_text())}.</p>
<p>{e(r.text.how)}</p>
<p>Files published with this report: {e(", ".join(r.files))}. No data point, and no statistic of the data other
than n, is published.{e(_units(r.files))}</p>
</section>

{_forecast(r)}
<section id="guarantee">
<h2>What the guarantee means</h2>
{_plain_guarantee(r)}
</section>

<section id="hyperparameters">
<h2>How the settings were chosen</h2>
{_hyperparameters(r)}
</section>

<section id="settings">
<h2>Public settings</h2>
{_table(("setting", "value"), setting_rows(r.public_settings), ("", "num"))}
</section>

<section id="ledger">
<h2>Privacy budget of this data set</h2>
{_ledger(r)}
</section>

<section id="exact">
<h2>The exact statement</h2>
{_exact(r)}
</section>

<section id="verify">
<h2>How to verify</h2>
{_verify(r)}
</section>

<footer>
<h2>About this report</h2>
<p class="note">Made by privgp {e(r.version)} (<code>privgp release</code>). {e(rand)} The report is self-contained:
it loads nothing from the network.</p>
</footer>"""
    csp = CSP + (f"; script-src {r.interactive_map.script_source}" if r.interactive_map else "")
    return PAGE.substitute(csp=e(csp), version=e(r.version), report_format=REPORT_FORMAT, title=e(title), body=body,
                           extra_style=MAP_STYLE if r.interactive_map else "")
