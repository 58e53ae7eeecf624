"""Source-to-source converters, one per language feature, applied in order by transformer.py."""
