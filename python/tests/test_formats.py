"""test_formats.py - PNG and WebP decode as JPEG does: every PNG colour type
and bit depth (palette with and without tRNS, grey 1/2/4/8/16 bits, grey +
alpha, RGB and RGBA at 8 and 16 bits, Adam7-interlaced) and WebP lossy,
lossless and with alpha, in a loose tree and as tar shard members, give
torchvision's Resize(256) + CenterCrop(224) pixels of PIL's convert("RGB"),
and its RandomResizedCrop's with the box pinned to the whole image;
the format is told by the bytes (a PNG named .jpg decodes); a PNG and a
lossless WebP of the same pixels give the same RandomResizedCrop batches;
damaged files are bad samples with the library's reason, and an image over
max_pixels is refused by its header.

PNGs are written here by a small writer of the format itself (PIL writes
neither 16-bit RGB nor interlaced PNGs). One deliberate difference from
PIL: a 16-bit grey PNG becomes its high byte, as every other 16-bit PNG
does in PIL too; PIL 9's convert("RGB") clips that one type to 255
instead (a 16-bit grey photo comes out white).

Bound: a mean absolute difference per channel value (0-255) of 0.3, the
JPEG path's at full scale (the filter is PIL's; only rounding differs, as
test_pixels.py holds): PNG and WebP are always decoded at full scale (a
WebP cropped to the window), large ones included."""

import io
import os
import struct
import subprocess
import tarfile
import zlib

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed for this python "
                            "(Debian: python3-torch, installed by scripts/deps.sh)")
pytest.importorskip("PIL", reason="PIL is not installed for this python (Debian: python3-pil)")
pytest.importorskip("torchvision", reason="torchvision is not installed for this python "
                    "(Debian: python3-torchvision, installed by scripts/deps.sh)")
np = pytest.importorskip("numpy", reason="numpy is not installed for this python")
import ringfeed  # noqa: E402
from PIL import Image, features  # noqa: E402
from torchvision import transforms  # noqa: E402

from test_pixels import as_bytes, photo  # noqa: E402

FULL_SCALE = 0.3
RINGFEED = os.environ.get("RINGFEED", "build/ringfeed")
BUILT = ringfeed.formats()


def needs(fmt):
    return pytest.mark.skipif(fmt not in BUILT, reason="this ringfeed was built without %s "
                              "(scripts/deps.sh installs libspng-dev and libwebp-dev)" % fmt)


# ---- a PNG writer: any colour type, bit depth, tRNS, Adam7 ----------------------

ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2),
         (0, 1, 1, 2)]


def chunk(kind, data):
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))


def pack_rows(a, depth):
    """a: (rows, values) unsigned samples -> packed scanlines, big-endian."""
    if depth == 16:
        return [r.astype(">u2").tobytes() for r in a]
    if depth == 8:
        return [r.astype(np.uint8).tobytes() for r in a]
    per = 8 // depth
    out = []
    for r in a:
        r = np.concatenate([r, np.zeros((-len(r)) % per, r.dtype)]).reshape(-1, per)
        shifts = depth * np.arange(per - 1, -1, -1)
        out.append((r.astype(np.uint16) << shifts).sum(1).astype(np.uint8).tobytes())
    return out


def png_bytes(a, color_type, depth, palette=None, trns=None, interlace=False):
    """a: h x w x channels samples (integers of the bit depth)."""
    h, w, ch = a.shape
    raw = bytearray()
    passes = ADAM7 if interlace else [(0, 0, 1, 1)]
    for x0, y0, dx, dy in passes:
        sub = a[y0::dy, x0::dx]
        if sub.shape[0] == 0 or sub.shape[1] == 0:
            continue
        for line in pack_rows(sub.reshape(sub.shape[0], -1), depth):
            raw += b"\0" + line
    out = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, color_type,
                                                              0, 0, int(interlace)))
    if palette is not None:
        out += chunk(b"PLTE", palette.astype(np.uint8).tobytes())
    if trns is not None:
        out += chunk(b"tRNS", trns)
    return out + chunk(b"IDAT", zlib.compress(bytes(raw), 6)) + chunk(b"IEND", b"")


