"""``pytest examples/plugin`` imports the plugin from this source directory (installed or not)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
