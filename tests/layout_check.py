#!/usr/bin/env python3
"""layout_check.py - proof that a source kind or a transport lives in its
own files and its table row (issue 37): fails when a kind's or a scheme's
name appears in code under src/ (comments stripped; strings kept, since a
scheme or an extension in a string is code that knows it) outside that
unit's own files, the tables, and the places allowed below with a reason.
docs/DESIGN.md's "Adding a source kind" and "Adding a transport" name the
same places; the two must agree.

Each violation prints as FILE:LINE: NAME (kind X | transport X); a known
leak listed below that no longer occurs fails too (the list stays exact).

Usage: layout_check.py [ROOT]   (ROOT: the repository, default: this
file's parent folder's parent). Exit 0 clean, 1 violations."""
import os
import re
import sys

# ---- the units: each one's names and its own files ------------------------

# (what, name, patterns, own files or folders (a trailing '/' is a folder))
UNITS = [
    ("kind", "files", [
        r"\brfi?_source_files\b", r"\bRF_KIND_FILES\b", r"\bRF_(?:INDEX|SOURCE)_FILES\b",
        r"\brfi?_files_\w+", r"\"source/files\w*\.h\"",
    ], [
        "src/source/files.c", "src/source/files.h", "src/source/files_walk.c",
        "src/source/files_manifest.c",
    ]),
    ("kind", "tar", [
        r"\brfi?_tar_\w+", r"\bRF_TAR_\w+", r"\bRF_KIND_TAR\b", r"\brfi?_source_tar\w*",
        r"\bRF_SHARDS_TAR\b", r"\bRF_(?:INDEX|SOURCE)_TAR\b", r"\"source/tar\w*\.h\"",
        r"\"[^\"\n]*\.tar\b[^\"\n]*\"",   # a string naming a .tar file
    ], [
        "src/source/tar.c", "src/source/tar.h", "src/source/tar_samples.c",
        "src/source/tar_scan.c", "src/source/tar_scan.h", "src/source/tar_shards.c",
    ]),
    ("kind", "tokens", [
        # rf_token_row_*: the RF_STAGE_TOKENS stage (src/transform/token_row.c),
        # a row of the stage switch, which a kind's stage() names; not the kind
        r"\brfi?_token_(?!row)\w+", r"\bRF_TOKEN_(?!ROW)\w+", r"\bRF_KIND_TOKENS\b",
        r"\brfi?_source_tokens\b", r"\bRF_SHARDS_TOKENS\b", r"\"source/token_\w+\.h\"",
        r"\"[^\"\n]*\.bin\.zst\b[^\"\n]*\"",
    ], [
        "src/source/token_shard.c", "src/source/token_shard.h", "src/source/token_shards.c",
        "src/source/token_windows.c", "src/source/token_windows.h",
    ]),
    ("kind", "parquet", [
        r"\brfi?_pq_\w+", r"\bRF_PQ_\w+", r"\brfi?_thrift_\w+", r"\bRF_THRIFT_\w+",
        r"\"source/parquet_\w+\.h\"", r"\bRF_KIND_PARQUET\b", r"\brfi?_source_parquet\b",
        r"\"[^\"\n]*\.parquet\b[^\"\n]*\"",   # a string naming a .parquet file
    ], [
        "src/source/parquet.c", "src/source/parquet_table.c", "src/source/parquet_table.h",
        "src/source/parquet_file.c", "src/source/parquet_file.h", "src/source/parquet_cache.c",
        "src/source/parquet_thrift.c", "src/source/parquet_thrift.h",
        "src/source/parquet_meta.c", "src/source/parquet_meta.h", "src/source/parquet_pages.c",
        "src/source/parquet_encoding.c", "src/source/parquet_encoding.h",
        "src/source/parquet_codec.c", "src/source/parquet_codec.h",
        "src/source/parquet_page.c", "src/source/parquet_page.h", "src/source/parquet_values.c",
        "src/source/parquet_hf.c", "src/source/parquet_hf.h",
        "src/source/parquet_opened.c", "src/source/parquet_opened.h",
        "src/source/parquet_columns.c", "src/source/parquet_columns.h",
    ]),
    # The file row is the local file system: the read engine's own paths
    # (pread, io_uring), every source's; it has no code of its own outside
    # its row. A "file://" scheme would be its name.
    ("transport", "file", [r"\"file://"], []),
    ("transport", "http", [
        r"\brfi?_http_\w+", r"\bRF_HTTP_\w+", r"\"remote/http(?:_check|_date)?\.h\"",
        r"\"https?://", r"\bcurl_\w+", r"\bCURL\w*", r"<curl/",
    ], [
        "src/remote/http.c", "src/remote/http.h", "src/remote/http_check.c",
        "src/remote/http_check.h", "src/remote/http_date.c", "src/remote/http_date.h",
        # set-up requests (rf_fetch): HTTP requests through libcurl
        "src/remote/fetch.c", "src/remote/fetch.h",
    ]),
    ("transport", "s3", [
        r"\brfi?_s3_\w+", r"\bRF_S3_\w+", r"\"s3://", r"\"remote/s3\.h\"",
        r"\brfi?_creds?\w*", r"\bRF_CRED\w*", r"\"remote/credential\w*\.h\"",
    ], [
        "src/remote/s3.c", "src/remote/s3.h", "src/remote/credentials.c",
        "src/remote/credentials.h", "src/remote/credential_sources.c",
        "src/remote/credential_sources.h",
    ]),
    ("transport", "hf", [
        r"\brfi?_hf_\w+", r"\bRF_HF_\w+", r"\"hf://", r"\"remote/hf\w*\.h\"",
    ], [
        "src/remote/hf.c", "src/remote/hf.h", "src/remote/hf_tree.c", "src/remote/hf_tree.h",
    ]),
]