def rgb_photo(w, h, seed):
    return photo(w, h, seed).permute(1, 2, 0).numpy().astype(np.int64)   # h x w x 3


def png_variants(w, h, seed):
    """name -> (PNG bytes, the RGB PIL's convert gives, the RGB ringfeed should give)."""
    rgb = rgb_photo(w, h, seed)
    grey = (rgb * [299, 587, 114]).sum(2) // 1000
    alpha = (np.arange(w)[None, :] * 255 // max(1, w - 1)).repeat(h, 0)
    wide = rgb * 257 + (rgb * 7) % 256            # 16-bit samples, high byte = rgb
    pal_img = Image.fromarray(rgb.astype(np.uint8)).quantize(colors=200)
    index = np.array(pal_img)[..., None]
    palette = np.array(pal_img.getpalette()[:600]).reshape(-1, 3)
    grey16 = grey * 257 + 100
    high = np.repeat((grey16 >> 8)[..., None], 3, 2)
    v = {
        "rgb8": (png_bytes(rgb, 2, 8), None),
        "rgba8": (png_bytes(np.dstack([rgb, alpha]), 6, 8), None),
        "grey8": (png_bytes(grey[..., None], 0, 8), None),
        "grey_alpha8": (png_bytes(np.dstack([grey, alpha]), 4, 8), None),
        "palette": (png_bytes(index, 3, 8, palette=palette), None),
        "palette_trns": (png_bytes(index, 3, 8, palette=palette,
                                   trns=bytes(range(0, 256, 2))[:100]), None),
        "rgb16": (png_bytes(wide, 2, 16), None),
        "rgba16": (png_bytes(np.dstack([wide, alpha * 257]), 6, 16), None),
        "grey_alpha16": (png_bytes(np.dstack([grey * 257, alpha * 257]), 4, 16), None),
        # PIL clips this one (see the module's text): the high byte is the reference
        "grey16": (png_bytes(grey16[..., None], 0, 16), high),
        "interlaced_rgb8": (png_bytes(rgb, 2, 8, interlace=True), None),
        "interlaced_palette": (png_bytes(index, 3, 8, palette=palette, interlace=True), None),
    }
    for depth in (1, 2, 4):
        top = (1 << depth) - 1
        v["grey%d" % depth] = (png_bytes((grey * top // 255)[..., None], 0, depth), None)
    v["grey2_trns"] = (png_bytes((grey * 3 // 255)[..., None], 0, 2, trns=b"\0\1"), None)
    return {k: (data, ref) for k, (data, ref) in v.items()}


def webp_variants(w, h, seed):
    rgb = rgb_photo(w, h, seed).astype(np.uint8)
    alpha = (np.arange(w)[None, :] * 255 // max(1, w - 1)).repeat(h, 0).astype(np.uint8)
    out = {}
    for name, img, kw in (("lossy", Image.fromarray(rgb), dict(quality=85)),
                          ("lossless", Image.fromarray(rgb), dict(lossless=True)),
                          ("lossy_alpha", Image.fromarray(np.dstack([rgb, alpha]), "RGBA"),
                           dict(quality=85)),
                          ("lossless_alpha", Image.fromarray(np.dstack([rgb, alpha]), "RGBA"),
                           dict(lossless=True, exact=True))):
        buf = io.BytesIO()
        img.save(buf, "WEBP", **kw)
        out[name] = buf.getvalue()
    return out


# ---- the reference and ringfeed's pixels ----------------------------------------

CENTER = transforms.Compose([transforms.Resize(256), transforms.CenterCrop(224),
                             transforms.PILToTensor()])


def reference(data, rgb=None, transform=CENTER):
    """torchvision's transform (Resize + CenterCrop) of PIL's convert("RGB")
    of data (or of rgb), as HWC int16."""
    im = Image.fromarray(rgb.astype(np.uint8)) if rgb is not None else \
        Image.open(io.BytesIO(data)).convert("RGB")
    return transform(im).permute(1, 2, 0).to(torch.int16)


def write_tree(root, files):
    """files: [(name, bytes)] into root/c/; returns root as str."""
    os.makedirs(os.path.join(root, "c"), exist_ok=True)
    for name, data in files:
        with open(os.path.join(root, "c", name), "wb") as f:
            f.write(data)
    return str(root)


def load(source, n, **kw):
    """ringfeed's images by sample id (uint8 HWC, int16)."""
    got = {}
    args = dict(batch_size=1, resize=256, crop=224, dtype="uint8", layout="hwc", shuffle=0,
                threads=2, with_ids=True, copy=True)
    args.update(kw)
    with ringfeed.Loader(source, **args) as loader:
        for images, _, ids in loader:
            for k, i in enumerate(ids.tolist()):
                got[i] = images[k].to(torch.int16)
    assert sorted(got) == list(range(n))
    return got


def mean_diff(a, b):
    return (a - b).abs().double().mean().item()


def assert_within(diffs, bound=FULL_SCALE):
    """diffs: {name: mean difference}; each at most bound, all of them named
    in the message."""
    report = ", ".join("%s %.3f" % kv for kv in sorted(diffs.items()))
    for n, d in diffs.items():
        assert d <= bound, "%s: mean difference %.3f > %.1f; all: %s" % (n, d, bound, report)


@needs("png")
@pytest.mark.filterwarnings("ignore:Palette images with Transparency")   # PIL's, for tRNS
def test_every_png_colour_type_and_depth_gives_torchvisions_pixels(tmp_path):
    # a 1x-2x shrink and an enlargement
    cases = []
    for (w, h), seed in (((500, 375), 1), ((200, 150), 2)):
        for name, (data, rgb) in sorted(png_variants(w, h, seed).items()):
            cases.append(("%s_%dx%d.png" % (name, w, h), data, rgb))
    root = write_tree(tmp_path / "png", [(n, d) for n, d, _ in cases])
    got = load(root, len(cases))
    names = sorted(n for n, _, _ in cases)   # ImageFolder order: sample ids
    by_name = {n: (d, rgb) for n, d, rgb in cases}
    diffs = {n: mean_diff(got[i], reference(*by_name[n])) for i, n in enumerate(names)}
    assert_within(diffs)


@needs("webp")
def test_webp_lossy_lossless_alpha_give_torchvisions_pixels(tmp_path):
    # a 1x-2x shrink, and shrinks past 2x and 4x (where a JPEG is decoded at 1/2, 1/4)
    cases = []
    for (w, h), seed in (((500, 375), 3), ((1003, 751), 4), ((2105, 1811), 5)):
        for name, data in sorted(webp_variants(w, h, seed).items()):
            cases.append(("%s_%dx%d.webp" % (name, w, h), data))
    root = write_tree(tmp_path / "webp", cases)
    got = load(root, len(cases))
    names = sorted(n for n, _ in cases)
    by_name = dict(cases)
    diffs = {n: mean_diff(got[i], reference(by_name[n])) for i, n in enumerate(names)}
    assert_within(diffs)


@needs("png")
@needs("webp")
@pytest.mark.filterwarnings("ignore:Palette images with Transparency")   # PIL's, for tRNS
def test_random_resized_crop_of_the_whole_image_gives_torchvisions_pixels(tmp_path):
    # RandomResizedCrop draws its box from each loader's own generator, so
    # the box is pinned: scale (1, 1) and the image's own aspect ratio give
    # the whole image on both sides, resized to 224 x 224 (a 2.2x and a 1.7x
    # shrink at once)
    w, h = 500, 375
    cases = [("%s.png" % k, data, rgb) for k, (data, rgb) in
             sorted(png_variants(w, h, 21).items())]
    cases += [("%s.webp" % k, data, None) for k, data in sorted(webp_variants(w, h, 22).items())]
    root = write_tree(tmp_path / "rrc", [(n, d) for n, d, _ in cases])
    ratio = w / h
    got = load(root, len(cases), random_resized_crop=True, rrc_scale=(1.0, 1.0),
               rrc_ratio=(ratio, ratio), flip=0.0)
    rrc = transforms.Compose([transforms.RandomResizedCrop(224, scale=(1.0, 1.0),
                                                           ratio=(ratio, ratio)),
                              transforms.PILToTensor()])
    names = sorted(n for n, _, _ in cases)
    by_name = {n: (d, rgb) for n, d, rgb in cases}
    diffs = {n: mean_diff(got[i], reference(*by_name[n], transform=rrc))
             for i, n in enumerate(names)}
    assert_within(diffs)


@needs("png")
@needs("webp")
def test_png_and_lossless_webp_of_the_same_pixels_give_the_same_batches(tmp_path):
    files_png, files_webp = [], []
    for i, (w, h) in enumerate(((300, 400), (500, 375), (640, 440), (333, 301))):
        rgb = rgb_photo(w, h, 10 + i).astype(np.uint8)
        files_png.append(("p%d.png" % i, png_bytes(rgb.astype(np.int64), 2, 8)))
        buf = io.BytesIO()
        Image.fromarray(rgb).save(buf, "WEBP", lossless=True, exact=True)
        files_webp.append(("p%d.webp" % i, buf.getvalue()))
    a = write_tree(tmp_path / "a", files_png)
    b = write_tree(tmp_path / "b", files_webp)
    for kw in (dict(), dict(random_resized_crop=True, flip=0.5, shuffle=1, seed=7)):
        ga, gb = load(a, 4, **kw), load(b, 4, **kw)
        for i in range(4):
            assert torch.equal(ga[i], gb[i]), (kw, i)


@needs("png")
@needs("webp")
def test_the_format_is_told_by_the_bytes_in_trees_and_shards(tmp_path):
    png = png_variants(320, 240, 6)["rgb8"][0]
    webp = webp_variants(320, 240, 7)["lossless"]
    jpeg = io.BytesIO()
    Image.open(io.BytesIO(png)).save(jpeg, "JPEG", quality=90)
    # each format under each other's name
    files = [("a.jpg", png), ("b.png", webp), ("c.webp", jpeg.getvalue())]
    root = write_tree(tmp_path / "tree", files)
    refs = [reference(png), reference(webp), reference(jpeg.getvalue())]
    got = load(root, 3)
    for i in range(3):
        assert mean_diff(got[i], refs[i]) <= FULL_SCALE, files[i][0]
    # img2dataset's shard layout: KEY.png / KEY.webp / KEY.jpg beside KEY.cls
    shard = tmp_path / "shards" / "shard-000000.tar"
    os.makedirs(shard.parent)
    with tarfile.open(shard, "w") as t:
        for key, ext, data in (("000", "png", png), ("001", "webp", webp),
                               ("002", "jpg", jpeg.getvalue())):
            for name, body in (("%s.%s" % (key, ext), data), ("%s.cls" % key, b"0")):
                info = tarfile.TarInfo(name)
                info.size = len(body)
                t.addfile(info, io.BytesIO(body))
    got = load(str(shard.parent), 3)
    for i in range(3):
        assert mean_diff(got[i], refs[i]) <= FULL_SCALE, "member %d" % i


@needs("png")
@needs("webp")
def test_a_pack_of_a_mixed_tree_gives_its_batches_members_named_by_their_bytes(tmp_path):
    files = []
    for i in range(9):
        rgb = rgb_photo(180 + 20 * i, 160 + 10 * i, 40 + i).astype(np.uint8)
        buf = io.BytesIO()
        fmt = ("PNG", "WEBP", "JPEG")[i % 3]
        Image.fromarray(rgb).save(buf, fmt, **({"quality": 80} if fmt != "PNG" else {}))
        # one of each under a name that is not its format
        name = "s%d.%s" % (i, ("png", "webp", "jpg")[i % 3] if i < 6 else "jpg")
        files.append((name, buf.getvalue()))
    root = write_tree(tmp_path / "tree", files)
    out = tmp_path / "packed"
    subprocess.run([RINGFEED, "pack", root, "-o", str(out)], check=True, capture_output=True)
    members = []
    for shard in sorted(os.listdir(out)):
        if shard.endswith(".tar"):
            with tarfile.open(out / shard) as t:
                members += [m.name for m in t.getmembers() if not m.name.endswith(".cls")]
    assert sorted(m.rsplit(".", 1)[1] for m in members) == sorted(["png", "webp", "jpg"] * 3)
    for kw in (dict(), dict(random_resized_crop=True, shuffle=1, seed=3, flip=0.5)):
        a, b = load(root, 9, **kw), load(str(out), 9, **kw)
        for i in range(9):
            assert torch.equal(a[i], b[i]), (kw, i)


def bad_samples(root, **kw):
    """{file name: reason} of every bad sample of one epoch over root."""
    seen = {}
    with ringfeed.Loader(root, batch_size=1, resize=64, crop=32, dtype="uint8", shuffle=0,
                         threads=1, on_bad_sample=lambda path, err, why: seen.update(
                             {os.path.basename(path): why}), **kw) as loader:
        for _ in loader:
            pass
    return seen


@needs("png")
@needs("webp")
def test_damaged_files_are_bad_samples_with_the_librarys_reason(tmp_path):
    png = png_variants(64, 48, 8)["rgb8"][0]
    webp = webp_variants(64, 48, 9)["lossy"]
    idat = png.index(b"IDAT")
    idat_len = struct.unpack(">I", png[idat - 4:idat])[0]
    bad_data = bytearray(png)
    bad_data[idat + 10] ^= 0xFF          # IDAT's data changed, its CRC not
    bad_crc = bytearray(png)
    bad_crc[idat + 4 + idat_len] ^= 0xFF  # IDAT's CRC changed, its data not
    bad_chunk = bytearray(png)
    bad_chunk[idat:idat + 4] = b"ID!T"   # an unknown critical chunk
    huge = bytearray(png)                # a header claiming 100000 x 100000 pixels
    huge[16:24] = struct.pack(">II", 100000, 100000)
    huge[29:33] = struct.pack(">I", zlib.crc32(bytes(huge[12:29])))
    files = [("good.png", png), ("data.png", bytes(bad_data)), ("cut.png", png[:len(png) // 2]),
             ("chunk.png", bytes(bad_chunk)), ("huge.png", bytes(huge)),
             ("crc.png", bytes(bad_crc)), ("cut.webp", webp[:len(webp) // 2]),
             ("junk.webp", b"RIFF\0\0\0\0WEBPjunk" * 4), ("good.webp", webp)]
    root = write_tree(tmp_path / "bad", files)
    # verify_full reads each image to its end: the CRC after the last row too
    seen = bad_samples(root, verify_full=True, max_pixels=1 << 26)
    assert set(seen) == {"data.png", "cut.png", "chunk.png", "huge.png", "crc.png",
                         "cut.webp", "junk.webp"}, seen
    for name in ("data.png", "cut.png", "chunk.png", "crc.png"):
        assert seen[name].startswith("corrupt PNG: "), seen
    assert "checksum" in seen["crc.png"], seen
    assert "critical chunk" in seen["chunk.png"], seen
    assert "max_pixels" in seen["huge.png"] and "100000 x 100000" in seen["huge.png"], seen
    for name in ("cut.webp", "junk.webp"):
        assert seen[name].startswith("corrupt WebP: "), seen
    # without it, a damaged CRC the window's rows never reach goes unseen,
    # as damage below a JPEG's window does; the rest is found all the same
    seen = bad_samples(root, max_pixels=1 << 26)
    assert set(seen) == {"data.png", "cut.png", "chunk.png", "huge.png", "cut.webp",
                         "junk.webp"}, seen
