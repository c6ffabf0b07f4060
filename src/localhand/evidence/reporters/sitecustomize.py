"""Python's start-up hook in a check's interpreter (this folder is first on its ``PYTHONPATH``):
it runs the ``sitecustomize`` it hides first, then, with ``LOCALHAND_REPORT_DIR`` set, puts
``report_to_localhand``'s recorder on unittest once unittest is imported."""

import importlib.machinery
import importlib.util
import os
import sys


def _run_hidden() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module  # as Python would have it
    spec.loader.exec_module(module)


class _WatchUnittest:
    """Loads ``unittest`` as usual, then puts the recorder on it (nothing is imported sooner).
    Asked again for it (``python -m unittest`` looks it up twice), it wraps each spec it gives."""

    looking = False

    @classmethod
    def find_spec(cls, name: str, path: object = None, target: object = None) -> object:
        if name != "unittest" or cls.looking:
            return None
        cls.looking = True
        try:
            spec = importlib.util.find_spec(name)
        finally:
            cls.looking = False
        if spec is None or spec.loader is None:
            return spec
        load = spec.loader.exec_module

        def exec_module(module: object) -> None:
            load(module)  # type: ignore[arg-type]
            import report_to_localhand  # type: ignore[import-not-found]  # beside this one

            report_to_localhand.install(module)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


try:
    _run_hidden()
finally:
    if os.environ.get("LOCALHAND_REPORT_DIR") and "unittest" not in sys.modules:
        sys.meta_path.insert(0, _WatchUnittest)  # type: ignore[arg-type]