# The tables: every kind may be named in the kind table, every transport in
# the transport table (their rows, their tags, the probe order).
TABLES = {
    "kind": ["src/source/source.c", "src/source/source.h"],
    "transport": ["src/remote/transport.c", "src/remote/transport.h"],
}

# ---- allowed: a unit's presentation or its format's writer ----------------

# (what, name or "*", file or folder, reason)
ALLOW = [
    ("kind", "tar", "src/pack/",
     "ringfeed pack writes tar shards: the format's writer (tar_write.c, pack_loop.c, "
     "pack.c), not a reader of a source"),
    ("kind", "tokens", "src/pack/",
     "ringfeed pack --tokens and gen write token shards: the format's writer "
     "(token_pack.c, token_gen.c, tokens.h)"),
    ("kind", "files", "src/pack/pack.c",
     "pack's input is a files source (it refuses others by RF_KIND_FILES)"),
    ("kind", "*", "src/cli/",
     "the command line's help and usage name the kinds and their file names for users, "
     "and pack/gen drive the writers in src/pack/"),
    ("transport", "*", "src/cli/",
     "the command line's help and usage name the schemes for users"),
    ("kind", "*", "src/util/names.c",
     "the names table of the public enums: source_kind = auto|files|tar, as users write it"),
    ("transport", "http", "src/remote/s3.c",
     "an S3 endpoint is an http(s) URL: the s3 row builds the https URL it reads "
     "(s3 is read over the http row)"),
    ("transport", "http", "src/remote/s3.h", "as above"),
    ("transport", "http", "src/remote/hf.c",
     "the Hub is an https endpoint: the hf row builds the resolve URL it reads and "
     "words its hint after the http row's (hf is read over the http row)"),
    ("transport", "http", "src/remote/hf.h", "as above"),
]

# ---- known leaks: real, listed with why, to go in issue 37's remainder ----

# (what, name, file, reason; TODO)
KNOWN = [
]


def strip_comments(text):
    """C/C++ comments blanked (newlines kept, so line numbers hold);
    strings and character literals kept as they are."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(c if c == "\n" else " " for c in text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text[i] in "\"'":
            q, j = text[i], i + 1
            while j < n and text[j] != q and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def under(path, places):
    return any(path == p or (p.endswith("/") and path.startswith(p)) for p in places)


# ---- layers: folders that must not include from above ----------------------
# The read engine knows no sample, source or transport: it is given its URL
# reader and signer (rf_io_params.url_reader, .sign) by those above it, so
# src/io/ includes only itself, util/ and the public headers. An include
# of remote/, source/, index/, pipeline/ ... from io/ runs up the tree.
LAYERS = [
    ("src/io/", ["io/", "util/", "ringfeed.h", "rf_config.h"]),
]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def layer_violations(files, code):
    out = []
    for folder, may in LAYERS:
        for f in files:
            if not f.startswith(folder):
                continue
            for lineno, line in enumerate(code[f], 1):
                m = INCLUDE.match(line)
                if m and not any(m.group(1).startswith(x) for x in may):
                    out.append("%s:%d: includes %s (%s may include only %s)" % (
                        f, lineno, m.group(1), folder, ", ".join(may)))
    return out


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))
    files = []
    for dirpath, _, names in os.walk(os.path.join(root, "src")):
        for name in names:
            if name.endswith((".c", ".h", ".cu")):
                files.append(os.path.relpath(os.path.join(dirpath, name), root))
    files.sort()
    code = {}
    for f in files:
        with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
            code[f] = strip_comments(fh.read()).split("\n")

    bad, known_seen = [], set()
    for what, name, patterns, own in UNITS:
        rx = re.compile("|".join("(?:%s)" % p for p in patterns))
        allowed = own + TABLES[what] + [p for w, n, p, _ in ALLOW
                                         if w == what and n in (name, "*")]
        known = {p for w, n, p, _ in KNOWN if w == what and n == name}
        for f in files:
            if under(f, allowed):
                continue
            for lineno, line in enumerate(code[f], 1):
                for m in rx.finditer(line):
                    if f in known:
                        known_seen.add((what, name, f))
                    else:
                        bad.append("%s:%d: %s (%s %s)" % (f, lineno, m.group(0), what, name))
    bad += layer_violations(files, code)
    stale = ["%s: listed as a known leak of %s %s, but it names none: take it off KNOWN "
             "(and off docs/DESIGN.md)" % (p, w, n)
             for w, n, p, _ in KNOWN if (w, n, p) not in known_seen]
    for line in bad + stale:
        print(line)
    print("layout: %d files, %d kinds, %d transports; %d violations, %d known leaks "
          "(issue 37's remainder), %d stale" % (
              len(files), sum(u[0] == "kind" for u in UNITS),
              sum(u[0] == "transport" for u in UNITS), len(bad), len(KNOWN), len(stale)))
    return 1 if bad or stale else 0


if __name__ == "__main__":
    sys.exit(main())
