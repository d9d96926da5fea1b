"""API keys: parsing, authentication and the scopes a request may run with."""

from __future__ import annotations

import json

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from _cli import run_trails
from trails.errors import AuthenticationError, ConfigurationError, PermissionDeniedError
from trails.service.keys import KeyRing, digest

SECRET_A, SECRET_B = "a-secret-of-some-length", "b-secret-of-some-length"

TOML = f"""
[[key]]
label = "analyst"
sha256 = "{digest(SECRET_A)}"
scopes = ["public", "finance"]

[[key]]
label = "ops"
secret = "{SECRET_B}"
scopes = ["*"]
rights = ["read", "write"]
"""


def test_a_toml_file_maps_secrets_to_labels_scopes_and_rights(tmp_path):
    path = tmp_path / "keys.toml"
    path.write_text(TOML)
    ring = KeyRing.load(path, environ={})
    assert ring is not None and len(ring) == 2
    analyst = ring.authenticate(SECRET_A)
    assert analyst.label == "analyst"
    assert analyst.scopes == frozenset({"public", "finance"})
    assert analyst.can("read") and not analyst.can("write")
    ops = ring.authenticate(SECRET_B)
    assert ops.label == "ops" and ops.scopes is None and ops.can("write")


def test_keys_come_from_the_environment_inline_or_by_file(tmp_path):
    inline = (f'{{"key": [{{"label": "x", "secret": "{SECRET_A}", "scopes": ["s"]}}]}}')
    ring = KeyRing.load(environ={"TRAILS_API_KEYS": inline})
    assert ring is not None and ring.authenticate(SECRET_A).label == "x"
    path = tmp_path / "k.toml"
    path.write_text(TOML)
    ring = KeyRing.load(environ={"TRAILS_API_KEYS_FILE": str(path), "TRAILS_API_KEYS": inline})
    assert ring is not None and ring.authenticate(SECRET_A).label == "analyst"
    assert KeyRing.load(environ={}) is None


@pytest.mark.parametrize("secret", [None, "", "not-a-key-anyone-has", SECRET_A + " "])
def test_unknown_or_missing_secrets_are_refused(secret):
    ring = KeyRing.parse(TOML, source="keys.toml")
    with pytest.raises(AuthenticationError):
        ring.authenticate(secret)


def test_a_scoped_key_confines_every_request_to_its_scopes():
    analyst = KeyRing.parse(TOML, source="k").authenticate(SECRET_A)
    assert analyst.confine(None) == ["finance", "public"]
    assert analyst.confine(["public"]) == ["public"]
    with pytest.raises(PermissionDeniedError, match="'hr'"):
        analyst.confine(["public", "hr"])
    with pytest.raises(PermissionDeniedError, match="write"):
        analyst.require("write")


@given(granted=st.sets(st.sampled_from("abcdef"), min_size=1),
       asked=st.none() | st.lists(st.sampled_from("abcdefgh"), min_size=1))
def test_confined_scopes_are_never_outside_the_grant(granted, asked):
    text = ('[{{"label": "k", "secret": "{}", "scopes": {}}}]'.format(SECRET_A, str(sorted(granted)).replace("'", '"')))
    key = KeyRing.parse(text, source="k").authenticate(SECRET_A)
    try:
        scopes = key.confine(asked)
    except PermissionDeniedError:
        assert asked is not None and not set(asked) <= granted
        return
    assert scopes is not None and set(scopes) <= granted and scopes


@pytest.mark.parametrize("text, message", [
    ("", "neither TOML nor JSON|holds no keys"),
    ("[[key]]\nlabel='x'\nscopes=['a']\n", "exactly one of"),
    (f"[[key]]\nlabel='x'\nsecret='{SECRET_A}'\n", "scopes"),
    (f"[[key]]\nlabel='x'\nsecret='{SECRET_A}'\nscopes=['a b']\n", "scope names"),
    (f"[[key]]\nlabel='x'\nsecret='{SECRET_A}'\nscopes=['a']\nrights=['admin']\n", "rights"),
    ("[[key]]\nlabel='x'\nsha256='abc'\nscopes=['a']\n", "64 hexadecimal"),
    ("[[key]]\nlabel='x'\nsecret='short'\nscopes=['a']\n", "16 characters"),
    (f"[[key]]\nlabel='x'\nsecret='{SECRET_A}'\nscopes=['a']\nscope=['b']\n", "unknown field"),
    ((f"[[key]]\nlabel='x'\nsecret='{SECRET_A}'\nscopes=['a']\n"
     f"[[key]]\nlabel='x'\nsecret='{SECRET_B}'\nscopes=['a']\n"), "more than one key"),
    ("{not json", "neither TOML nor JSON"),
])
def test_malformed_key_files_say_what_is_wrong(text, message):
    with pytest.raises(ConfigurationError, match=message):
        KeyRing.parse(text, source="keys.toml")


def test_a_missing_keys_file_is_a_configuration_error(tmp_path):
    with pytest.raises(ConfigurationError, match="trails keys add"):
        KeyRing.load(tmp_path / "nope.toml", environ={})


@settings(max_examples=25, deadline=None)
@given(label=st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=30)
       .filter(str.strip))
@example(label="analyst \N{GRINNING FACE}")  # a character outside the BMP: JSON's \ud83d pair is no TOML
@example(label="-0")  # looks like an option: the terminal passes it after "--"
def test_a_key_added_from_the_terminal_is_read_back_with_its_label(tmp_path_factory, label):
    """`trails keys add` writes TOML that the keys file reader reads back, whatever the label
    holds (quotes, backslashes, control characters, any script)."""
    keys = tmp_path_factory.mktemp("keys") / "keys.toml"
    first = run_trails("keys", "add", "first", "--keys", keys, "--scope", "public")
    added = run_trails("keys", "add", "--keys", keys, "--scope", "public", "--scope", "finance",
                       "--write", "--json", "--", label)
    assert first.returncode == 0 and added.returncode == 0, added.stderr
    ring = KeyRing.load(keys)
    key = ring.authenticate(json.loads(added.stdout)["secret"])
    assert (key.label, sorted(key.scopes)) == (label.strip(), ["finance", "public"])
    assert key.can("write")


@pytest.mark.parametrize("command", [["keys", "add", "analyst", "--scope", "public"],
                                     ["--db", "{db}", "serve", "--port", "0"]])
def test_a_folder_given_as_the_keys_file_is_a_user_error_naming_it(tmp_path, command):
    """`trails keys add --keys DIR` exited 3 ("cannot read DIR: Is a directory"), the code
    trails gives a context whose own files cannot be read; serve said to create the file."""
    folder = tmp_path / "secrets"
    folder.mkdir()
    seeded = tmp_path / "kb"
    assert run_trails("--db", seeded, "init", "--model", "mock:8").returncode == 0
    out = run_trails(*[part.format(db=seeded) for part in command], "--keys", folder)
    assert out.returncode == 1, out.stderr
    assert f"{folder} is a folder" in out.stderr and "Traceback" not in out.stderr
    assert "Create it" not in out.stderr
    assert list(folder.iterdir()) == []
