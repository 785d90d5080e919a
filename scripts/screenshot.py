#!/usr/bin/env python3
"""Renders a terminal screen captured with `tmux capture-pane -e -p` (text
with colour escapes) into a PNG, for the README's screenshots.

usage: screenshot.py CAPTURE.ans OUT.png COLS ROWS
needs: pip install pillow pyte; the DejaVu Sans Mono font."""
import sys

import pyte
from PIL import Image, ImageDraw, ImageFont

src, out, cols, rows = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"
BOLD = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono-Bold.ttf"
SANS = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
SIZE = 15
BG = (0x1b, 0x1f, 0x27)
FG = (0xd8, 0xde, 0xe9)
NAMED = {
    "black": (0, 0, 0), "red": (205, 49, 49), "green": (13, 188, 121), "brown": (229, 229, 16),
    "yellow": (229, 229, 16), "blue": (36, 114, 200), "magenta": (188, 63, 188), "cyan": (17, 168, 205),
    "white": (229, 229, 229),
}

def colour(c, default):
    if c == "default":
        return default
    if c in NAMED:
        return NAMED[c]
    try:
        return tuple(int(c[i:i + 2], 16) for i in (0, 2, 4))
    except ValueError:
        return default

screen = pyte.Screen(cols, rows)
stream = pyte.Stream(screen)
text = open(src, encoding="utf-8").read().rstrip("\n").split("\n")
stream.feed("\r\n".join(text[:rows]))

font = ImageFont.truetype(FONT, SIZE)
bold = ImageFont.truetype(BOLD, SIZE)
cw = int(font.getlength("M"))
ch = int(SIZE * 1.25)
sans = ImageFont.truetype(SANS, SIZE)
img = Image.new("RGB", (cols * cw + 24, rows * ch + 24), BG)
d = ImageDraw.Draw(img)
for y in range(rows):
    line = screen.buffer[y]
    for x in range(cols):
        c = line[x]
        fg = colour(c.fg, FG)
        bg = colour(c.bg, BG)
        if c.reverse:
            fg, bg = bg, fg
        px, py = 12 + x * cw, 12 + y * ch
        if bg != BG:
            d.rectangle([px, py, px + cw, py + ch], fill=bg)
        if c.data.strip():
            f = bold if c.bold else font
            if 0x2800 <= ord(c.data[0]) <= 0x28FF:
                f = sans  # braille spinner: not in the mono font
            d.text((px, py + 1), c.data, font=f, fill=fg)
img.save(out)
print(f"{out}: {img.size[0]}x{img.size[1]}")
