"""ringfeed from Python: the C loader's batches as torch tensors, zero copy.

    loader = ringfeed.Loader("/data/train", batch_size=256, crop=224,
                             random_resized_crop=True, flip=0.5,
                             dtype="float16", layout="chw", mean=..., std=...)
    for epoch in range(E):
        for images, labels in loader:      # one epoch per `for`
            ...

Lifetime of a batch (the tensors view the loader's batch slot itself):
  hold="gc" (default)    the slot is given back when the last tensor viewing
                         it is garbage-collected: a tensor you still hold
                         never changes, after close() and `del loader` too.
                         Each held batch keeps one of `prefetch` slots (6 by
                         default here: the batch in hand and one kept ahead,
                         as CUDA prefetchers do, leave 4 to the loader);
                         holding all of them raises Error (EDEADLK) rather
                         than hang.
  hold="next"            lending: the slot is given back at the next
                         iteration step, whether or not its tensors are still
                         used; .clone() what you keep. Slightly less work per
                         batch; with debug=True a use after the step faults
                         (SIGSEGV) instead of reading recycled memory.
  copy=True              the tensors are copies; the slot is given back at once.

Image-text samples (a WebDataset shard's KEY.txt and KEY.json beside
KEY.jpg, or the files beside each image of a tree in img2dataset's layout):

    loader = ringfeed.Loader("laion/{00000..00099}.tar", fields=("txt", "json"))
    for batch in loader:
        images, labels = batch             # as without fields
        captions = batch["txt"]            # list of str (UTF-8 decoded)
        meta = batch["json"]               # list of bytes
        data, offsets = batch.packed("txt")  # uint8 tensor, int64 offsets (count + 1)

A sample without a field is a bad sample (on_error) unless the field is
named optional, "txt?": its value is then None (empty in packed()).

raw=True: a batch is (list of each sample's bytes, labels), no decode.

Token shards (llm.c's .bin, or .bin.zst from `ringfeed pack --tokens`):

    loader = ringfeed.Loader("data/fineweb_train_*.bin", seq_len=1024, batch_size=16)
    for rows, ids in loader:               # rows: (16, 1025) int32, ids: window ids
        x, y = rows[:, :-1], rows[:, 1:]

token_dtype is "int32" unless given ("stored", "uint16", "uint32", "int64":
what cross_entropy takes as targets, without .long()): this torch may have
no unsigned types.

Nothing is lost in silence: Ctrl-C while next() waits (or while it builds the
tensors) leaves the loader where it was, so `except KeyboardInterrupt:` can
save state_dict() and resume at the batch that was not handed out. Without
an on_bad_sample callback, each kind of loss (samples replaced because they
could not be read or decoded, ...) is reported once per loader with a
SampleLossWarning.

Threads: one Loader may be used from several threads; its calls take turns
(a lock), and close() from another thread wakes a thread waiting in next(),
which raises Error. Under hold="next" a batch's tensors are valid until the
next step of any thread: use the default (hold="gc") or copy=True there.
"""

import errno
import operator
import textwrap
import threading
import warnings

from ._ringfeed import Error, Batch, defaults as _c_defaults, state_at_epoch
from ._ringfeed import ENUM_NAMES, ENUM_VALUES, ERROR_CODES
from . import _ringfeed
from . import _keywords

__all__ = ["Loader", "Error", "FieldBatch", "SampleLossWarning", "state_parse",
           "state_at_epoch", "defaults", "formats", "ERROR_CODES", "__version__"]

# The library's error codes (ringfeed.h's RF_E*, and EOF) as ringfeed.ECONFIG
# and so on: what Error.code is compared with (Error.name says it in words)
globals().update(ERROR_CODES)
__all__ += sorted(ERROR_CODES)

# meson.build's project() version (the wheel's too), through the header the
# extension is compiled against (meson checks that they agree)
__version__ = _ringfeed.VERSION


def _is_text(name):
    """Fields decoded to str: captions (txt, and names such as caption.txt)."""
    return name == "txt" or name.endswith(".txt")


