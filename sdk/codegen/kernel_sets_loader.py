"""Import every kernel set module so that it registers itself (one place, no if-chains)."""
import importlib
import pkgutil

from .. import codegen


def load_all() -> None:
    for module in pkgutil.iter_modules(codegen.__path__):
        if module.name.startswith("kset_"):
            importlib.import_module(f"{codegen.__name__}.{module.name}")
