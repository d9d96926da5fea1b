"""The label linker: which labels it finds in a text, where, and why (ADR 0031).

Expected spans are written out by hand or computed by a brute-force reference that tries
every span of the text; the linker's own matcher never computes an expected value.
"""

from __future__ import annotations

import re
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trails.errors import InvalidArgumentError, InvalidArgumentTypeError
from trails.ingest.document import Chunk
from trails.ingest.linking import LabelLinker, Linker, Mention, ScopeLinker, check_linker

LABEL = "http://www.w3.org/2000/01/rdf-schema#label"


def found(text: str, labels: dict[str, str], **options: object) -> list[tuple[str, str]]:
    """(entity, matched text) for each mention of ``labels`` (entity -> label) in ``text``."""
    matcher = LabelLinker(**options).matcher((e, label, LABEL) for e, label in labels.items())
    return [(m.entity, m.text) for m in matcher.mentions(Chunk(text, 0, len(text), 0))]


def test_labels_match_whole_words_only():
    labels = {"acme": "ACME", "cpp": "C++", "ai": "AI"}
    assert found("ACMEs and subacme and ACME_X", labels) == []
    assert found("(ACME), ACME. acme!", labels) == [("acme", "ACME"), ("acme", "ACME"),
                                                     ("acme", "acme")]
    assert found("We write C++ code; C++11 too.", labels) == [("cpp", "C++"), ("cpp", "C++")]
    assert found("FAIR and AIR, but AI.", labels) == [("ai", "AI")]


def test_case_and_accent_folding_can_each_be_turned_off():
    labels = {"sg": "Société Générale"}
    text = "Deal with SOCIETE GENERALE, then société générale, then Société Générale."
    assert [t for _, t in found(text, labels)] == [
        "SOCIETE GENERALE", "société générale", "Société Générale"]
    assert [t for _, t in found(text, labels, case=False)] == ["Société Générale"]
    assert [t for _, t in found(text, labels, accents=False)] == [
        "société générale", "Société Générale"]
    assert found(text, labels, case=False, accents=False) == [("sg", "Société Générale")]


def test_folding_keeps_offsets_in_the_original_text():
    text = "Straße, STRASSE, and Cafe\u0301 (decomposed) and Ǆemal."
    labels = {"street": "strasse", "cafe": "cafe", "dz": "dzemal"}
    matcher = LabelLinker().matcher((e, label, LABEL) for e, label in labels.items())
    mentions = matcher.mentions(Chunk(text, 100, 100 + len(text), 0))
    assert [(m.entity, m.text) for m in mentions] == [
        ("street", "Straße"), ("street", "STRASSE"), ("cafe", "Cafe\u0301"), ("dz", "Ǆemal")]
    for m in mentions:  # offsets are the document's: the chunk starts at 100
        assert text[m.start - 100 : m.end - 100] == m.text


def test_a_character_that_folds_to_several_is_matched_whole():
    # "ß" folds to "ss": the label "s" must not match half of it.
    assert found("Maß s", {"s": "ss"}) == []
    assert found("Maß s", {"s": "s"}, min_length=1) == [("s", "s")]


def test_whitespace_in_a_label_matches_a_line_break():
    assert found("sold to ACME\nCorp today", {"acme": "ACME Corp"}) == [("acme", "ACME\nCorp")]


def test_a_run_of_whitespace_matches_one_space():
    """Text wrapped and indented, Windows line ends, two spaces after extraction from a PDF:
    a label's one space matched exactly one whitespace character, so none of these linked."""
    labels = {"boa": "Bank of America"}
    for gap in ("\r\n", "\n    ", "  ", " \t", "\u00a0 ", "\u3000\u3000"):
        for tail in ("", " é"):  # ASCII text, and text that is not
            text = f"Deal with Bank of{gap}America today{tail}"
            assert found(text, labels) == [("boa", f"Bank of{gap}America")], repr(gap)
    assert found("Bank of America", {"boa": "Bank  of\nAmerica"}) == [("boa", "Bank of America")]
    # The offsets are still the text's, with the whole run inside the match.
    text = "x  Bank of \n America   y"
    matcher = LabelLinker().matcher([("boa", "Bank of America", LABEL)])
    [m] = matcher.mentions(Chunk(text, 50, 50 + len(text), 0))
    assert (m.start, m.end) == (53, 70) and text[3:20] == m.text == "Bank of \n America"


