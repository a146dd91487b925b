"""The serve config file: typed keys, and a start that fails naming the key that is wrong."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from bridge.cli.serve import add_arguments, config_from_args
from bridge.cli.serve_config import ConfigError, ServeTable, load_serve_table


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(list(argv))


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bridge.toml"
    path.write_text(text)
    return path


def test_file_values_apply_and_flags_win(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        '[serve]\nrequest_port = 6000\nidle_timeout = 3\nmax_sessions = 8\nosc = "vmc://127.0.0.1:39539"\n',
    )
    config = config_from_args(_args("--config", str(path), "--max-sessions", "4"))
    assert config.transport.request_port == 6000
    assert config.idle_timeout_s == 3.0
    assert config.max_sessions == 4  # the flag wins
    assert load_serve_table(path).present()["osc"] == "vmc://127.0.0.1:39539"


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("[serve]\nrequest_prot = 6000\n", "request_prot"),  # a typo is not silently ignored
        ('[serve]\nrequest_port = "6000"\n', "request_port"),
        ("[serve]\nmax_sessions = 2.5\n", "max_sessions"),
        ('[serve]\ninsecure_remote = "yes"\n', "insecure_remote"),
        ("[serv]\nhost = '127.0.0.1'\n", "serv"),
        ("[serve]\nosc = [1, 2]\n", "osc"),
    ],
)
def test_unknown_key_or_wrong_type_names_the_key(tmp_path: Path, text: str, named: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError, match=named):
        config_from_args(_args("--config", str(path)))


def test_unreadable_or_not_toml(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not TOML"):
        load_serve_table(_write(tmp_path, "[serve\n"))
    with pytest.raises(ConfigError, match=r"missing\.toml"):
        load_serve_table(tmp_path / "missing.toml")


def test_every_key_is_a_serve_flag() -> None:
    """Each file key has the flag of the same name, so `pick` finds both."""
    flags = vars(_args())
    assert set(ServeTable.__struct_fields__) <= set(flags)
