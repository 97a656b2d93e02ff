"""_keywords.py - Loader's keywords as one list, made when the package is
imported from the C library's rf_config table (the extension's defaults()
and ENUM_VALUES / ENUM_NAMES) and from Loader.__init__'s own parameters.
The list gives Loader its signature (help(), inspect.signature()) and the
"Parameters" part of its docstring, so neither can leave out a field the
library has nor show a default it does not use. Only the one-line
descriptions are written here (HELP); python/tests/test_keywords.py checks
that each keyword has one, and that __init__.pyi lists the same keywords
with the same defaults and names.
"""

import inspect
import struct
import textwrap

from ._ringfeed import CONFIG_FIELDS, ENUM_NAMES, ENUM_VALUES, defaults as c_defaults

# Python keyword -> rf_config field
RENAMED = {"flip": "flip_p"}
# rf_config fields set by the package itself, as the one list of them
# (src/lists/rf_lists.h) says: the source is positional, epochs run endless
# under the Python loop, the device and the resume state come from their own
# keywords, the bad-sample callback is on_bad_sample's
INTERNAL = {field for field, python, _ in CONFIG_FIELDS if python in ("package", "extension")}
# keywords whose default (None) is the package's choice, not C's
PACKAGE_DEFAULT = {
    "prefetch": "{gc} under hold='gc' (C's {c} + 2: the batch in hand and one a "
                "prefetcher keeps), {c} otherwise",
    "token_dtype": "'int32' with seq_len (what embeddings take; any torch has it), "
                   "else {c!r}",
}