def test_overlapping_labels_keep_the_leftmost_longest_unless_nested():
    labels = {"boa": "Bank of America", "us": "America", "bank": "Bank"}
    text = "Bank of America and America."
    assert found(text, labels) == [("boa", "Bank of America"), ("us", "America")]
    assert sorted(found(text, labels, nested=True)) == sorted([
        ("boa", "Bank of America"), ("bank", "Bank"), ("us", "America"), ("us", "America")])
    # Overlapping without nesting: the leftmost wins.
    assert found("New York Times Square", {"nyt": "New York Times", "ts": "Times Square"}) == [
        ("nyt", "New York Times")]


def test_one_label_of_several_entities_links_them_all_with_its_predicates():
    matcher = LabelLinker().matcher([
        ("paris-city", "Paris", LABEL), ("paris-person", "Paris", "https://schema.org/name"),
        ("paris-city", "paris", "http://www.w3.org/2004/02/skos/core#altLabel")])
    mentions = matcher.mentions(Chunk("In Paris.", 0, 9, 0))
    assert {(m.entity, m.label, m.predicate) for m in mentions} == {
        ("paris-city", "Paris", LABEL), ("paris-person", "Paris", "https://schema.org/name"),
        ("paris-city", "paris", "http://www.w3.org/2004/02/skos/core#altLabel")}
    assert {(m.start, m.end, m.text) for m in mentions} == {(3, 8, "Paris")}


def test_short_labels_are_ignored_below_min_length():
    assert found("A B c", {"a": "A"}) == []
    assert found("A B c", {"a": "A"}, min_length=1) == [("a", "A")]
    assert found("anything", {"blank": "   "}, min_length=1) == []


def test_bad_settings_and_linkers_are_refused():
    with pytest.raises(InvalidArgumentTypeError, match="list of predicate IRIs"):
        LabelLinker(LABEL)
    with pytest.raises(InvalidArgumentError, match="reads no labels"):
        LabelLinker([])
    with pytest.raises(InvalidArgumentError, match="no absolute IRI"):
        LabelLinker(["rdfs:label> } DROP ALL {"])
    with pytest.raises(InvalidArgumentError, match="min_length"):
        LabelLinker(min_length=0)
    with pytest.raises(InvalidArgumentTypeError, match="linker must be a Linker"):
        check_linker("LabelLinker")
    assert isinstance(LabelLinker(), Linker)
    assert isinstance(LabelLinker().matcher([]), ScopeLinker)
    assert LabelLinker().matcher([]).mentions(Chunk("ACME", 0, 4, 0)) == []


# -- the matcher against a brute-force reference ------------------------------------------

def _fold(text: str) -> str:
    """The reference's folding, written out: lower case, no accents, a run of spaces one."""
    out = []
    for ch in text:
        if ch.isspace():
            out.append(" ")
            continue
        ch = ch.casefold()
        out.append("".join(c for c in unicodedata.normalize("NFKD", ch)
                           if not unicodedata.combining(c)))
    return re.sub(" {2,}", " ", "".join(out))


def _word(ch: str) -> bool:
    return ch.isalnum() or ch == "_" or unicodedata.category(ch).startswith("M")


def _mark(ch: str) -> bool:
    return unicodedata.category(ch).startswith("M")


