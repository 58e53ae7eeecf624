"""The top-level `graphc` command: `--version` (API.md: "`graphc --version` prints the
version") and every subcommand's `--help`."""
import pytest

import graphc as gc
from graphc.cli import SUBCOMMANDS, main


def test_version_prints_the_version_and_exits_0(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    out, _ = capsys.readouterr()
    assert out.strip() == f"graphc {gc.__version__}"


@pytest.mark.parametrize("command", sorted(SUBCOMMANDS))
def test_every_subcommand_has_help(command, capsys):
    with pytest.raises(SystemExit) as e:
        main([command, "--help"])
    assert e.value.code == 0
    assert "usage: graphc " + command in capsys.readouterr().out
