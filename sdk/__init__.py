"""cuvil-sdk: compile ONNX models into dependency-free C for microcontrollers and edge boards."""
from .paths import PACKAGE_DIR, __version__  # noqa: F401  (cuvil_sdk.PACKAGE_DIR, cuvil_sdk.__version__)


def __getattr__(name: str):
    """`cuvil_sdk.register_op` and `cuvil_sdk.replace_kernel`: the plugin API (sdk/plugins.py);
    `cuvil_sdk.build`, `BuildResult` and `cuvil_sdk.compile`: the Python API (sdk/api.py); imported on first use so
    that `import cuvil_sdk` stays light."""
    if name in ("register_op", "replace_kernel"):
        from . import plugins
        return getattr(plugins, name)
    if name in ("build", "BuildResult", "compile", "CompiledModel"):
        from . import api
        return getattr(api, name)
    raise AttributeError(f"module 'cuvil_sdk' has no attribute {name!r}")
