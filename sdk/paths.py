"""Where the SDK's own files are (board files, profiles, templates, SConstruct) and its
version: a module of its own, so that the modules reading them need not import the root
package (whose __init__ reaches the plugin and Python APIs) and no import circle forms."""
from pathlib import Path

__version__ = "0.1.0"

PACKAGE_DIR = Path(__file__).resolve().parent
TEMPLATES = PACKAGE_DIR / "templates"  # sdk/templates/<set>/, common/, report/: what code generation renders
