"""Thumbnails with Pillow (Debian's python3-pil, baked into the runtime image).

The event carries the picture as base64 ("image") and the box to fit it in ("width",
"height", default 128x128); the answer is the thumbnail as base64 in the asked format
("format": PNG, JPEG or WEBP, default PNG) with the sizes before and after. The aspect
ratio is kept, so the thumbnail fits the box without filling it.
"""
import base64
import binascii
import io

from PIL import Image, UnidentifiedImageError

FORMATS = {"PNG", "JPEG", "WEBP"}
MAX_SIDE = 4096


def handle(event):
    if not isinstance(event, dict) or "image" not in event:
        raise ValueError('want {"image": "<base64>", "width": 128, "height": 128}')
    width = int(event.get("width", 128))
    height = int(event.get("height", 128))
    if not (0 < width <= MAX_SIDE and 0 < height <= MAX_SIDE):
        raise ValueError(f"width and height must be between 1 and {MAX_SIDE}")
    fmt = str(event.get("format", "PNG")).upper()
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {sorted(FORMATS)}")
    try:
        data = base64.b64decode(event["image"], validate=True)
        img = Image.open(io.BytesIO(data))
        img.load()
    except (binascii.Error, UnidentifiedImageError, OSError) as e:
        raise ValueError(f"image is not a picture Pillow reads: {e}") from None
    original = img.size
    if fmt == "JPEG" and img.mode not in ("RGB", "L"):
        img = img.convert("RGB")
    img.thumbnail((width, height))
    out = io.BytesIO()
    img.save(out, fmt)
    return {
        "thumbnail": base64.b64encode(out.getvalue()).decode("ascii"),
        "format": fmt,
        "width": img.size[0],
        "height": img.size[1],
        "originalWidth": original[0],
        "originalHeight": original[1],
        "bytes": out.tell(),
    }