# What each keyword does; the header (include/ringfeed.h, rf_config) says more.
HELP = {
    # the package's own
    "source": "An ImageFolder directory, a manifest (path<TAB>label lines), tar shards "
              "(a folder, a list file or a brace pattern) or, with seq_len, token shards.",
    "device": "Where the batches are: 'cpu', 'cuda', 'cuda:N', a torch.device or N.",
    "hold": "'gc': a batch's slot goes back when its tensors are collected; "
            "'next': at the next step (lending; .clone() what you keep).",
    "copy": "Hand out copies: the slot goes back at once.",
    "debug": "Under hold='next', a use after the step faults instead of reading recycled memory.",
    "on_bad_sample": "callable(path, err, reason), called on the iterating thread for each "
                     "sample replaced; without it, one SampleLossWarning per kind of loss.",
    "with_ids": "Image batches are (images, labels, ids), ids the samples' index ids (int64).",
    "batch_transform": "callable(images) -> images, run on each batch's tensor where it is "
                       "(the device, or the host) on the iterating thread before the batch "
                       "is returned; its result replaces the images, its errors propagate.",
    "epochs": "How many `for` loops (one epoch each) the loader serves; 0 = endless.",
    # rf_config's
    "batch_size": "Samples per batch.",
    "resize": "Resize: the shorter side to this many pixels (before CenterCrop).",
    "crop": "Output is crop x crop: CenterCrop after Resize, or the RandomResizedCrop size.",
    "threads": "Compute (decode) threads; 0 = cores - 1, at least 1.",
    "io_depth": "Reads in flight at most (1..4096).",
    "prefetch": "Batch slots: batches being filled, waiting, or held by the caller.",
    "seed": "Shuffle and augmentation seed.",
    "shuffle": "1 = a new seeded order each epoch, 0 = index order.",
    "drop_last": "1 = drop the last partial batch of an epoch.",
    "on_error": "A sample that cannot be read or decoded: 'skip' replaces it, 'fail' raises.",
    "read_pool_bytes": "Bytes of registered read buffers; a file larger than a quarter of "
                       "it is a bad sample.",
    "log_level": "Messages to stderr.",
    "no_direct_io": "1 = buffered reads instead of O_DIRECT.",
    "random_resized_crop": "1 = RandomResizedCrop(crop) instead of Resize + CenterCrop.",
    "rrc_scale": "RandomResizedCrop's area fraction range.",
    "rrc_ratio": "RandomResizedCrop's aspect ratio range.",
    "flip": "Horizontal flip probability (rf_config's flip_p; flip_p= is taken too).",
    "dtype": "The images' element type (torch.float16 and the like are taken too).",
    "layout": "'hwc' (N, H, W, C) or 'chw' (N, C, H, W).",
    "mean": "Per channel, subtracted for float output: 3 numbers or a tensor.",
    "std": "Per channel, divided by for float output: 3 numbers or a tensor.",
    "max_pixels": "Larger images are bad samples.",
    "no_scaled_decode": "1 = always decode at full scale (no DCT scaling).",
    "no_region_decode": "1 = decode every row and column, not only the crop's.",
    "verify_full": "1 = decode every image to its end, so that damage below the crop is a "
                   "bad sample.",
    "in_order": "1 = batches in order; 0 = as they complete.",
    "io_path": "How files are read ('fixed' and 'plain' are io_uring's); every path gives "
               "the same batches.",
    "pread_threads": "Threads of the 'pread' path; 0 = 16.",
    "raw": "1 = raw mode: a batch holds the files' bytes, no decode.",
    "raw_max_bytes": "Largest file in raw mode.",
    "index_cache": "A file to keep the index in between runs (rebuilt when the source "
                   "changed); None = always walk the source.",
    "sampler": "Which sample comes at each position: 'weighted' draws by the manifest's "
               "third column, 'balanced' evens the classes out.",
    "rank": "This process's rank; -1 = from the launcher's environment (RANK, SLURM_PROCID, ...).",
    "world_size": "How many ranks; -1 = from the launcher's environment (WORLD_SIZE, ...).",
    "rank_tail": "An epoch that does not split evenly over the ranks: 'pad' or 'drop'.",
    "samples_per_epoch": "'weighted' and 'balanced': draws per epoch over all ranks; "
                         "0 = the dataset's size.",
    "fetch_only": "1 = read only, batches stay zero (measures storage alone).",
    "device_convert": "1 = send uint8 HWC over the bus and convert to dtype and layout on "
                      "the GPU (float16 or float32).",
    "decode": "Where JPEGs are decoded: 'cpu', 'gpu' (nvJPEG's engines) or 'auto'.",
    "include_hidden": "1 = directory walks take hidden names (.DS_Store, ._x.jpg) too.",
    "fields": "Other members of each sample delivered beside its pixels: ('txt', 'json') "
              "(a shard's KEY.txt, KEY.json; the files beside a loose image with its key); "
              "'txt?' is optional. Batches are then FieldBatch: batch['txt'].",
    "field_max": "Bytes of the largest field value (0 = 65536); a larger one is a bad sample.",
    "remote_timeout_ms": "A remote read's time, its tries included (0 = 120000); past it the read "
    "fails, a bad sample named 'URL: reason'.",
    "cache_dir": "A node-local cache of remote shards' bytes, in cache_dir/ringfeed-cache/, "
                 "shared by every process naming it (the ranks of a node); None = no cache.",
    "cache_bytes": "The cache's size at most (at least 4 MiB); 0 = 10 GiB.",
    "cache_group": "A group (its name) trusted to share cache_dir: its files are made that "
                   "group's (0660) and its other members' used; None = the cache is this user's "
                   "alone (another user's folder, or one others can write, is not used).",
    "zstd_dict": "The dictionary the shards' .zst members were compressed with; None = "
                 "zstd.dict beside the shards, when there is one.",
    "shard_access": "Tar shards: 'random' reads samples in the sampler's order, "
                    "'sequential' streams each shard.",
    "shuffle_block": "shard_access='sequential' with shuffle: positions shuffled together; "
                     "0 = 1024.",
    "seq_len": "Token shards: T, rows of T + 1 tokens; 0 = not a token source.",
    "stride": "Tokens from one window's start to the next; 0 = seq_len.",
    "token_dtype": "The rows' element type; 'stored' = as the shards store them.",
    "source_kind": "What a source folder holds: 'auto' decides from its contents (a folder "
                   "with both .tar files and loose files is refused), 'files' or 'tar' says.",
    "columns": "Parquet files: which column is which, 'image=NAME,label=NAME' (either or "
               "both; 'label=' = no labels). A label column is an integer (a ClassLabel's "
               "names are the classes) or a string (its sorted distinct values are the "
               "classes); a null label is -1. None = the image column found by its bytes, "
               "the label column 'label'. Other columns are fields: fields=('caption',).",
}


