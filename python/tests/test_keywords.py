"""test_keywords.py - what help(ringfeed.Loader), inspect.signature() and the
typing stubs (__init__.pyi) say about Loader's keywords is what Loader
takes: every keyword of the published signature is in the docstring with
its default and, for the enum keywords, the names it takes; the signature
holds every rf_config field a user sets and its defaults change nothing;
the stubs list the same keywords, defaults and names. Also
ringfeed.__version__, py.typed and defaults() by name. Needs no torch."""

import ast
import inspect
import os
import pydoc
import re
import subprocess

import pytest

import ringfeed
from ringfeed import _keywords, _ringfeed

RINGFEED = os.environ.get("RINGFEED", "build/ringfeed")
PACKAGE = os.path.dirname(ringfeed.__file__)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("keywords") / "jpegs"
    subprocess.run([RINGFEED, "gen", "--out", str(root), "--count", "12", "--classes", "2",
                    "--threads", "1"], check=True, stdout=subprocess.DEVNULL)
    return str(root)


def published():
    """Loader's keyword-only parameters as inspect.signature() gives them."""
    return [p for p in inspect.signature(ringfeed.Loader).parameters.values()
            if p.kind is inspect.Parameter.KEYWORD_ONLY]


def field_of(key):
    return _keywords.RENAMED.get(key, key)


def doc_line(key):
    lines = [l.strip() for l in ringfeed.Loader.__doc__.splitlines()
             if l.strip().startswith(key + " : ")]
    assert len(lines) == 1, f"{key}: {len(lines)} lines in the docstring"
    return lines[0]


def test_every_keyword_is_in_the_docstring_with_its_default():
    params = published()
    assert len(params) > 40
    for p in params:
        assert doc_line(p.name).endswith(f", default {p.default!r}"), doc_line(p.name)
    # help() shows the signature and the list
    text = pydoc.render_doc(ringfeed.Loader, renderer=pydoc.plaintext)
    for p in params:
        assert f"{p.name}={p.default!r}" in text, p.name
        assert f"{p.name} : " in text, p.name


def test_enum_keywords_list_every_name_they_take():
    for p in published():
        field = field_of(p.name)
        if field not in _ringfeed.ENUM_VALUES:
            continue
        line = doc_line(p.name)
        for value, name in _ringfeed.ENUM_NAMES[field].items():
            assert repr(name) in line, (p.name, name, line)
        if p.default is not None:
            assert p.default in _ringfeed.ENUM_VALUES[field]
        # the other spellings (uring_fixed for fixed) are named in the text
        text = ringfeed.Loader.__doc__
        for name in _ringfeed.ENUM_VALUES[field]:
            assert repr(name) in text, (p.name, name)


def test_every_keyword_has_a_description():
    names = {"source"} | {p.name for p in published()}
    assert set(_keywords.HELP) == names


def test_the_signature_holds_every_field_a_user_sets():
    keys = {p.name for p in published()}
    fields = set(_ringfeed.defaults()) - _keywords.INTERNAL
    assert {field_of(k) for k in keys} >= fields
    # the package's own keywords are those of __init__'s code
    code = ringfeed.Loader.__init__.__code__
    own = set(code.co_varnames[code.co_argcount:code.co_argcount + code.co_kwonlyargcount])
    assert own == keys - {k for k in keys if field_of(k) in fields}


def effective(config):
    """What the extension sets in rf_config: the C defaults, then config;
    floats as float32 holds them."""
    def f32(v):
        if isinstance(v, float):
            return _keywords.float32(v)
        if isinstance(v, tuple):
            return tuple(f32(x) for x in v)
        return v
    return {k: f32(v) for k, v in {**_ringfeed.defaults(), **config}.items()}


def test_the_published_defaults_change_nothing(data):
    """Every keyword given at its published default: the same loader."""
    every = {p.name: p.default for p in published()}
    plain = ringfeed.Loader(data, batch_size=4, threads=1)
    every.update(batch_size=4, threads=1)
    spelled = ringfeed.Loader(data, **every)
    assert effective(spelled._config) == effective(plain._config)
    assert spelled._c.order() == plain._c.order()
    assert spelled._c.state_save() == plain._c.state_save()   # it holds the settings' hash
    plain.close()
    spelled.close()
    with pytest.raises(TypeError, match="unexpected keyword argument 'flipp'"):
        ringfeed.Loader(data, flipp=0.5)


def test_defaults_gives_names_not_numbers():
    d = ringfeed.defaults()
    c = _ringfeed.defaults()
    assert set(d) == set(c)
    for field, value in d.items():
        if field in _ringfeed.ENUM_NAMES:
            assert value == _ringfeed.ENUM_NAMES[field][c[field]], field
            assert isinstance(value, str), field
        else:
            assert value == c[field], field
    assert d["dtype"] == "uint8" and d["layout"] == "hwc" and d["io_path"] == "auto"


def stub_init():
    """Loader.__init__ in __init__.pyi."""
    tree = ast.parse(open(os.path.join(PACKAGE, "__init__.pyi")).read())
    loader = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Loader")
    return next(n for n in loader.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")


def literal_names(annotation):
    """The strings of every Literal[...] in an annotation."""
    names = set()
    for node in ast.walk(annotation):
        if (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)
                and node.value.id == "Literal"):
            names |= {e.value for e in ast.walk(node.slice) if isinstance(e, ast.Constant)}
    return names


def test_the_stubs_list_the_same_keywords_defaults_and_names():
    init = stub_init()
    assert [a.arg for a in init.args.args] == ["self", "source"]
    stub = {a.arg: (ast.literal_eval(d), a.annotation)
            for a, d in zip(init.args.kwonlyargs, init.args.kw_defaults)}
    params = published()
    assert list(stub) == [p.name for p in params]
    for p in params:
        default, annotation = stub[p.name]
        assert default == p.default, (p.name, default, p.default)
        field = field_of(p.name)
        if field in _ringfeed.ENUM_VALUES:
            assert literal_names(annotation) == set(_ringfeed.ENUM_VALUES[field]), p.name
    assert literal_names(stub["hold"][1]) == {"gc", "next"}
    # what the package exports is in the stubs
    tree = ast.parse(open(os.path.join(PACKAGE, "__init__.pyi")).read())
    defined = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    defined |= {n.target.id for n in tree.body if isinstance(n, ast.AnnAssign)}
    assert set(ringfeed.__all__) <= defined


def test_version_and_py_typed():
    assert re.fullmatch(r"\d+\.\d+\.\d+", ringfeed.__version__)
    # the C library's own (rf_version_string(), which meson's version makes)
    out = subprocess.run([RINGFEED, "--version"], check=True, capture_output=True,
                         text=True).stdout
    assert out.startswith(f"ringfeed {ringfeed.__version__} "), out
    assert os.path.isfile(os.path.join(PACKAGE, "py.typed"))
