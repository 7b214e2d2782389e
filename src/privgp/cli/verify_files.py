"""What ``privgp verify`` checks INSIDE the released files, beyond their sha256.

The sha256 list sits in the same editable file as the certificate, so hashes alone only say that the files
beside it are the ones it names. A certificate rebuilt consistently from edited settings (a smaller
target epsilon, another threshold or grid) would then verify against the untouched files of the real
release. These checks tie the hashed files to the settings the certificate states:

* sha256 itself: a mapping of plain file names to 64-hex digests covering every released file the
  certificate lists in ``outputs`` (checked in code, with or without jsonschema; empty for a certificate
  written alone by the Python API); an ``account`` certificate (the calculator) lists no released files;
* every released ``.npz`` of a mechanism (field.npz, paths.npz, prediction.npz): its response map (threshold, clip,
  transform) is the certificate's, its grid axes are the public domain and grid of the certificate, its
  arrays have the grid's shape, and posterior-sample paths number L;
* a noisy grid (``released_sums``/``released_counts`` in field.npz): the released map and its released
  standard deviation are the public post-processing of the released statistics under the certificate's
  plan (:meth:`~privgp.mechanisms.registered.grid.CellGridRelease.post_process`) -- the sd follows from
  the noise scale, which follows from epsilon: a certificate claiming another epsilon does not match;
* report.html: the epsilon and delta it states (``data-epsilon``, ``data-delta``) are the certificate's;
* ``privgp optimize``: history.csv has one row per released round and summary.json states the
  certificate's released rounds, epsilon and delta;
* ``--mechanism posterior-sample-tuned``: selection.json states the certificate's candidates, training split
  and selection budget, at most its number of runs, and the r of the released candidate.

Only files whose sha256 matched are read (a missing file is reported as missing, not checked). A data
holder who rewrites every file consistently can still publish anything: verify checks what follows from
the certificate, not how the files were made.
"""
from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np

from . import release_publish as publish

HEX64 = re.compile(r"[0-9a-f]{64}")
#: the .npz files the registered mechanisms write (other hashed files, e.g. a user's own, are hashed only)
RELEASED_NPZ = ("field.npz", "paths.npz", "prediction.npz")
#: relative tolerance of recomputed released arrays (the same code and inputs: equal up to BLAS rounding)
RTOL = 1e-9


def check_sha256_list(doc: dict, kind: str | None) -> None:
    """The recorded ``sha256`` is a mapping {plain file name: lowercase hex digest} that covers every released
    file of ``outputs``; absent only for a certificate of an older privgp (reported, not checked)."""
    if kind == "account":
        if "sha256" in doc:
            raise publish.CertificateMismatch("sha256", "an account certificate (the calculator) has no released files")
        return
    if "sha256" not in doc:
        return
    rec = doc["sha256"]
    if not isinstance(rec, dict):
        raise publish.CertificateMismatch("sha256", f"a mapping of released file names to sha256 digests, "
                                          f"found {publish._short(rec)}")
    for name, digest in rec.items():
        if not isinstance(name, str) or not name or Path(name).name != name or name in (".", "..") or "\x00" in name:
            raise publish.CertificateMismatch(f"sha256.{name}", "a plain file name (files sit beside the certificate)")
        if not isinstance(digest, str) or not HEX64.fullmatch(digest):
            raise publish.CertificateMismatch(f"sha256.{name}", "a sha256 digest (64 lowercase hex digits)")
    outputs = doc.get("outputs")
    if outputs is not None:
        if not isinstance(outputs, list) or not all(isinstance(o, str) for o in outputs):
            raise publish.CertificateMismatch("outputs", "a list of file names")
        unhashed = [o for o in outputs if o != "certificate.json" and o not in rec]
        if unhashed:
            raise publish.CertificateMismatch(f"sha256.{unhashed[0]}", "missing: every released file the certificate "
                                              "lists in outputs has its sha256 recorded")


def check_contents(doc: dict, kind: str | None, folder: Path, files: dict[str, str]) -> None:
    """Raise :class:`~privgp.cli.release_publish.CertificateMismatch` when a released file (one whose sha256
    matched) disagrees with the settings the certificate states (module docstring)."""
    ok = {name for name, state in files.items() if state == "ok"}
    if kind == "release":
        for name in sorted(ok & set(RELEASED_NPZ)):
            _check_npz(doc, folder / name, name)
        if "selection.json" in ok and doc.get("mechanism") == "posterior-sample-tuned":
            _check_selection(doc, folder / "selection.json")
    if kind == "optimize":
        _check_optimize(doc, folder, ok)
    if "report.html" in ok and kind in ("release", "optimize"):
        _check_report(doc, folder / "report.html")


