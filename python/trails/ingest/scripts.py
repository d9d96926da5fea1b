"""Where words end, by script, for the label linker (:mod:`trails.ingest.linking`).

A label is found on word boundaries: its first and last letters or digits are not next to
another. Two rules widen that. In scripts written without spaces between words (Chinese,
Japanese kana, Thai, Lao, Khmer, Myanmar...) a word may end at any character. Korean writes
spaces between words but attaches a particle to the word it follows ("삼성전자는",
"삼성전자의", "삼성전자에서는"), so a label ending in a Hangul syllable also ends where such
a particle makes the whole rest of the word: "삼성전자" is found in "삼성전자가", never in
"삼성전자공업" ("서울" is not found in "서울시"). The particles are :data:`PARTICLES`.
"""

from __future__ import annotations

import bisect
import unicodedata

__all__ = ["PARTICLES", "is_mark", "is_word", "joined", "particle_follows", "unspaced"]


def is_mark(ch: str) -> bool:
    return not ch.isascii() and unicodedata.category(ch)[0] == "M"


# Scripts written without spaces between words (Chinese, Japanese kana, Thai, Lao, Khmer,
# Myanmar, Tai scripts, Javanese, Balinese): a word may end at any of their characters, so a
# label "東京" is found in "東京都に住む". From the Unicode blocks, as (first, last) code points.
_UNSPACED = (
    (0x0E00, 0x0EFF), (0x1000, 0x109F), (0x1780, 0x17FF), (0x1950, 0x1AAF), (0x1B00, 0x1B7F),
    (0x2E80, 0x2FDF), (0x3005, 0x3007), (0x3021, 0x3029), (0x3031, 0x303C), (0x3040, 0x312F),
    (0x3190, 0x31FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xA980, 0xA9FF), (0xAA60, 0xAADF),
    (0xF900, 0xFAFF), (0xFF66, 0xFF9F), (0x20000, 0x3FFFF))
_UNSPACED_STARTS = [first for first, _ in _UNSPACED]


def unspaced(ch: str) -> bool:
    at = bisect.bisect_right(_UNSPACED_STARTS, ord(ch)) - 1
    return at >= 0 and ord(ch) <= _UNSPACED[at][1]


def joined(before: str, after: str) -> bool:
    """Two characters of one word: both word characters, neither of a script written
    without spaces."""
    return (is_word(before) and is_word(after)
            and not (unspaced(before) or unspaced(after)))


def is_word(ch: str) -> bool:
    """A character a word goes on through: a letter, digit, "_" or a mark (an accent kept,
    a vowel sign)."""
    return ch.isalnum() or ch == "_" or is_mark(ch)


# Korean writes a particle onto the word it follows ("삼성전자는", "삼성전자의"): a label
# ending in a Hangul syllable is found before one, when the particle is the whole rest of the
# word ("삼성전자에서는"), never before other syllables ("서울" is not in "서울시").
PARTICLES = frozenset(
    base + tail
    for base in ("은", "는", "이", "가", "을", "를", "의", "에", "에서", "에게", "께", "께서",
                 "한테", "와", "과", "도", "로", "으로", "만", "부터", "까지", "보다", "처럼",
                 "이나", "나", "랑", "이랑", "하고", "이다", "입니다", "이며", "이고", "마저",
                 "조차", "뿐", "대로", "밖에", "라는", "이라는", "이란", "란", "요", "이요")
    for tail in ("", "는", "도", "의", "만", "은", "를"))
_LONGEST_PARTICLE = max(map(len, PARTICLES))


def hangul(ch: str) -> bool:
    """A Hangul syllable (precomposed, as Korean text is written)."""
    return "\uac00" <= ch <= "\ud7a3"


def particle_follows(text: str, at: int) -> bool:
    """Whether ``text[at:]`` starts with a Korean particle that ends its word, after a
    Hangul syllable."""
    if at <= 0 or at >= len(text) or not hangul(text[at - 1]):
        return False
    end = at
    while end < len(text) and hangul(text[end]) and end - at <= _LONGEST_PARTICLE:
        end += 1
    return text[at:end] in PARTICLES and not (end < len(text) and is_word(text[end]))
