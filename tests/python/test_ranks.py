"""Many processes, one run: "{rank}" / "{local_rank}" come from the
launcher's variables, and a profile never replaces one another process wrote
while this session ran. Kernels come from the fake backend."""
import os

import pytest

import cproton as proton
from cproton import _cproton as C

LAUNCHER_VARS = ("RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "PMI_RANK", "LOCAL_RANK",
                 "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID")


@pytest.fixture
def no_launcher(monkeypatch):
    for var in LAUNCHER_VARS:
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


@pytest.mark.parametrize("rank_var,local_var", [("RANK", "LOCAL_RANK"),
                                                ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK"),
                                                ("SLURM_PROCID", "SLURM_LOCALID"),
                                                ("PMI_RANK", "MPI_LOCALRANKID")])
def test_rank_placeholders_follow_the_launcher(no_launcher, rank_var, local_var):
    no_launcher.setenv(rank_var, "5")
    no_launcher.setenv(local_var, "1")
    sid = proton.start("r{rank}_l{local_rank}", backend="fake")
    proton.finalize(sid)
    assert os.path.exists("r5_l1.hatchet")


def test_no_launcher_is_rank_zero(no_launcher):
    proton.finalize(proton.start("solo_{rank}", backend="fake"))
    assert os.path.exists("solo_0.hatchet")


def test_a_profile_written_meanwhile_is_kept(no_launcher):
    sid = proton.start("shared", backend="fake")
    with proton.scope("mine"):
        C._fake_launch("k")
    with open("shared.hatchet", "w") as f:  # another process of the run
        f.write("theirs")
    with pytest.warns(proton.CprotonWarning, match="written by another process"):
        proton.finalize(sid)
    with open("shared.hatchet") as f:
        assert f.read() == "theirs"
    assert os.path.exists("shared.1.hatchet")


def test_an_earlier_runs_profile_is_replaced(no_launcher):
    with open("old.hatchet", "w") as f:
        f.write("last run")
    os.utime("old.hatchet", (1, 1))
    proton.finalize(proton.start("old", backend="fake"))
    with open("old.hatchet") as f:
        assert f.read().startswith("[")


@pytest.mark.parametrize("value", ["\u00b2", "\u0663", "1\u00b2"])
def test_non_ascii_digits_are_no_rank(no_launcher, value):
    # "²" (superscript two) and "٣" (Arabic-Indic three) are digits to
    # str.isdigit; the C side (strtol) reads no number there: no rank, as
    # in the injection, instead of a ValueError from start().
    no_launcher.setenv("RANK", value)
    no_launcher.setenv("SLURM_PROCID", "4")
    proton.finalize(proton.start("nd_{rank}", backend="fake"))
    assert os.path.exists("nd_4.hatchet")