class FieldBatch(tuple):
    """A batch of a Loader with fields: the tuple it would be without them
    ((images, labels), or (images, labels, ids) with with_ids), and its
    fields by name. batch["txt"] is a list of str (a caption field: txt,
    or a name ending in .txt; decoded as UTF-8, a value that is not raises
    UnicodeDecodeError naming the field and the sample), any other field a
    list of bytes; an optional field a sample lacks is None. packed(name)
    gives a field as one uint8 tensor and int64 offsets (count + 1: sample
    i's bytes are data[offsets[i]:offsets[i + 1]]), for bulk tokenizers.
    The values are copies: they outlive the batch's slot."""

    def __new__(cls, items, fields, ids):
        batch = super().__new__(cls, items)
        batch._fields = {name: (data, offsets, present)
                         for name, data, offsets, present in fields}
        batch._ids = ids
        batch._values = {}
        return batch

    @property
    def field_names(self):
        """The fields, in the order Loader(fields=...) named them."""
        return tuple(self._fields)

    def __getitem__(self, key):
        if isinstance(key, str):
            return self.field(key)
        return tuple.__getitem__(self, key)

    def _entry(self, name):
        key = name.rstrip("?").lower()
        if key not in self._fields:
            raise KeyError(f"no field {name!r} (this loader's fields: "
                           f"{', '.join(self._fields) or 'none'})")
        return key, self._fields[key]

    def field(self, name):
        """The values of field `name`: a list, one per sample."""
        key, (data, offsets, present) = self._entry(name)
        if key in self._values:
            return list(self._values[key])
        off = memoryview(offsets).cast("Q")
        values = []
        for i in range(len(present)):
            if not present[i]:
                values.append(None)
                continue
            value = data[off[i]:off[i + 1]]
            if _is_text(key):
                try:
                    value = value.decode("utf-8")
                except UnicodeDecodeError as e:
                    raise UnicodeDecodeError(
                        e.encoding, e.object, e.start, e.end,
                        f"{e.reason} (field {key!r} of sample {i} of the batch, id "
                        f"{self._ids[i]}: not UTF-8; read it as bytes with packed())") from None
            values.append(value)
        self._values[key] = values
        return list(values)

    def packed(self, name):
        """Field `name` as (uint8 tensor of every sample's bytes, int64 offsets of count + 1)."""
        torch = _torch()
        _, (data, offsets, _) = self._entry(name)
        flat = torch.frombuffer(bytearray(data), dtype=torch.uint8) if data else \
            torch.empty(0, dtype=torch.uint8)
        return flat, torch.frombuffer(bytearray(offsets), dtype=torch.int64)

    def present(self, name):
        """A bool tensor: which samples have field `name` (all, unless it is optional)."""
        _, (_, _, present) = self._entry(name)
        return _torch().frombuffer(bytearray(present), dtype=_torch().uint8).bool() \
            if present else _torch().empty(0, dtype=_torch().bool)


class SampleLossWarning(RuntimeWarning):
    """Samples were lost or replaced and no on_bad_sample callback was given."""


# Kinds of loss reported once per loader when no on_bad_sample callback is
# given: (the stats() counter, the message; {n} is the counter's value at
# the step that warns, what stats() says then; {advice} what to do, which
# depends on on_error). Both counters are of batches handed out (replaced)
# or known at create (lost_spans), never of batches read ahead, so the
# number in the message is the one stats() gives at that step.
_LOSSES = (
    ("replaced", "{n} sample(s) of the batches delivered so far could not be read or "
                 "decoded and were replaced by others (stats()['replaced']); {advice}"),
    ("lost_spans", "the source's tar shards hold {n} damaged or cut span(s) whose samples "
                   "are lost (found when indexing; each is reported like a bad sample, "
                   "'SHARD:bytes A..B', when drawn; stats()['lost_spans']); "
                   "stats()['lost_bytes'] says how much; {advice}"),
)
_ADVICE = {
    "replaced": "pass on_bad_sample=callable(path, err, reason) to see which, or "
                "on_error='fail' to stop instead",
    "lost_spans": "pass on_bad_sample=callable(path, err, reason) to see which are drawn, "
                  "or on_error='fail' to stop at the first",
}
# on_error='fail' replaces nothing: the first bad sample or span drawn
# raises Error naming it
_ADVICE_FAIL = {
    "replaced": "on_error='fail' stops at the first instead",
    "lost_spans": "with on_error='fail' the first one drawn raises Error naming it",
}

