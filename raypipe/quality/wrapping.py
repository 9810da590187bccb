"""Hard-wrapped text: prose whose paragraphs are broken into lines at a fixed width.

Books from Project Gutenberg, mail and plain-text manuals are wrapped at ~70-80 columns, so
a paragraph of eight lines has one line ending in a full stop. Line rules written for
extracted web pages (one paragraph per line), such as FineWeb's share of lines ending in
punctuation, then reject most of them. Judged on paragraphs, they see what they were
written for; the text itself is left as it is.
"""

from __future__ import annotations

MIN_LINES = 8  # continued lines needed to tell a wrap width from chance
MIN_WIDTH, MAX_WIDTH = 40, 100  # narrower: a list or code; wider: long lines, not a width
SLACK = 15  # a wrapped line ends up to a long word short of the width
MIN_NEAR = 0.6  # share of continued lines that end near the width
# Share of continued lines whose next line goes on with the sentence (starts in lowercase):
# web text of one sentence or paragraph per line, whatever its line lengths, has almost none;
# wrapped books have ~90%, wrapped mail and manuals ~50-70%. Scripts without case are
# never taken for wrapped, and keep datatrove's view.
MIN_LOWERCASE = 0.2


def hard_wrapped(lines: list[str]) -> bool:
    """True when most lines followed by another line of the same paragraph end near one
    column, the width the text was wrapped at."""
    pairs = [
        (line.rstrip(), after.lstrip())
        for line, after in zip(lines, lines[1:], strict=False)
        if line.strip() and after.strip()
    ]
    if len(pairs) < MIN_LINES:
        return False
    widths = sorted(len(line) for line, _ in pairs)
    width = widths[int(0.9 * (len(widths) - 1))]
    if not MIN_WIDTH <= width <= MAX_WIDTH:
        return False
    near = sum(width - SLACK <= w <= width for w in widths)
    lowercase = sum(after[0].islower() for _, after in pairs)
    return near >= MIN_NEAR * len(pairs) and lowercase >= MIN_LOWERCASE * len(pairs)


def paragraphs(lines: list[str]) -> list[str]:
    """The lines of each blank-line separated block joined by spaces, one per paragraph."""
    joined, block = [], []
    for line in lines:
        if line.strip():
            block.append(line.strip())
        elif block:
            joined.append(" ".join(block))
            block = []
    if block:
        joined.append(" ".join(block))
    return joined