def _mismatch(field: str, reason: str) -> publish.CertificateMismatch:
    return publish.CertificateMismatch(field, reason + " (the released file does not match the certificate)")


def _check_npz(doc: dict, path: Path, name: str) -> None:
    from ..mechanisms.interface import Recorded, registry

    recorded = Recorded(doc)
    settings = doc.get("public_settings") or {}
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except Exception as exc:  # any unreadable archive (BadZipFile, a pickled member, a truncated array): not ours
        raise _mismatch(name, f"not a readable .npz ({type(exc).__name__}: {str(exc)[:80]})") from None
    rm = recorded.response_map()
    for key, want in (("threshold", rm.threshold), ("clip", rm.clip)):
        if key in arrays and not (arrays[key].shape == () and float(arrays[key]) == float(want)):
            raise _mismatch(f"{name}.{key}", f"{arrays[key]!r} where the certificate states {want!r}")
    if "transform" in arrays and str(arrays["transform"]) != rm.transform:
        raise _mismatch(f"{name}.transform", f"{str(arrays['transform'])!r} where the certificate states {rm.transform!r}")
    recorded.grid_points()  # the recorded per-axis grid, checked
    domain, grid = recorded.domain(), tuple(int(m) for m in recorded.setting("grid"))
    axes = [k for k in arrays if k.startswith("axis_")]
    if len(axes) != domain.dim or len(grid) != domain.dim:
        raise _mismatch(name, f"{len(axes)} grid axes for a {domain.dim}-D domain")
    for j, key in enumerate(axes):
        line = np.linspace(domain.lower[j], domain.upper[j], grid[j])
        got = arrays[key]
        if got.shape != line.shape or not np.allclose(got, line, rtol=RTOL, atol=0.0):
            raise _mismatch(f"{name}.{key}", f"grid axis of {got.size} points over [{got.min():.6g}, {got.max():.6g}] "
                            f"where the certificate states {grid[j]} over [{domain.lower[j]:g}, {domain.upper[j]:g}]")
    for key in ("field", "sd", "reliable", "mean"):
        if key in arrays and arrays[key].shape != grid:
            raise _mismatch(f"{name}.{key}", f"shape {arrays[key].shape} on the grid {grid}")
    if "paths" in arrays:
        paths = arrays["paths"]
        if paths.shape[1:] != grid:
            raise _mismatch(f"{name}.paths", f"shape {paths.shape} on the grid {grid}")
        if doc.get("mechanism") == "posterior-sample" and paths.shape[0] != settings.get("L"):
            raise _mismatch(f"{name}.paths", f"{paths.shape[0]} paths where the certificate states L = {settings.get('L')}")
    if "released_sums" in arrays and "released_counts" in arrays:
        mech = registry().get(doc.get("mechanism"))  # type: ignore[arg-type]
        plan = None if mech is None else mech.rebuild(recorded)
        if plan is not None and hasattr(plan, "post_process"):
            _check_post_processing(plan, arrays, name)


def _check_post_processing(plan: Any, arrays: dict[str, np.ndarray], name: str) -> None:
    sums, counts = arrays["released_sums"], arrays["released_counts"]
    if sums.shape != tuple(plan.cells) or counts.shape != tuple(plan.cells):
        raise _mismatch(f"{name}.released_sums", f"shape {sums.shape} for {tuple(plan.cells)} cells")
    again = plan.post_process(np.asarray(sums, float), np.asarray(counts, float))
    for key, want in (("field", again.field), ("sd", again.sd)):
        got = arrays.get(key)
        if got is None or got.shape != want.shape or not np.allclose(got, want, rtol=RTOL, atol=1e-12):
            raise _mismatch(f"{name}.{key}", "not the public post-processing of the released statistics under the "
                            "certificate's settings (its noise scale follows from its epsilon)")