def float32(value):
    """The shortest decimal that is the same float32 (0.08, not
    0.07999999821186066, for a C float default)."""
    bits = struct.pack("f", value)
    for digits in range(1, 10):
        shorter = float(f"{value:.{digits}g}")
        if struct.pack("f", shorter) == bits:
            return shorter
    return value


def _shown(field, value):
    """A C default as the keyword takes it: enum names, short floats."""
    if field in ENUM_NAMES:
        return ENUM_NAMES[field][value]
    if isinstance(value, float):
        return float32(value)
    if isinstance(value, tuple):
        return tuple(float32(v) for v in value)
    return value


def names(field):
    """The names an enum keyword takes, as rf_enum_entry() lists them:
    [(name, [other names of the same value]), ...]."""
    return [(name, [n for n, v in ENUM_VALUES[field].items() if v == value and n != name])
            for value, name in ENUM_NAMES[field].items()]


def _kind(field, default):
    """What a keyword takes, numpydoc-style."""
    if field in ENUM_NAMES:
        return "{" + ", ".join(repr(n) for n, _ in names(field)) + "}"
    if default is None:
        return "str or os.PathLike, optional"
    if isinstance(default, bool):
        return "bool"
    if isinstance(default, int):
        return "int"
    if isinstance(default, float):
        return "float"
    if isinstance(default, tuple):
        return f"{len(default)} floats"
    return type(default).__name__


def keywords(init):
    """[(keyword, rf_config field or None, default, PACKAGE_DEFAULT text or
    None)] in the signature's order: init's own keyword parameters, then
    every rf_config field a user sets, in the C table's order."""
    c = c_defaults()
    to_keyword = {field: key for key, field in RENAMED.items()}
    fields = [(to_keyword.get(field, field), field) for field in c if field not in INTERNAL]
    # init's own: those of its code (not of a __signature__ set from here)
    out = [(p.name, None, p.default, None) for p in inspect.signature(init).parameters.values()
           if p.kind is inspect.Parameter.KEYWORD_ONLY and p.name not in dict(fields)]
    for key, field in fields:
        value = c[field]
        if key in PACKAGE_DEFAULT:
            text = PACKAGE_DEFAULT[key].format(c=_shown(field, value),
                                               gc=value + 2 if key == "prefetch" else None)
            out.append((key, field, None, text))
        else:
            out.append((key, field, _shown(field, value), None))
    return out


def signature(init):
    """init's signature with every keyword spelled out (init takes the
    rf_config ones as **options)."""
    own = inspect.signature(init)
    params = [p for p in own.parameters.values()
              if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    names_seen = {p.name for p in params}
    for key, _, default, _ in keywords(init):
        if key not in names_seen:
            params.append(inspect.Parameter(key, inspect.Parameter.KEYWORD_ONLY, default=default))
    return own.replace(parameters=params)


def docstring(init):
    """The "Parameters" section: source, then each keyword, what it takes, its default, and
    what it does."""
    lines = ["Parameters", "----------",
             "(An enum keyword takes the names listed, in any case, or the C value.)",
             "source : str or os.PathLike"]
    lines += textwrap.wrap(HELP["source"], 76, initial_indent="    ", subsequent_indent="    ")
    for key, field, default, package in keywords(init):
        if field is None:   # the package's own: the kind from the default
            kind = {"hold": "{'gc', 'next'}", "device": "str, torch.device or int",
                    "on_bad_sample": "callable, optional",
                    "batch_transform": "callable, optional"}.get(key, _kind(key, default))
        else:
            kind = _kind(field, c_defaults()[field])
        lines.append(f"{key} : {kind}, default {default!r}")
        text = HELP.get(key, "")
        if package is not None:
            text = f"None: {package}. {text}"
        if field in ENUM_NAMES:
            aliases = [f"{alias!r} is {name!r}" for name, others in names(field)
                       for alias in others]
            if aliases:
                text += " Also taken: " + ", ".join(aliases) + "."
        lines += textwrap.wrap(text, 76, initial_indent="    ", subsequent_indent="    ")
    return "\n".join(lines)
