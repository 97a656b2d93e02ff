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
        r"\brfi?_index_walk_imagefolder\b", r"\brfi?_index_parse_manifest\b",
    ], [
        "src/source/files.c",
        # the files kind's parsers, still in src/index/ (see KNOWN below:
        # index_build.h declares them)
        "src/index/walk.c", "src/index/manifest.c",
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
        r"\"source/parquet_\w+\.h\"",
    ], [
        "src/source/parquet_thrift.c", "src/source/parquet_thrift.h",
        "src/source/parquet_meta.c", "src/source/parquet_meta.h", "src/source/parquet_pages.c",
        "src/source/parquet_encoding.c", "src/source/parquet_encoding.h",
        "src/source/parquet_codec.c", "src/source/parquet_codec.h",
        "src/source/parquet_page.c", "src/source/parquet_page.h", "src/source/parquet_values.c",
        "src/source/parquet_hf.c", "src/source/parquet_hf.h",
    ]),
    # The file row is the local file system: the read engine's own paths
    # (pread, io_uring), every source's; it has no code of its own outside
    # its row. A "file://" scheme would be its name.
    ("transport", "file", [r"\"file://"], []),
    ("transport", "http", [
        r"\brfi?_http_\w+", r"\bRF_HTTP_\w+", r"\"remote/http(?:_check)?\.h\"",
        r"\"https?://", r"\bcurl_\w+", r"\bCURL\w*", r"<curl/",
    ], [
        "src/remote/http.c", "src/remote/http.h", "src/remote/http_check.c",
        "src/remote/http_check.h",
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
     "pack's input is a files source (it refuses others by RF_KIND_FILES) and "
     "rf_index_write checks the public RF_INDEX_FILES/TAR flags"),
    ("kind", "*", "src/cli/",
     "the command line's help and usage name the kinds and their file names for users, "
     "--source-kind maps to the public RF_INDEX_* flags, and pack/gen drive the writers "
     "in src/pack/"),
    ("transport", "*", "src/cli/",
     "the command line's help and usage name the schemes for users"),
    ("kind", "files", "src/lib.c",
     "the public face checks rf_index_write's flags, the public RF_INDEX_FILES/TAR"),
    ("kind", "tar", "src/lib.c", "as above"),
    ("kind", "*", "src/util/names.c",
     "the names table of the public enums: source_kind = auto|files|tar, as users write it"),
    ("transport", "http", "src/remote/s3.c",
     "an S3 endpoint is an http(s) URL: the s3 row builds the https URL it reads "
     "(s3 is read over the http row)"),
    ("transport", "http", "src/remote/s3.h", "as above"),
]

# ---- known leaks: real, listed with why, to go in issue 37's remainder ----

# (what, name, file, reason; TODO)
KNOWN = [
    ("kind", "tar", "src/index/index.h",
     "rf_shard_kind (RF_SHARDS_TAR/TOKENS) says which names a shard listing takes. "
     "TODO(issue 37): the kind's row passes its shard names (suffixes, class folders)"),
    ("kind", "tokens", "src/index/index.h", "as above (rf_shard_kind). TODO(issue 37)"),
    ("kind", "tokens", "src/index/shards.c", "as above: .bin / .bin.zst. TODO(issue 37)"),
    ("kind", "tar", "src/index/shards.c",
     "the listing's is_kind/kind_name: .tar, class folders for tar only. "
     "TODO(issue 37): from the kind's row"),
    ("kind", "tar", "src/index/walk.c",
     "the files kind's walk counts .tar files so that files.c hands a folder of only "
     "shards to the tar kind (rfi_source_tar_folder). TODO(issue 37): the table asks "
     "each kind whether a walked folder is its own"),
    ("kind", "tar", "src/source/files.c", "as above: the hand-over (rfi_source_tar_folder). "
     "TODO(issue 37)"),
    ("kind", "files", "src/index/index_build.h",
     "declares the files kind's walk and manifest parser, which still live in src/index/ "
     "(walk.c, manifest.c). TODO(issue 37): move them to src/source/"),
    ("kind", "files", "src/pipeline/loader.c",
     "cfg.source_kind mapped to RF_INDEX_FILES/TAR here (and in cli/index_cmd.c, checked "
     "in pack.c). TODO(issue 37): one mapping, in the kind table"),
    ("kind", "tar", "src/pipeline/loader.c", "as above (RF_INDEX_TAR). TODO(issue 37)"),
    ("kind", "tar", "src/pipeline/config.c",
     "source_kind's range check ends at RF_SOURCE_TAR, the last kind a user can force. "
     "TODO(issue 37): with the mapping above"),
    ("transport", "http", "src/io/engine.c",
     "the read engine drives remote reads through http.c directly (every remote row is "
     "read over HTTP: s3 signs https requests). TODO(issue 37): a row's read hook, for a "
     "transport that is not HTTP"),
    ("transport", "http", "src/io/engine_setup.c", "as above (the engine's curl side). "
     "TODO(issue 37)"),
    ("transport", "s3", "src/io/engine.h",
     "rf_io_sign holds S3's keys (struct rf_creds: SigV4 through libcurl). TODO(issue 37): "
     "an opaque signer of the row"),
    ("transport", "s3", "src/remote/http.c",
     "the http side asks S3's credential store for fresh keys before each signed request "
     "(rf_creds_*). TODO(issue 37): with the opaque signer above"),
    ("transport", "s3", "src/remote/http.h", "as above (struct rf_creds). TODO(issue 37)"),
    ("transport", "http", "src/source/tar_scan.c",
     "a TLS failure's message names curl's CA variables (CURL_CA_BUNDLE). TODO(issue 37): "
     "the http row words it"),
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