# The names of rf_config's enum values come from the C library's one table
# (ENUM_VALUES[field][name] -> value, ENUM_NAMES[field][value] -> name), never
# from a copy here. Image batches hold the dtype field's types; token rows
# the token_dtype field's.
_IMAGE_DTYPES = ENUM_NAMES["dtype"]
_TOKEN_DTYPES = ENUM_NAMES["token_dtype"]
_CHW = ENUM_VALUES["layout"]["chw"]
# numpy's typestr of each element type (__cuda_array_interface__), by name
_TYPESTR = {"uint8": "|u1", "float32": "<f4", "float16": "<f2",
            "uint16": "<u2", "uint32": "<u4", "int32": "<i4", "int64": "<i8"}

# Python keyword -> rf_config field; the fields the package sets itself
_RENAMED = _keywords.RENAMED
_INTERNAL = _keywords.INTERNAL


def _torch():
    import torch  # imported late: the package loads (and errors are typed) without it
    return torch


def _enum_value(key, value, names):
    if type(value).__name__ == "dtype" and str(value).startswith("torch."):
        value = str(value)[len("torch."):]   # torch.float16 -> "float16"
    if isinstance(value, str):
        try:
            return names[value.lower()]
        except KeyError:
            raise Error(_ringfeed.ECONFIG, f"{key}: '{value}' is not one of {sorted(names)}")
    return value   # a number: checked (an integer, in range) with the other fields


def _three_floats(key, value):
    """mean / std: a sequence or a tensor of 3 numbers, as floats."""
    if hasattr(value, "tolist"):   # a tensor or an array
        value = value.tolist()
    try:
        values = [float(v) for v in value]
    except TypeError:
        raise TypeError(f"{key}: expected 3 numbers (a sequence or a tensor), not "
                        f"{type(value).__name__}") from None
    if len(values) != 3:
        raise Error(_ringfeed.ECONFIG, f"{key}: {len(values)} numbers, not 3 (R, G, B)")
    return tuple(values)


def _check_batch_transform(fn, options):
    """batch_transform: None or a callable(images) -> images; not with raw
    batches (bytes, no tensor to give it)."""
    if fn is None:
        return
    if not callable(fn):
        raise TypeError(f"batch_transform: expected a callable(images) -> images, not "
                        f"{type(fn).__name__}")
    if options.get("raw"):
        raise Error(_ringfeed.ECONFIG, "batch_transform: raw=True batches are lists of bytes, "
                    "not tensors: decode them yourself, then transform")


def _device_index(device):
    """device: None, "cpu", "cuda", "cuda:N", a torch.device, or N."""
    if device is None:
        return -1
    if isinstance(device, int) and not isinstance(device, bool):
        if device < 0:
            raise Error(_ringfeed.ECONFIG, f"device: {device} is not a CUDA device number")
        return device
    if not isinstance(device, str) and type(device).__name__ != "device":
        raise TypeError(f"device: expected 'cpu', 'cuda:N', a torch.device or an int, not "
                        f"{type(device).__name__}")
    text = str(device)
    if text == "cpu":
        return -1
    if text == "cuda" or (text.startswith("cuda:") and text[5:].isdigit()):
        torch = _torch()
        if not torch.cuda.is_available():
            raise Error(_ringfeed.ECONFIG, f"device: '{text}': this machine has no CUDA GPU "
                        f"(torch.cuda.is_available() is False)")
        return torch.cuda.current_device() if text == "cuda" else int(text[5:])
    raise Error(_ringfeed.ECONFIG, f"device: '{device}' is not 'cpu' or 'cuda:N'")