def _reference(text: str, labels: list[str]) -> set[tuple[int, int, str]]:
    """Every span of ``text`` that folds to a label, on word boundaries (tries them all)."""
    out = set()
    for label in labels:
        pattern = _fold(label).strip()
        if len(pattern.strip()) < 2:
            continue
        for i in range(len(text)):
            for j in range(i + 1, len(text) + 1):
                if _fold(text[i:j]) != pattern or _mark(text[i]) or (
                        j < len(text) and _mark(text[j])):  # a letter and its marks are one
                    continue
                left, right = _fold(text[:i]), _fold(text[j:])
                if (left and _word(left[-1]) and _word(pattern[0])) or (
                        right and _word(right[0]) and _word(pattern[-1])):
                    continue
                out.add((i, j, pattern))
    return out


ALPHABET = st.sampled_from(list("abAB éÉßs-.\n\u0301"))
WORDS = st.text(ALPHABET, min_size=1, max_size=5)


@settings(max_examples=300, deadline=None)
@given(text=st.text(ALPHABET, max_size=40), labels=st.lists(WORDS, min_size=1, max_size=4))
def test_no_label_occurrence_is_missed_and_every_span_folds_to_its_label(text, labels):
    entities = {f"e{i}": label for i, label in enumerate(labels)}
    matcher = LabelLinker(nested=True).matcher((e, label, LABEL) for e, label in entities.items())
    mentions = matcher.mentions(Chunk(text, 0, len(text), 0))
    for m in mentions:
        assert _fold(text[m.start : m.end]) == _fold(m.label).strip()
        assert m.text == text[m.start : m.end]
    reported = {(m.start, m.end, _fold(m.label).strip()) for m in mentions}
    assert reported == _reference(text, labels)


# ASCII texts take their own path (offsets kept, boundaries found by one regex scan):
# digits, "_" and labels that begin or end with punctuation ("C++") are its edge cases.
ASCII = st.sampled_from(list("abAB1_ +-.\n"))


@settings(max_examples=300, deadline=None)
@given(text=st.text(ASCII, max_size=40),
       labels=st.lists(st.text(ASCII, min_size=1, max_size=5), min_size=1, max_size=4))
def test_in_ascii_text_no_label_is_missed_and_none_crosses_a_word(text, labels):
    entities = {f"e{i}": label for i, label in enumerate(labels)}
    matcher = LabelLinker(nested=True).matcher((e, label, LABEL) for e, label in entities.items())
    mentions = matcher.mentions(Chunk(text, 0, len(text), 0))
    reported = {(m.start, m.end, _fold(m.label).strip()) for m in mentions}
    assert reported == _reference(text, labels)


@settings(max_examples=300, deadline=None)
@given(text=st.text(ALPHABET, max_size=40), labels=st.lists(WORDS, min_size=1, max_size=4))
def test_without_nesting_the_kept_spans_are_the_leftmost_longest(text, labels):
    matcher = LabelLinker().matcher((f"e{i}", label, LABEL) for i, label in enumerate(labels))
    kept = sorted({(m.start, m.end) for m in matcher.mentions(Chunk(text, 0, len(text), 0))})
    everything = sorted({(i, j) for i, j, _ in _reference(text, labels)})
    expected, end = [], -1  # greedy by start, longest first
    for i, j in sorted(everything, key=lambda s: (s[0], -s[1])):
        if i >= end:
            expected.append((i, j))
            end = j
    assert kept == expected


def test_mentions_are_plain_values():
    m = Mention(1, 5, "https://ex.org/e", "ACME", "ACME", LABEL)
    assert m.linker == "label" and m == Mention(1, 5, "https://ex.org/e", "ACME", "ACME", LABEL)


