"""Letters that regular expressions over prose need and Python's `re` has no class for."""

# The capital letters a name or a sentence starts with, as the inside of a character class
# (`[{CAPITAL}]`): A-Z and every upper- or titlecase letter below U+2000 (Latin, Greek, Cyrillic, ...), so
# that "Élodie" and "Øystein" start names and sentences as "Elodie" does.
CAPITAL = "A-Z" + "".join(c for c in map(chr, range(0x80, 0x2000)) if c.isupper() or c.istitle())
