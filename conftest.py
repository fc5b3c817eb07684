"""Suite-wide settings.

The example policy pack is active in every agent of an environment where it is installed; the
suite switches it off as an operator would (BANDONEON_DISABLED_PLUGINS), and the pack's own
tests switch it back on.
"""

import os

os.environ.setdefault("BANDONEON_DISABLED_PLUGINS", "policy-example")

# The plugin template is a folder to copy, not installed with the others: `tox -e alone-template` tests it.
collect_ignore_glob = [] if os.environ.get("BANDONEON_TEST_TEMPLATE") else ["plugins/_template/*"]