class Loader:
    """An iterable over batches of (images, labels) torch tensors.

    Every field of the C rf_config that a user sets is a keyword, with the C
    default (see ringfeed.defaults()); flip is flip_p; the enum fields
    (dtype, layout, on_error, sampler, rank_tail, io_path, log_level,
    decode, shard_access, token_dtype) take the C library's names of their
    values (ringfeed._ringfeed.ENUM_VALUES), or the numbers. Each keyword,
    its default and the names it takes are listed below (made from the C
    library's table when the package is imported).
    epochs: the Python loop is one epoch per `for`; `epochs` (0 = endless,
    the default) bounds how many. Ranks come from the torchrun environment
    (RANK, WORLD_SIZE) as in C unless rank and world_size are given.
    on_bad_sample: a callable(path, err, reason) called on the iterating
    thread, before the batch that replaced the sample is returned.
    with_ids: image batches are (images, labels, ids), ids the samples'
    index ids (int64, as `ringfeed bench --ids` writes them); token batches
    are (rows, ids) either way.
    batch_transform: a callable(images) -> images (token rows for token
    shards), called on the iterating thread with each batch's tensor where
    the batch is (on the device, on torch's current stream, with device=;
    else on the host), before the batch is returned; what it returns
    replaces the tensor, and what it raises propagates (the batch is given
    back: the next call returns it again, untransformed unless the callable
    changed it in place). The tensor views the loader's slot (a copy with
    copy=True): in-place ops write the slot, which is yours until it goes
    back; a new tensor it returns outlives the slot under hold="next" too.
    Every sample of a batch gets the same random choices from a torchvision
    transform; kornia.augmentation draws them per sample.
    Torch's own types are taken where names are: device=torch.device(...)
    (or "cuda:N", or N), dtype=torch.float16, token_dtype=torch.int32;
    mean and std as sequences or tensors of 3 numbers.
    """

    def __init__(self, source, *, device="cpu", hold="gc", copy=False, debug=False,
                 on_bad_sample=None, with_ids=False, epochs=0, batch_transform=None, **options):
        if not isinstance(hold, str) or hold not in ("next", "gc"):
            raise Error(_ringfeed.ECONFIG, f"hold: '{hold}' is not 'next' or 'gc'")
        if on_bad_sample is not None and not callable(on_bad_sample):
            raise TypeError(f"on_bad_sample: expected a callable(path, err, reason), not "
                            f"{type(on_bad_sample).__name__}")
        _check_batch_transform(batch_transform, options)
        c_defaults = _c_defaults()
        # values are checked by the extension: integers stay integers (8.7 is
        # a TypeError, not 8), unsigned fields refuse negatives, paths are
        # str, bytes or os.PathLike without NUL (each error names the field)
        config = {"source": source, "epochs": epochs}
        for key in _keywords.PACKAGE_DEFAULT:   # None: the package's default, below
            if key in options and options[key] is None:
                del options[key]
        if hold == "gc" and "prefetch" not in options:
            # the loop holds the batch in hand while it asks for the next,
            # and a prefetcher one more: two slots more than C's default
            options["prefetch"] = c_defaults["prefetch"] + 2
        if options.get("fields") is not None and not isinstance(options["fields"], (str, bytes)):
            names = list(options["fields"])
            if not all(isinstance(n, str) for n in names):
                raise TypeError("fields: expected names (str), such as ('txt', 'json')")
            options["fields"] = ",".join(names)
        if options.get("seq_len") and "token_dtype" not in options:
            options["token_dtype"] = "int32"   # what embeddings take; any torch has it
        for key, value in options.items():
            field = _RENAMED.get(key, key)
            if field not in c_defaults or field in _INTERNAL:
                raise TypeError(f"Loader() got an unexpected keyword argument '{key}'")
            if field in ENUM_VALUES:
                value = _enum_value(key, value, ENUM_VALUES[field])
            elif field in ("mean", "std"):
                value = _three_floats(key, value)
            config[field] = value
        self._device = None if _device_index(device) < 0 else _torch().device(
            "cuda", _device_index(device))
        config["device"] = _device_index(device)
        self._config = config
        self._hold = hold
        self._copy = bool(copy)
        self._debug = bool(debug)
        self._on_bad_sample = on_bad_sample
        self._with_ids = bool(with_ids)
        self._batch_transform = batch_transform
        self._current = None      # the Batch lent under hold="next"
        self._lock = threading.RLock()   # one call at a time, whatever the thread
        self._closed = False
        # loss counters not warned about yet (see _LOSSES)
        self._unwarned = [] if on_bad_sample is not None else list(_LOSSES)
        self._c = _ringfeed.Loader(config, None, self._debug)
        self._order = self._c.order()
        self._loaded_epoch = None   # set by load_state_dict() until a batch is taken

    # ---- the DataLoader surface ----

    def __len__(self):
        """Batches per epoch (of this rank)."""
        return int(self._order["batches_per_epoch"])

    @property
    def epoch(self):
        """The epoch the next batch belongs to."""
        with self._lock:
            return int(self._c.order()["next_batch"]) // len(self)

    def set_epoch(self, epoch):
        """Starts the stream at the first batch of `epoch` (a no-op when the
        loader already stands there), as DistributedSampler.set_epoch.
        Right after load_state_dict() (no batch taken since), set_epoch() of
        the epoch the loaded state stands in keeps its position: the loop
        `for epoch in range(start, E): loader.set_epoch(epoch)` resumes
        where the checkpoint was; another epoch starts that epoch from its
        first batch and warns (RuntimeWarning) that the loaded position is
        dropped."""
        epoch = int(epoch)
        with self._lock:
            loaded, self._loaded_epoch = self._loaded_epoch, None
            if loaded is not None and epoch == loaded:
                return
            order = self._c.order()
            if loaded is not None:
                warnings.warn(
                    f"set_epoch({epoch}) right after load_state_dict(): the loaded state "
                    f"stands at batch {int(order['next_batch']) - loaded * len(self)} of "
                    f"epoch {loaded}; epoch {epoch} starts from its first batch and that "
                    f"position is dropped (set_epoch({loaded}) keeps it)",
                    RuntimeWarning, stacklevel=2)
            # an epoch resumed on another world size starts at its rest's first batch
            first = int(order["epoch_first_batch"])
            if first // len(self) == epoch and int(order["next_batch"]) == first:
                return
            self._release_current()
            self._recreate(state_at_epoch(self._c.state_save(), epoch))

    def __iter__(self):
        start = self.epoch
        while True:
            with self._lock:
                order = self._c.order()
                if int(order["next_batch"]) >= (start + 1) * len(self):
                    return
                item = self._next()
            if item is None:
                return
            yield item

    def __next__(self):
        with self._lock:
            item = self._next()
        if item is None:
            raise StopIteration
        return item

    # ---- checkpoints ----

    def state_dict(self):
        """The position for an exact resume, to put in a checkpoint: the batch
        the next iteration returns, then the same batches in the same order."""
        with self._lock:
            return {"ringfeed_state": self._c.state_save(), "epoch": self.epoch}

    def load_state_dict(self, state):
        """Restarts at the position of state_dict() (checked: a state from
        another dataset or other output settings raises Error)."""
        with self._lock:
            self._release_current()
            self._recreate(bytes(state["ringfeed_state"]))
            # the epoch it stands in: set_epoch() of it keeps the position
            self._loaded_epoch = int(self._order["next_batch"]) // len(self)

    def stats(self):
        """rf_stats as a dict: counters of samples, batches, bytes and what was
        lost (replaced, bad_samples, lost_spans); where the time went, in
        seconds summed over the threads that spent it (read_wait_s: compute
        threads waiting for reads, decode_s, transform_s, collate_s,
        ring_cpu_s, consumer_wait_s: this thread waiting in next(),
        device_copy_s, gpu_busy_s, gpu_host_s); the paths in use by name
        (io_path: 'fixed', 'plain' or 'pread', as Loader(io_path=) takes
        them; decode: 'cpu' or 'gpu'); a remote source's http_* and a
        cache's cache_* counters. The names are those of `ringfeed bench
        --json` where it has them."""
        with self._lock:
            return self._c.stats()

    # ---- what the samples are called ----

    @property
    def classes(self):
        """The class names in label order (labels[i] is classes[labels[i]]), as
        torchvision's ImageFolder: a folder of class folders (of images or of
        tar shards) numbers them in the sorted order of their names. [] for
        sources that name no classes (a manifest, tar shards labelled by cls
        members, token shards)."""
        with self._lock:
            return self._c.class_names()

    @property
    def class_to_idx(self):
        """{class name: label}, as torchvision's ImageFolder.class_to_idx ({}
        when the source names no classes)."""
        return {name: label for label, name in enumerate(self.classes)}

    def sample_path(self, sample_id):
        """The name of sample `sample_id` (an id of with_ids=True, or a token
        batch's window id; an int or a 0-d tensor): the one on_bad_sample
        and errors give it. A file's path; a tar shard member's
        "SHARD.tar:MEMBER" after the shard's folder or URL; a token window's
        "SHARD:tokens A..B (window ID)". IndexError for an id past the index."""
        if hasattr(sample_id, "item") and not isinstance(sample_id, int):
            sample_id = sample_id.item()   # a 0-d tensor, as ids[i] gives
        sample_id = operator.index(sample_id)
        with self._lock:
            return self._c.sample_name(sample_id)

    def close(self):
        """Gives the loader's threads and memory back (after the last batch
        under hold='gc' is collected). From another thread: a next() waiting
        there raises Error (close does not wait for the lock)."""
        self._closed = True
        self._release_current()
        c = self._c
        if c is not None:
            c.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- inside ----

    def _recreate(self, state):
        """With the lock held."""
        old = self._c
        old.close()
        new = _ringfeed.Loader(self._config, state, self._debug)
        if self._closed:                 # close() came from another thread meanwhile
            new.close()
            raise Error(_ringfeed.ECONFIG, "the loader is closed")
        self._c = new
        self._order = new.order()

    def _release_current(self):
        current, self._current = self._current, None
        if current is not None:
            current.release(self._stream_handle())

    def _stream_handle(self):
        if self._device is None:
            return 0
        return _torch().cuda.current_stream(self._device).cuda_stream

    def _report_bad(self):
        reports, dropped = self._c.take_bad_samples()
        if self._on_bad_sample is not None:
            for path, err, reason in reports:
                self._on_bad_sample(path, err, reason)

    def _warn_losses(self):
        stats = self._c.stats()
        fail = self._config.get("on_error") == ENUM_VALUES["on_error"]["fail"]
        for kind in list(self._unwarned):
            n = stats.get(kind[0], 0)
            if n:
                self._unwarned.remove(kind)
                advice = (_ADVICE_FAIL if fail else _ADVICE)[kind[0]]
                warnings.warn(kind[1].format(n=n, advice=advice), SampleLossWarning,
                              stacklevel=4)

    def _next(self):
        """With the lock held. An exception after the C next() (Ctrl-C while
        the tensors are built, a callback or warning that raises) gives the
        batch back: the next call returns it."""
        self._release_current()
        self._loaded_epoch = None
        try:
            batch = self._c.next()
        except Error as e:
            if e.code == -errno.EDEADLK:
                raise Error(e.code, self._every_slot_held()) from None
            raise
        try:
            if self._on_bad_sample is not None:
                self._report_bad()
            elif self._unwarned:
                self._warn_losses()
            if batch is None:
                return None
            images, labels = self._tensors(batch)
            if self._copy and batch.raw is None:
                images = images.clone()   # batch_transform then works on the copy
            if self._batch_transform is not None:
                # before any release: if it raises, the batch is given back
                images = self._batch_transform(images)
            ids = self._image_ids(batch) if self._with_ids else None
            if batch.raw is not None:     # copies already: the slot goes back now
                batch.release(self._stream_handle())
            elif self._copy:
                batch.release(self._stream_handle())
            elif self._hold == "next":
                self._current = batch
            item = (images, labels) if ids is None else (images, labels, ids)
            if batch.fields:
                item = FieldBatch(item, batch.fields, memoryview(batch.ids).cast("Q"))
            return item
        except BaseException:
            if batch is not None and not batch.released:
                if self._current is batch:
                    self._current = None
                self._c.hold_back(batch)
            raise

    def _every_slot_held(self):
        """The message of EDEADLK in the package's terms: what holds the slots
        and what to do instead."""
        prefetch = self._config.get("prefetch", _c_defaults()["prefetch"])
        return (f"all {prefetch} batch slots are held: a batch's tensors are views of the "
                f"loader's memory (its batch slot) for as long as they live, so keeping "
                f"batches (list(loader), appending them to a list) holds a slot each. To "
                f"keep batches, use Loader(..., copy=True) (tensors of their own; the slot "
                f"goes back at once), or keep images.clone() and drop the batch; or give "
                f"the loader more slots with prefetch= (now {prefetch}).")

    def _image_ids(self, batch):
        """An image batch's sample ids (int64), where its labels are; None for rows."""
        if batch.dtype not in _IMAGE_DTYPES:
            return None   # token batches carry their window ids already
        ids = _torch().frombuffer(bytearray(batch.ids), dtype=_torch().int64)
        return ids if self._device is None else ids.to(self._device, non_blocking=True)

    def _tensors(self, batch):
        torch = _torch()
        if batch.dtype not in _IMAGE_DTYPES:
            return self._token_tensors(batch)
        labels = torch.frombuffer(bytearray(batch.labels), dtype=torch.int32).long()
        if batch.raw is not None:     # raw=True: each sample's bytes, as they are stored
            return list(batch.raw), labels
        if self._device is not None:
            return self._device_tensors(batch, labels)
        dtype = getattr(torch, _IMAGE_DTYPES[batch.dtype])
        flat = torch.frombuffer(batch, dtype=dtype)   # views the slot; holds `batch`
        if batch.layout == _CHW:
            shape = (batch.count, batch.channels, batch.height, batch.width)
        else:
            shape = (batch.count, batch.height, batch.width, batch.channels)
        return flat.view(shape), labels

    def _token_tensors(self, batch):
        """Rows of seq_len + 1 tokens, (count, seq_len + 1), and the window ids."""
        torch = _torch()
        ids = torch.frombuffer(bytearray(batch.ids), dtype=torch.int64)
        name = _TOKEN_DTYPES[batch.dtype]
        dtype = getattr(torch, name, None)
        if dtype is None:
            raise Error(_ringfeed.ECONFIG, f"token_dtype: this torch ({torch.__version__}) has "
                        f"no {name}: use token_dtype='int32'")
        shape = (batch.count, batch.width)
        if self._device is not None:
            stream = torch.cuda.current_stream(self._device)
            batch.wait(stream.cuda_stream)
            view = _DeviceView(batch, shape, _TYPESTR[name])
            rows = torch.as_tensor(view, device=self._device)
            return rows, ids.to(self._device, non_blocking=True)
        return torch.frombuffer(batch, dtype=dtype).view(shape), ids

    def _device_tensors(self, batch, labels):
        torch = _torch()
        stream = torch.cuda.current_stream(self._device)
        batch.wait(stream.cuda_stream)   # the stream waits for the copy, no host sync
        dtype, layout = batch.device_dtype, batch.device_layout
        typestr = _TYPESTR[_IMAGE_DTYPES[dtype]]
        if layout == _CHW:
            shape = (batch.count, batch.channels, batch.height, batch.width)
        else:
            shape = (batch.count, batch.height, batch.width, batch.channels)
        view = _DeviceView(batch, shape, typestr)
        images = torch.as_tensor(view, device=self._device)   # holds `view`, so `batch`
        return images, labels.to(self._device, non_blocking=True)


