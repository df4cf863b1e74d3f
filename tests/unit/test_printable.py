"""Text from an upstream made safe for a terminal or the status page (harness.printable)."""

from __future__ import annotations

from harness.printable import printable


def test_escape_sequences_and_bidi_controls_are_stripped_and_tabs_and_newlines_kept():
    assert printable("ansi \x1b[2J clear") == "ansi [2J clear"
    assert printable("names__esc\x1b]0;PWNED\x07\x1b[31mred\x1b[0m") == "names__esc]0;PWNED[31mred[0m"
    assert printable("rtl\u202eelif_daer") == "rtlelif_daer"
    assert printable("a\u200eb\u200fc\u061cd\u2066e\u2069f\u202ag") == "abcdefg"
    assert printable("c1 \x9b31m and del \x7f") == "c1 31m and del "
    assert printable("two\tcolumns\nand lines, naïve café ✓") == "two\tcolumns\nand lines, naïve café ✓"
