"""Suite-wide settings.

The example policy pack is active in every agent of an environment where it is installed; the
suite switches it off as an operator would (BANDONEON_DISABLED_PLUGINS), and the pack's own
tests switch it back on.
"""

import os

os.environ.setdefault("BANDONEON_DISABLED_PLUGINS", "policy-example")
