"""Suite-wide settings.

The example policy pack is active in every agent of an environment where it is installed. By
default the suite switches it off as an operator would (BANDONEON_DISABLED_PLUGINS); with
``BANDONEON_TEST_WITH_PACK=1`` (``tox -e packed``) every test runs under it, except tests marked
``pack_free``, which need an environment without packs and say so. The ``example_pack`` fixture
switches the pack on for one test in any environment where it is installed.
"""

import importlib.metadata
import os
import tempfile

import pytest

PACK = "policy-example"
WITH_PACK = os.environ.get("BANDONEON_TEST_WITH_PACK") == "1"

if not WITH_PACK:
    os.environ.setdefault("BANDONEON_DISABLED_PLUGINS", PACK)

# The human plugin seals approvals with a key it keeps in the user's state folder: the suite's
# key lives in a folder of its own, never in the home of whoever runs the tests.
os.environ.setdefault("BANDONEON_HUMAN_KEY", os.path.join(tempfile.mkdtemp(prefix="bandoneon-tests-"), "human-approvals.key"))

try:  # property tests judge what the code does, never how fast a shared CI machine ran it
    from hypothesis import HealthCheck, settings

    settings.register_profile("bandoneon", deadline=None, suppress_health_check=[HealthCheck.too_slow])
    settings.load_profile("bandoneon")
except ImportError:  # an env without hypothesis has no property tests
    pass

# The plugin template is a folder to copy, not installed with the others: `tox -e alone-template` tests it.
collect_ignore_glob = [] if os.environ.get("BANDONEON_TEST_TEMPLATE") else ["plugins/_template/*"]


def _refresh():
    import bandoneon

    bandoneon.refresh_plugins()


@pytest.fixture(autouse=True)
def _pack_free(request, monkeypatch):
    """Under ``BANDONEON_TEST_WITH_PACK=1``, a test marked ``pack_free`` gets the pack switched off."""
    if not (WITH_PACK and request.node.get_closest_marker("pack_free")):
        yield
        return
    monkeypatch.setenv("BANDONEON_DISABLED_PLUGINS", PACK)
    _refresh()
    yield
    monkeypatch.undo()
    _refresh()


@pytest.fixture
def example_pack(monkeypatch):
    """The example policy pack active for this test, as an operator who installed it would have it."""
    try:
        importlib.metadata.distribution("bandoneon-policy-example")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("bandoneon-policy-example is not installed: this test proves composition with it")
    monkeypatch.delenv("BANDONEON_DISABLED_PLUGINS", raising=False)
    monkeypatch.delenv("BANDONEON_PLUGINS", raising=False)
    _refresh()
    yield
    monkeypatch.undo()
    _refresh()
