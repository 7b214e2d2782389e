"""What the ``privgp`` command's own process does first: defer numpy sub-packages that no command uses.

SciPy 1.17's vendored array-api-compat copies every public name of numpy into its numpy namespace
(``scipy._lib.array_api_compat._internal.clone_module``, run by every ``import scipy.<anything>``). That reads
numpy's lazily loaded sub-packages too, so importing any of scipy imports ``numpy.f2py`` (the Fortran wrapper
generator; it imports charset_normalizer where that is installed) and ``numpy.testing`` (unittest, email,
importlib.metadata): about 0.1-0.15 s of every command that uses scipy on this machine class (issue 30), for modules
no privgp command calls.

:func:`defer_unused_numpy_modules` registers those two as modules whose code runs on the first lookup of a name
they do not have yet (:class:`DeferredModule`, like Mercurial's ``demandimport``): scipy's copy holds the module
object without looking inside; anything that uses one (``numpy.testing.assert_allclose``) gets the real module, run
then. (:class:`importlib.util.LazyLoader` does the same, but Python 3.11's lets a second thread see the module half
run: CPython gh-114763.) Only the console script calls it (:func:`privgp.cli.main.main` without ``argv``): the process is
privgp's own. A Python program that calls ``main(argv)`` or imports privgp keeps numpy as it is.
"""
from __future__ import annotations

import importlib.util
import sys
import threading
import types
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from importlib.abc import Loader
    from importlib.machinery import ModuleSpec

#: numpy's sub-packages that scipy's copy of numpy's names imports and no privgp command uses
DEFERRED = ("numpy.f2py", "numpy.testing")
_LOCK = threading.RLock()


class DeferredModule(types.ModuleType):
    """A module with its import attributes set from its spec (``__spec__``, ``__loader__``, ``__path__``,
    ``__file__``: what the import system and ``inspect`` read) whose code runs, once, under a lock, when a name it does
    not have is first looked up; a thread that asks meanwhile waits for it."""

    def __init__(self, spec: ModuleSpec, loader: Loader) -> None:
        super().__init__(spec.name)
        self.__spec__, self.__loader__ = spec, spec.loader
        self.__package__ = spec.name if spec.submodule_search_locations is not None else spec.parent
        if spec.submodule_search_locations is not None:
            self.__path__ = list(spec.submodule_search_locations)
        if spec.has_location:
            self.__file__, self.__cached__ = spec.origin, spec.cached
        self.__dict__["_deferred"] = loader   # the loader that runs the code, removed once it has

    def __getattr__(self, attr: str):
        with _LOCK:
            loader = self.__dict__.pop("_deferred", None)
            if loader is not None:
                loader.exec_module(self)   # as an import runs it: the module is in sys.modules meanwhile
        try:
            return self.__dict__[attr]
        except KeyError:
            raise AttributeError(f"module {self.__name__!r} has no attribute {attr!r}") from None


def defer_unused_numpy_modules() -> tuple[str, ...]:
    """Register each module of :data:`DEFERRED` that is not imported yet, and that numpy itself loads on demand, as a
    :class:`DeferredModule` (also set as numpy's attribute, where numpy's own ``__getattr__`` would import it).
    Returns the names deferred; a numpy that imports them eagerly, or a loader that cannot run a module into a given
    object, defers nothing."""
    import numpy

    deferred = []
    for name in DEFERRED:
        attr = name.rpartition(".")[2]
        if name in sys.modules or attr in vars(numpy):
            continue
        spec = importlib.util.find_spec(name)
        loader = None if spec is None else spec.loader
        if spec is None or loader is None or not hasattr(loader, "exec_module") or loader.create_module(spec) is not None:
            continue   # e.g. an extension module: its loader makes the module object itself
        sys.modules[name] = module = DeferredModule(spec, loader)
        setattr(numpy, attr, module)
        deferred.append(name)
    return tuple(deferred)