def _check_selection(doc: dict, path: Path) -> None:
    """The tuned release's selection.json states the certificate's candidates, training split and the private
    selection's budget (runs at most, per-run epsilon and delta), and the r of the candidate it released."""
    sel = _read_json(path, "selection.json")
    settings: dict = doc.get("public_settings") or {}
    budget: dict = settings["selection"] if isinstance(settings.get("selection"), dict) else {}
    if not isinstance(sel, dict):
        raise _mismatch("selection.json", "not a JSON object")
    for key, want in (("candidates", settings.get("lengthscales")), ("n_train", settings.get("n_train")),
                      ("max_runs", budget.get("max_draws"))):
        if sel.get(key) != want:
            raise _mismatch(f"selection.json.{key}", f"{publish._short(sel.get(key))} where the certificate states "
                            f"{publish._short(want)}")
    _same_number(sel.get("per_run_epsilon"), budget.get("epsilon"), "selection.json.per_run_epsilon")
    _same_number(sel.get("per_run_delta"), budget.get("delta"), "selection.json.per_run_delta")
    runs = sel.get("runs")
    if not isinstance(runs, int) or isinstance(runs, bool) or not 0 <= runs <= budget.get("max_draws", -1):
        raise _mismatch("selection.json.runs", f"{publish._short(runs)} runs where the certificate allows at most "
                        f"{publish._short(budget.get('max_draws'))}")
    if sel.get("selected"):
        cands, rs = settings.get("lengthscales") or [], settings.get("r_per_candidate") or []
        if sel.get("lengthscale") not in cands or len(rs) != len(cands):
            raise _mismatch("selection.json.lengthscale", f"{publish._short(sel.get('lengthscale'))} is not a "
                            "candidate of the certificate")
        _same_number(sel.get("r"), rs[cands.index(sel["lengthscale"])], "selection.json.r")


def _check_optimize(doc: dict, folder: Path, ok: set[str]) -> None:
    released = doc.get("released_rounds")
    if "history.csv" in ok:
        try:
            with open(folder / "history.csv", newline="", encoding="utf-8") as fh:
                rows = sum(1 for _ in csv.DictReader(fh))
        except (OSError, UnicodeDecodeError, csv.Error) as exc:
            raise _mismatch("history.csv", f"not a readable CSV ({type(exc).__name__}: {str(exc)[:80]})") from None
        if rows != released:
            raise _mismatch("history.csv", f"{rows} released rounds where the certificate states {released!r}")
    if "summary.json" in ok:
        summary = _read_json(folder / "summary.json", "summary.json")
        if not isinstance(summary, dict):
            raise _mismatch("summary.json", "not a JSON object")
        if summary.get("rounds_released") != released:
            raise _mismatch("summary.json.rounds_released", f"{summary.get('rounds_released')!r} where the "
                            f"certificate states {released!r}")
        cert = doc.get("certificate")
        if isinstance(cert, dict) and "epsilon_released" in summary:
            _same_number(summary["epsilon_released"], cert.get("epsilon"), "summary.json.epsilon_released")
            _same_number(summary.get("delta"), cert.get("delta"), "summary.json.delta")


def _read_json(path: Path, name: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise _mismatch(name, f"not a readable JSON file ({type(exc).__name__})") from None


def _check_report(doc: dict, path: Path) -> None:
    text = path.read_text(encoding="utf-8", errors="replace")
    cert = doc.get("certificate")
    cert = cert if isinstance(cert, dict) else {}
    for attr in ("epsilon", "delta"):
        m = re.search(rf'data-{attr}="([^"]*)"', text)
        if m is not None:
            _same_number(m.group(1), cert.get(attr), f"report.html.data-{attr}")


def _same_number(got: Any, want: Any, field: str) -> None:
    try:
        a, b = float(got), float(want)
    except (TypeError, ValueError):
        raise _mismatch(field, f"{publish._short(got)} where the certificate states {publish._short(want)}") from None
    if not (math.isfinite(a) and math.isfinite(b) and math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0)):
        raise _mismatch(field, f"{got!r} where the certificate states {want!r}")


#: a certificate's words: printed by verify from the rebuilt certificate, not compared for the verdict
WORDS = ("lemmas", "assumptions", "warnings")


def differing_words(recorded: Any, rebuilt: Any) -> list[str]:
    """The word fields (lemmas, assumptions, warnings) in which a recorded certificate differs from the rebuilt
    one: a notice, not a failure (an older privgp words them differently; the numbers are what verify checks),
    so that a reader of certificate.json knows which words to take from verify's output instead."""
    if not isinstance(recorded, dict) or rebuilt is None:
        return []
    again = rebuilt.to_dict()
    return [k for k in WORDS if list(recorded.get(k) or []) != list(again.get(k) or [])]