class _DeviceView:
    """__cuda_array_interface__ over a batch's device slot; keeps the batch alive."""

    def __init__(self, batch, shape, typestr):
        self.batch = batch
        self.__cuda_array_interface__ = {
            "shape": shape, "typestr": typestr, "data": (batch.device_ptr, False),
            "version": 2, "strides": None,
        }


# help(Loader) and inspect.signature(Loader) list every keyword with its
# default; the docstring's "Parameters" says what each takes (_keywords.py)
Loader.__init__.__signature__ = _keywords.signature(Loader.__init__)
if Loader.__doc__ is not None:   # python -OO drops docstrings
    Loader.__doc__ = Loader.__doc__.rstrip() + "\n\n" + textwrap.indent(
        _keywords.docstring(Loader.__init__), "    ") + "\n"


def state_parse(state):
    """A saved state in words: a dict of its position (next_batch, epoch,
    batch_in_epoch, batches_per_epoch, epoch_first_batch), rank, world_size,
    batch_size and rest_samples. state: what Loader.state_dict() returns (a
    dict), or its "ringfeed_state" bytes."""
    if isinstance(state, dict):
        if "ringfeed_state" not in state:
            raise TypeError("state_parse: a dict without 'ringfeed_state': pass what "
                            "Loader.state_dict() returns, or its 'ringfeed_state' bytes")
        state = state["ringfeed_state"]
    return _ringfeed.state_parse(state)


def formats():
    """The image formats this build decodes, told by each file's bytes:
    ("jpeg", "png", "webp"), or fewer where the library was built without
    libspng or libwebp (such an image is then a bad sample that says so)."""
    bits = _ringfeed.IMAGE_FORMATS
    return tuple(name for bit, name in ((1, "jpeg"), (2, "png"), (4, "webp")) if bits & bit)


def defaults():
    """rf_config_default() as a dict of rf_config field -> value, the enum
    fields by name ({'dtype': 'uint8', 'io_path': 'auto', ...}): what a
    Loader keyword left out is (but prefetch and token_dtype, whose package
    defaults help(Loader) gives; flip is flip_p)."""
    return {field: ENUM_NAMES[field][value] if field in ENUM_NAMES else value
            for field, value in _c_defaults().items()}
