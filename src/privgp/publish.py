"""Writing a release's outputs from Python: the files ``privgp release`` writes, by the same code.

After ``result = privgp.release(plan, privgp.records(X, y), privgp.Budget(path, epsilon=...))``:

* :func:`write_release` (result, folder): everything ``privgp release --out FOLDER`` writes -- the
  mechanism's data files, the picture, ``report.html`` and ``certificate.json`` (which records
  the sha256 of every other file, for ``privgp verify``) -- into a new or empty folder, atomically,
  then marks the ledger entry completed;
* :func:`write_picture`, :func:`write_report`, :func:`write_certificate`, :func:`write_data`: one
  output each, to a path of your choice.

These functions post-process the released object (no privacy cost) and read nothing private but
n; the certificate and the report name the public settings, the ledger's totals and the keyed
fingerprint, never a local path or a statistic of the data. This module sits with the command
line in the output layer (the library below it writes no file); the command uses
:func:`write_outputs` for its own folder, so the two can never differ.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .cli.release import CERTIFICATE
from .cli.release_publish import REPORT
from .errors import InvalidParameterError
from .jsonable import to_jsonable


#: plans whose ``mechanism`` is a description rather than the command's ``--mechanism`` name
PLAN_MECHANISMS = {"posterior-sample, private lengthscale selection": "posterior-sample-tuned"}


def _parts(result: Any, mechanism: str | None = None) -> tuple[Any, Any, Any, Any]:
    """(mechanism module, plan, released, data) of a :class:`~privgp.mechanisms.release.ReleaseResult`;
    ``mechanism``: the command's ``--mechanism`` name (default: from the plan)."""
    from .cli.release import mechanism_module
    from .mechanisms.release import ReleaseResult

    if not isinstance(result, ReleaseResult):
        raise InvalidParameterError("result", "what privgp.release returned (a ReleaseResult)", type(result).__name__)
    if result.data is None:
        raise InvalidParameterError("result", "a ReleaseResult that carries its records (from privgp.release)",
                                    "no records")
    try:
        name = mechanism or PLAN_MECHANISMS.get(result.plan.mechanism, result.plan.mechanism)
        mod = mechanism_module(name)
    except InvalidParameterError:
        raise InvalidParameterError("mechanism", "a mechanism privgp release can write (posterior-sample, grid, "
                                    "sparse-gp, functional, discretised-gaussian, posterior-sample-tuned)",
                                    mechanism or result.plan.mechanism) from None
    return mod, result.plan, result.released, result.data


def _randomness(result: Any) -> dict:
    from .mechanisms.release import FRESH_ENTROPY

    return dict(result.randomness or FRESH_ENTROPY)


def picture_name(result: Any, *, mechanism: str | None = None) -> str:
    """The file name the command gives this release's picture (e.g. ``excursion.png``)."""
    return str(_parts(result, mechanism)[0].PICTURE)


def write_data(result: Any, folder: str | os.PathLike[str], *, mechanism: str | None = None) -> list[str]:
    """The mechanism's data files (e.g. ``paths.npz`` and ``paths.csv``) in ``folder``; their names."""
    mod, plan, released, data = _parts(result, mechanism)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    return list(mod.write(folder, released, plan, data))


def write_picture(result: Any, path: str | os.PathLike[str], *, mechanism: str | None = None) -> Path:
    """The release's picture (PNG: the released map with its uncertainty, the guarantee in the caption)."""
    from .cli import release_publish

    mod, plan, released, data = _parts(result, mechanism)
    path = Path(path)
    path.write_bytes(release_publish.picture(mod, released, plan, data).png)
    return path


def write_report(result: Any, path: str | os.PathLike[str], *, files: tuple[str, ...] | list[str] = (),
                 forecast: Any = None, mechanism: str | None = None) -> Path:
    """report.html: a self-contained page for publication (what was released, from how many records,
    what the guarantee means, the settings, the ledger's totals, how to verify). ``files``: the
    names of the other published files it lists; ``forecast``: the utility forecast, if computed
    (:func:`privgp.tasks.forecast.forecast`)."""
    from .cli import release_publish

    mod, plan, released, data = _parts(result, mechanism)
    pic = release_publish.picture(mod, released, plan, data)
    path = Path(path)
    path.write_text(release_publish.report(mod, plan, data, pic, result.charge, result.fingerprint,
                                           _randomness(result), list(files), forecast=forecast), encoding="utf-8")
    return path


def certificate_document(result: Any, *, files: tuple[str, ...] | list[str] = (),
                         folder: str | os.PathLike[str] | None = None, forecast: Any = None,
                         mechanism: str | None = None) -> dict:
    """certificate.json's content (public quantities only). With ``folder``, the sha256 of each of
    ``files`` found there is recorded, so that ``privgp verify`` detects a swapped output."""
    from .cli.release import certificate_doc

    mod, plan, _, data = _parts(result, mechanism)
    return to_jsonable(certificate_doc(mod.NAME, plan, data, result.fingerprint, result.charge, _randomness(result),
                                       list(files), folder=None if folder is None else Path(folder),
                                       forecast_=forecast))


def write_certificate(result: Any, path: str | os.PathLike[str], *, files: tuple[str, ...] | list[str] = (),
                      forecast: Any = None, mechanism: str | None = None) -> Path:
    """certificate.json (checked by ``privgp verify``): the certificate, the public settings, the
    ledger charge; the sha256 of each of ``files`` lying next to ``path``."""
    path = Path(path)
    doc = certificate_document(result, files=files, folder=path.parent, forecast=forecast, mechanism=mechanism)
    path.write_text(json.dumps(doc, indent=2) + "\n")
    return path


def write_outputs(folder: Path, result: Any, *, report: bool = True, forecast: Any = None,
                  mechanism: str | None = None) -> list[str]:
    """Every output of the release into ``folder`` (data files, picture, report, certificate last, as it
    records the others' sha256); returns the file names. ``privgp release`` writes with this."""
    mod = _parts(result, mechanism)[0]
    files = write_data(result, folder, mechanism=mechanism)
    write_picture(result, folder / mod.PICTURE, mechanism=mechanism)
    files += [mod.PICTURE, CERTIFICATE] + ([REPORT] if report else [])
    if report:
        write_report(result, folder / REPORT, files=files, forecast=forecast, mechanism=mechanism)
    write_certificate(result, folder / CERTIFICATE, files=files, forecast=forecast, mechanism=mechanism)
    return files


def write_release(result: Any, out: str | os.PathLike[str], *, report: bool = True, overwrite: bool = False,
                  forecast: Any = None, mechanism: str | None = None) -> list[str]:
    """What ``privgp release --out OUT`` writes, into ``out`` (new or empty unless ``overwrite``),
    atomically (a temporary folder renamed into place); then the ledger entry is marked completed.
    Returns the names of the files written."""
    from .cli.outputs import AtomicOutput, check_output_dir

    _parts(result, mechanism)
    protect = [] if result.ledger is None else [("ledger", result.ledger.path)]
    folder = check_output_dir(out, overwrite, flag="out", protect=protect)
    with AtomicOutput(folder, overwrite) as tmp:
        files = write_outputs(tmp, result, report=report, forecast=forecast, mechanism=mechanism)
    if result.ledger is not None:
        entry = result.charge.entry_id
        if not any(e.id == entry and e.status == "completed" for e in result.ledger.entries(result.fingerprint)):
            result.ledger.complete(entry)
    return files


__all__ = ["write_release", "write_outputs", "write_picture", "write_report", "write_certificate",
           "certificate_document", "write_data", "picture_name", "CERTIFICATE", "REPORT"]