def test_a_prefixed_label_predicate_reads_the_labels_of_its_iri():
    """"rdfs:label" is also a well-formed IRI of the scheme "rdfs": taken as one, it read no
    labels, and a re-link with it removed every link."""
    from trails.kg import OxigraphGraph

    kg = OxigraphGraph()
    kg.update('INSERT DATA { <https://ex.org/acme> <http://www.w3.org/2000/01/rdf-schema#label> '
              '"ACME" . <https://ex.org/globex> <http://www.w3.org/2004/02/skos/core#prefLabel> '
              '"Globex" . <https://ex.org/hooli> <https://schema.org/name> "Hooli" }')
    linker = LabelLinker(["rdfs:label", "skos:prefLabel", "schema:name"])
    assert linker.predicates == (LABEL, "http://www.w3.org/2004/02/skos/core#prefLabel",
                                 "https://schema.org/name")
    text = "ACME, Globex and Hooli."
    mentions = linker.for_scope(kg, "default").mentions(Chunk(text, 0, len(text), 0))
    assert [m.entity for m in mentions] == ["https://ex.org/acme", "https://ex.org/globex",
                                            "https://ex.org/hooli"]
    # An IRI of another scheme stays as written.
    assert LabelLinker(["urn:ex:label"]).predicates == ("urn:ex:label",)


def test_canonically_equivalent_text_matches_whatever_folding_is_kept():
    """A precomposed "é" and "e" + combining acute are the same text (NFC and NFD): with
    accents kept they matched only when label and text were written alike."""
    nfc, nfd = "Soci\u00e9t\u00e9 G\u00e9n\u00e9rale", "Socie\u0301te\u0301 Ge\u0301ne\u0301rale"
    for label, text in ((nfc, nfd), (nfd, nfc)):
        for options in ({}, {"accents": False}, {"case": False, "accents": False}):
            assert found(f"Deal with {text}.", {"sg": label}, **options) == [("sg", text)]
    # Vietnamese "ệ": the two marks in either order, or precomposed with one of them.
    for text in ("Vie\u0323\u0302t", "Vi\u1ec7t", "Vi\u00ea\u0323t"):
        assert found(f"{text} Nam", {"vn": "Vie\u0302\u0323t Nam"}, accents=False) == [
            ("vn", f"{text} Nam")]


def test_a_match_never_splits_a_letter_from_its_marks():
    # With accents kept, "Cafe" is not in "Café" written with a combining accent, and "café"
    # does not end inside "cafés".
    assert found("Cafe\u0301 and cafe\u0301s.", {"c": "Cafe", "k": "café"}, accents=False) == [
        ("k", "Cafe\u0301")]
    # Hindi: a vowel sign is a mark; "दिल्ली" (Delhi) is not the start of "दिल्लीवाला".
    assert found("दिल्लीवाला", {"d": "दिल्ली"}) == []
    assert found("दिल्ली में", {"d": "दिल्ली"}) == [("d", "दिल्ली")]
    assert found("कि", {"k": "क"}, min_length=1) == []


def test_scripts_written_without_spaces_link_inside_a_sentence():
    """Chinese, Japanese and Thai put no spaces between words: a label followed by more
    text was never a whole word, so such text linked (almost) nothing."""
    assert found("東京都に住む。", {"tokyo": "東京"}) == [("tokyo", "東京")]
    assert found("我在北京工作", {"beijing": "北京"}) == [("beijing", "北京")]
    assert found("ฉันอยู่กรุงเทพมหานคร", {"bangkok": "กรุงเทพ"}) == [("bangkok", "กรุงเทพ")]
    assert found("トヨタ自動車の社長", {"toyota": "トヨタ"}) == [("toyota", "トヨタ")]
    # A label in a spaced script next to one of them; still whole words among themselves.
    assert found("Sonyの製品, not Sonya.", {"sony": "Sony"}) == [("sony", "Sony")]
    # Overlapping labels keep the leftmost longest, as everywhere.
    assert found("東京都", {"tokyo": "東京", "kyoto": "京都"}) == [("tokyo", "東京")]


def test_a_soft_hyphen_or_a_joiner_inside_a_word_is_no_part_of_it():
    """HTML's &shy; and a PDF's hyphenation leave soft hyphens inside words: "Micro\\u00adsoft"
    never matched the label "Microsoft"."""
    assert found("Bought by Micro\u00adsoft today", {"ms": "Microsoft"}) == [
        ("ms", "Micro\u00adsoft")]
    assert found("Donau\u00addampf\u00adschiff", {"d": "Donaudampfschiff"}, accents=False) == [
        ("d", "Donau\u00addampf\u00adschiff")]
    assert found("Micro\u2060soft", {"ms": "Microsoft"}) == [("ms", "Micro\u2060soft")]
    # A zero-width space separates words: it is no joiner.
    assert found("ACME\u200bCorp", {"acme": "ACME"}) == [("acme", "ACME")]
    assert found("Micro\u200bsoft", {"ms": "Microsoft"}) == []


