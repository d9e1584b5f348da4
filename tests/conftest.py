"""Every test plans on the reference machine's clock: a calibration the user keeps in
their cache (`bigbn plan --calibrate`) must not change what tests of `bigbn plan` see."""

import pytest


@pytest.fixture(autouse=True)
def _no_user_calibration(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("BIGBN_CALIBRATION", str(tmp_path_factory.getbasetemp() / "no-calibration.json"))
