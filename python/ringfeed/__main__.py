"""The ringfeed command from the Python package: `ringfeed ARGS` (the
package's console script) and `python -m ringfeed ARGS` run the C command
(gen, bench, bench --diagnose, tune, pack, index, state, cache) with ARGS,
in place of this process (os.execv: its exit status is the command's).

Where the command is:
  ringfeed/_bin/ringfeed   in a wheel (meson.build installs it there; linked
                           with the library's objects, its libraries in
                           ringfeed.libs/ beside the package, as the extension's),
                           and where an editable install (pip install -e .)
                           maps it: its build folder's ringfeed
  BUILD/ringfeed           in a meson build folder, for the package that
                           BUILD/python/ringfeed is (PYTHONPATH=BUILD/python)
  ringfeed on PATH         a `meson install` of the C library and the package,
                           which puts the command in bindir (only an
                           executable ELF file: never this package's own
                           console script, which would run itself)
"""

import os
import shutil
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _is_command(path):
    """An executable ELF file (not a script such as pip's console scripts)."""
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        return False
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def _candidates():
    yield os.path.join(_HERE, "_bin", "ringfeed")
    # an editable install (pip install -e .): meson-python's loader maps the
    # package's installed files to the build folder's (Python 3.9 and later)
    try:
        from importlib.resources import files
        mapped = files("ringfeed") / "_bin" / "ringfeed"
    except Exception:   # noqa: BLE001 - no resources: the other places still count
        mapped = None
    if isinstance(mapped, os.PathLike):
        yield os.fspath(mapped)
    build = os.path.dirname(os.path.dirname(_HERE))   # BUILD/python/ringfeed -> BUILD
    if os.path.isdir(os.path.join(build, "meson-info")):
        yield os.path.join(build, "ringfeed")
    on_path = shutil.which("ringfeed")
    if on_path:
        yield on_path


def command():
    """The path of the ringfeed command this package runs, or None."""
    for path in _candidates():
        if _is_command(path):
            return path
    return None


def main(argv=None):
    args = sys.argv[1:] if argv is None else list(argv)
    path = command()
    if path is None:
        sys.stderr.write(
            "ringfeed: the ringfeed command is missing from this installation of the "
            f"Python package (looked for {os.path.join(_HERE, '_bin', 'ringfeed')}, a meson "
            "build folder's ringfeed, and an executable ringfeed on PATH). The wheel "
            "(pip install ringfeed) carries it; a build from source has it in its build "
            "folder (meson setup build && ninja -C build: build/ringfeed).\n")
        return 127
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(path, ["ringfeed"] + args)


if __name__ == "__main__":
    sys.exit(main())