def test_a_korean_label_is_found_before_a_particle_and_not_inside_another_word():
    """Korean attaches particles to the word they follow: "삼성전자는" and "삼성전자의" name
    Samsung Electronics, yet the label "삼성전자" was never found in them."""
    labels = {"samsung": "삼성전자", "seoul": "서울"}
    text = "삼성전자는 서울에서 삼성전자의 주식을, 삼성전자가 발표했다. 삼성전자에서는 (삼성전자)"
    assert [t for _, t in found(text, labels)] == [
        "삼성전자", "서울", "삼성전자", "삼성전자", "삼성전자", "삼성전자"]
    # The mention spans the label alone, not its particle.
    matcher = LabelLinker().matcher([("samsung", "삼성전자", LABEL)])
    [m] = matcher.mentions(Chunk("주가: 삼성전자가 올랐다", 0, 13, 0))
    assert (m.start, m.end) == (4, 8)
    # Other syllables after the label make another word: no match.
    for other in ("서울시", "서울대학교", "삼성전자공업", "삼성전자가게", "서울은행", "서울이다x"):
        assert found(other, labels) == [], other
    # A particle does not let a label start inside a word.
    assert found("신삼성전자는", labels) == []


def test_turkish_dotted_and_dotless_i_are_one_letter_when_case_is_folded():
    # "I" is the capital of the Turkish dotless "ı" and "İ" that of "i": each casing of a
    # Turkish word is that word.
    labels = {"isik": "Işık", "ist": "İstanbul"}
    text = "ışık, IŞIK, Işık; istanbul, İSTANBUL, ISTANBUL."
    assert found(text, labels) == [("isik", "ışık"), ("isik", "IŞIK"), ("isik", "Işık"),
                                   ("ist", "istanbul"), ("ist", "İSTANBUL"),
                                   ("ist", "ISTANBUL")]
    assert found(text, labels, accents=False) == found(text, labels)
    assert found(text, labels, case=False) == [("isik", "Işık")]  # matched as written


def test_a_curly_apostrophe_or_a_typographic_hyphen_is_the_labels_own():
    labels = {"mcd": "McDonald's", "coke": "Coca-Cola"}
    text = "McDonald’s sold Coca‑Cola (and Coca‐Cola) at McDonald‘s; McDonald's too."
    assert found(text, labels) == [("mcd", "McDonald’s"), ("coke", "Coca‑Cola"),
                                   ("coke", "Coca‐Cola"), ("mcd", "McDonald‘s"),
                                   ("mcd", "McDonald's")]
    assert found("Coca Cola and McDonalds", labels) == []


def _turkish_upper(word: str) -> str:
    return word.replace("i", "İ").replace("ı", "I").upper()


def _turkish_lower(word: str) -> str:
    return word.replace("I", "ı").replace("İ", "i").lower()


TURKISH = st.text(st.sampled_from(list("aiıIİsşŞgğĞoöÖcçÇuüÜk")), min_size=2, max_size=8)


@settings(max_examples=200, deadline=None)
@given(word=TURKISH, accents=st.booleans())
def test_a_label_is_found_in_every_casing_of_itself(word, accents):
    casings = [word, word.upper(), word.lower(), _turkish_upper(word), _turkish_lower(word),
               word.capitalize()]
    text = " / ".join(casings)
    spans = [(m.start, m.end) for m in LabelLinker(accents=accents).matcher(
        [("e", word, LABEL)]).mentions(Chunk(text, 0, len(text), 0))]
    expected, at = [], 0
    for casing in casings:
        expected.append((at, at + len(casing)))
        at += len(casing) + 3
    assert spans == expected
