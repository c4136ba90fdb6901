"""A pytest plugin for the vendored array-api-tests: the suite's Hypothesis profile without shrinking.

Loaded with ``-p ferro_hypothesis`` after the suite's own conftest set its
profile. With ``--derandomize`` the examples are fixed; shrinking a failure
only makes its report smaller, and costs minutes on tests listed as
expected failures, so CI skips it.
"""

from __future__ import annotations

import pytest
from hypothesis import Phase, settings


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    """Register and load ``array-api-tests-ferro``: the suite's profile minus the shrink and explain phases."""
    settings.register_profile("array-api-tests-ferro", parent=settings.get_profile("array-api-tests"),
                              phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target])
    settings.load_profile("array-api-tests-ferro")
